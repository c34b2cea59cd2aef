/* deliver_record.c -- a delivery worker's answers into the outbox (deliver_internal.h): each
 * answer is told to its receiver's policy (circuit, Retry-After hold), failed attempts are
 * recorded as they come, due again after their backoff or failed for good, deliveries together
 * in one statement (deliver_record_flush), and failures are logged at most once a minute per
 * receiver. Runs on the worker's thread, with its connection. */
#include <stdio.h>
#include <stdlib.h>

#include "codec.h"
#include "db.h"
#include "db_outbox.h"
#include "db_push.h"
#include "db_webhook.h"
#include "deliver_internal.h"
#include "log.h"
#include "meeting.h"
#include "metrics.h"
#include "outbound.h"
#include "panic.h"
#include "timefmt.h"
#include "trace.h"

/* A webhook's health reads its breaker as this one is. */
_Static_assert(DB_WEBHOOK_OPEN_FAILURES == DELIVER_CIRCUIT_FAILURES, "the health's breaker");
_Static_assert(DB_WEBHOOK_OPEN_MS == DELIVER_CIRCUIT_OPEN_MAX_MS, "the health's breaker");

#define WARN_EVERY_MS 60000 /* failures of one receiver: one log line at most this often */
/* Deliveries, all workers together: one info line at most this often. */
#define DELIVERED_LOG_EVERY_MS 1000

/* Gives back the receiver slot of j, whose answer was taken (a failure) or recorded (a
 * delivery): until then it counts against the receiver's share, so that a kill repeats at most
 * a share per receiver and worker. A receiver that falls below its share here has rows leased
 * for it now, not at the next poll. */
static void
slot_back(struct worker *w, struct job *j, int64_t now)
{
    TOCSIN_ASSERT(j->ten->sending > 0);
    j->ten->sending--;
    if (deliver_policy_answered(&j->rcv->pol))
        w->next_claim_ms = now;
}

/* One info line per delivery, at most one a second over all workers (a steady flow must not
 * flood the log), with how many went unlogged since the last line. Failures have their own lines
 * (deliver_record_warn). */
static void
log_delivered(const struct job *j, int64_t now_ms)
{
    static struct log_throttle delivered = LOG_THROTTLE_INIT(DELIVERED_LOG_EVERY_MS);
    unsigned long unlogged;
    int64_t since_ms;

    if (!log_enabled(LOG_LEVEL_INFO) ||
        !log_throttle_take(&delivered, timefmt_mono_ms(), &unlogged, &since_ms))
        return;
    LOG_INFO("deliver: %s delivery %lld of reminder %lld (meeting %s) delivered %lld ms after its "
             "fire time, attempt %d; %lu more delivered in the last %lld ms",
             meeting_channel_name(j->it.channel), (long long)j->it.id, (long long)j->it.reminder_id,
             j->it.meeting_id, (long long)(now_ms - j->it.fire_at_ms), j->it.attempts + 1, unlogged,
             (long long)since_ms);
}

/* Records the delivered answers waiting in w->answered in one statement and frees their jobs.
 * Overwrites w->ids. */
static void
record_delivered(struct worker *w)
{
    size_t n = w->n_answered;
    struct job **ok = w->answered;
    int64_t mono = timefmt_mono_ms();

    for (size_t i = 0; i < n; i++) {
        TOCSIN_ASSERT(deliver_job_held(w, ok[i]));
        w->ids[i] = ok[i]->it.id;
        w->answered_took[i] = ok[i]->took_ms;
    }
    if (w->db == NULL ||
        db_outbox_delivered(w->db, w->ids, w->answered_status, w->answered_took, n,
                            w->d->instance_id, w->answered_recorded) != DB_ONE_RESULT) {
        deliver_db_lost(w, "deliveries not recorded (they will be sent again)");
    } else {
        /* An answer for a row another worker's answer recorded first was counted there. */
        int64_t now = timefmt_now_ms();
        for (size_t i = 0; i < n; i++) {
            if (!w->answered_recorded[i])
                continue;
            metrics_add(METRIC_DELIVERED, 1);
            metrics_channel_add(ok[i]->it.channel, OUTCOME_SENT, 1);
            metrics_observe_delivery_ms(ok[i]->it.channel, now - ok[i]->it.fire_at_ms);
            log_delivered(ok[i], now);
        }
    }
    deliver_in_flight_sub(n);
    w->n_answered = 0;
    for (size_t i = 0; i < n; i++) {
        slot_back(w, ok[i], mono);
        deliver_job_drop(w, ok[i]);
    }
}

/* One statement for many answers costs PostgreSQL a fraction of one per answer. */
void
deliver_record_flush(struct worker *w, int64_t now, bool force)
{
    if (w->n_answered > 0 &&
        (force || w->n_answered >= DELIVER_RECORD_MAX || outbound_active(w->out) == 0 ||
         now - w->answered_ms >= DELIVER_RECORD_LINGER_MS))
        record_delivered(w);
}

void
deliver_record_failed(struct worker *w, size_t n)
{
    char *errors = codec_string_array(w->texts, n), *bodies = codec_string_array(w->texts2, n);
    size_t failed = 0;

    if (errors == NULL || bodies == NULL || w->db == NULL ||
        db_outbox_failed(w->db, w->owner, w->d->instance_id, w->fails, n, errors, bodies,
                         w->d->max_attempts, &failed) != DB_ONE_RESULT) {
        deliver_db_lost(w, "failed attempts not recorded (they will be tried again)");
    } else {
        size_t recorded = 0;
        for (size_t i = 0; i < n; i++) {
            if (!w->fails[i].recorded)
                continue; /* another worker holds the row now: its answer is the record */
            recorded++;
            metrics_channel_add(w->fail_channels[i],
                                w->fail_final[i] ? OUTCOME_FAILED : OUTCOME_RETRIED, 1);
        }
        metrics_add(METRIC_DELIVERY_FAILED, failed);
        metrics_add(METRIC_DELIVERY_RETRIED, recorded - failed);
    }
    free(errors);
    free(bodies);
}

void
deliver_record_add_failure(struct worker *w, size_t *n, const struct job *j, long status,
                           int64_t retry_after_s, const char *err, bool give_up)
{
    int attempt = j->it.attempts + 1;
    int64_t delay = deliver_policy_retry_ms(w->d->retry_base_ms, attempt,
                                            (double)rand_r(&w->seed) / RAND_MAX, retry_after_s);

    TOCSIN_ASSERT(deliver_job_held(w, j));
    w->fails[*n] = (struct db_outbox_failure){
        j->it.id, (int)status, delay, give_up, false, j->sent_ms != 0 ? j->took_ms : 0};
    w->fail_channels[*n] = j->it.channel;
    w->fail_final[*n] = deliver_policy_final(attempt, w->d->max_attempts, give_up);
    w->texts[*n] = err;
    w->texts2[*n] = j->body_new ? j->it.payload : NULL;
    (*n)++;
}

/* A push service said the subscription is gone (404, 410): it is removed, so no later reminder
 * tries it again. */
static void
target_gone(struct worker *w, const struct job *j)
{
    if (j->it.channel == CHANNEL_PUSH && j->it.target != NULL && w->db != NULL &&
        db_push_subscription_gone(w->db, j->it.target) != DB_ONE_RESULT)
        deliver_db_lost(w, "a gone push subscription not removed (retried at its next reminder)");
}

/* The first failure of a receiver is logged, then at most one line per WARN_EVERY_MS per
 * receiver (and worker) with the count of those not logged, so that a dead receiver is seen
 * without flooding the log. The line carries the delivery's trace id, the one its requests send
 * in traceparent (webhook.c). */
void
deliver_record_warn(const struct job *j, const char *err)
{
    struct receiver *r = j->rcv;
    int64_t now = timefmt_mono_ms();
    char id[OCCURRENCE_ID_MAX], tp[TRACE_PARENT_LEN + 1], trace[TRACE_ID_LEN + 1], more[96] = "";

    if (r->warned && now - r->warned_ms < WARN_EVERY_MS) {
        r->unlogged++;
        return;
    }
    if (r->unlogged > 0)
        snprintf(more, sizeof more, " (and %lu more failures in the last %lld s)", r->unlogged,
                 (long long)(now - r->warned_ms) / 1000);
    meeting_occurrence_id(j->it.reminder_id, j->it.fire_at_ms, id);
    bool traced = trace_parent_for(id, tp) == 0 && trace_parent_parse(tp, trace, NULL) == 0;
    log_context_set(NULL, traced ? trace : NULL);
    LOG_WARN("deliver: %s %s of tenant %lld to receiver %s failed (attempt %d): %s%s",
             meeting_channel_name(j->it.channel), id, (long long)j->it.tenant_id, r->key,
             j->it.attempts + 1, err, more);
    log_context_set(NULL, NULL);
    r->warned = true;
    r->warned_ms = now;
    r->unlogged = 0;
}

/* Tells r's policy of one answer (trouble: it says the receiver itself is in trouble,
 * channel_receiver_trouble) and acts on what changed: the queued rows of a receiver that asked
 * to wait (Retry-After) or whose circuit opened go back due when it may take requests again,
 * without spending attempts. */
static void
circuit(struct worker *w, struct receiver *r, bool trouble, int64_t retry_after_s, int64_t now)
{
    int64_t wait;
    bool was_open = r->pol.open_until_ms != 0;
    enum deliver_policy_change change =
        deliver_policy_note(&r->pol, trouble, retry_after_s * 1000, now, &wait);

    /* tocsin_delivery_circuits_open counts receivers whose circuit is open or half open. */
    if (was_open != (r->pol.open_until_ms != 0))
        metrics_circuits_add(r->channel, was_open ? -1 : 1);
    switch (change) {
    case DELIVER_POLICY_SAME:
        return;
    case DELIVER_POLICY_CLOSED:
        LOG_INFO("deliver: receiver %s answers again; circuit closed", r->key);
        return;
    case DELIVER_POLICY_OPENED:
        LOG_WARN("deliver: receiver %s failed %d times in a row; circuit open for %lld ms", r->key,
                 r->pol.failures, (long long)r->pol.open_ms);
        deliver_lease_release(w, r, wait);
        return;
    case DELIVER_POLICY_HELD:
        LOG_WARN("deliver: receiver %s asked to wait %lld ms (Retry-After); circuit open until "
                 "then",
                 r->key, (long long)(retry_after_s * 1000));
        deliver_lease_release(w, r, wait);
        return;
    }
    TOCSIN_UNREACHABLE("a deliver_policy_change outside its enum");
}

void
deliver_record_answers(struct worker *w, size_t n)
{
    size_t n_fail = 0, n_failed = 0;
    struct job **failed = w->jobs;
    int64_t now = timefmt_mono_ms();

    for (size_t i = 0; i < n; i++) {
        struct job *j = w->done[i].tag;
        TOCSIN_ASSERT(j->sending && deliver_job_held(w, j));
        j->sending = false;
        j->took_ms = now - j->sent_ms;
        /* A success that took most of the timeout counts against the receiver like a failure:
         * a tarpit that answers 2xx just in time would hold its share of slots for ever. */
        bool slow = deliver_policy_slow(j->took_ms, w->d->timeout_ms);
        circuit(w, j->rcv, slow || channel_receiver_trouble(j->it.channel, &w->done[i]),
                w->done[i].retry_after_s, now);
        w->verdicts[i] = channel_verdict(j->it.channel, &w->done[i]);
        channel_explain(j->it.channel, &w->done[i]);
        if (w->verdicts[i] == CHANNEL_DELIVERED) {
            if (w->n_answered == 0)
                w->answered_ms = now;
            w->answered_status[w->n_answered] = (int)w->done[i].status;
            w->answered[w->n_answered++] = j;
            continue;
        }
        slot_back(w, j, now);
        deliver_in_flight_sub(1);
        if (w->verdicts[i] == CHANNEL_GONE)
            target_gone(w, j);
        deliver_record_warn(j, w->done[i].err);
        deliver_record_add_failure(w, &n_fail, j, w->done[i].status, w->done[i].retry_after_s,
                                   w->done[i].err, w->verdicts[i] != CHANNEL_RETRY);
        failed[n_failed++] = j;
    }
    if (n_fail > 0)
        deliver_record_failed(w, n_fail);
    for (size_t i = 0; i < n_failed; i++)
        deliver_job_drop(w, failed[i]);
}
