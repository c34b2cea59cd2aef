/* deliver.c -- the delivery workers of deliver.h. Each worker runs one loop: renew its lease when
 * due, load the rows it was given or can lease for the receivers that have room (outbox rows of
 * full or broken receivers are left to wait in PostgreSQL), build the bodies of rows sent for the
 * first time (their meetings in one round trip), start requests up to each receiver's share, wait
 * on libcurl for answers, record failed attempts at once and deliveries in groups
 * (flush_delivered). */
#include "deliver.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "channel.h"
#include "codec.h"
#include "db.h"
#include "db_outbox.h"
#include "db_push.h"
#include "db_series.h"
#include "log.h"
#include "metrics.h"
#include "outbound.h"
#include "panic.h"
#include "timefmt.h"
#include "trace.h"

_Static_assert(DELIVER_RENEW_MS + DB_OUTBOX_RENEW_MARGIN_MS < DELIVER_LEASE_MS,
               "a renewal on time finds its lease alive");
/* build_bodies reads the meetings of one lease's rows in one statement. */
_Static_assert(DB_OUTBOX_CLAIM_MAX <= DB_GET_MANY_MAX, "a lease's meetings are one get_many");
#define RECEIVER_BUCKETS 1024
/* A receiver with nothing held, a closed circuit and no failures in a row is forgotten after
 * this long idle. */
#define RECEIVER_IDLE_MS 60000
#define DB_RETRY_MS 1000    /* after a failed connect, the next try waits this */
#define WARN_EVERY_MS 60000 /* failures of one receiver: one log line at most this often */
#define STOP_SLACK_MS 1000  /* stopping: in-flight requests get their timeout plus this */
#define STOP_POLL_MS 100    /* stopping: the wait for answers wakes this often to renew */

/* A receiver's key: a webhook id, a push service's origin (the longest) or "smtp". It must hold
 * a whole origin such as https://updates.push.services.mozilla.com: a cut key matches no
 * receiver, so each of its rows would make a new one and its share and circuit would never
 * apply. */
#define RECEIVER_KEY_MAX WEBPUSH_ORIGIN_MAX
_Static_assert(RECEIVER_KEY_MAX >= MEETING_ID_LEN, "a webhook id is a receiver key");

/* A receiver: the unit of isolation (a webhook, a push service or the SMTP server). */
struct receiver {
    char key[RECEIVER_KEY_MAX + 1];
    /* The channel of its rows: the label it is counted under in tocsin_delivery_circuits_open. */
    unsigned channel;
    size_t share; /* requests it may have in flight (deliver_opts) */
    size_t hold;  /* of its rows held, how many take the worker's slots (hold_cap) */
    size_t sending, queued;
    struct job *head, *tail; /* queued jobs, oldest first */
    int failures;            /* failed attempts in a row (channel_receiver_trouble) */
    int64_t open_until_ms;   /* circuit open until (monotonic); 0 = closed, passed = half open */
    int64_t open_ms;         /* how long it opened last */
    int64_t hold_until_ms; /* Retry-After: nothing before (monotonic), whatever answers meanwhile */
    bool probing;          /* half open: one request decides */
    int64_t idle_since_ms;
    bool warned; /* a failure was logged, at warned_ms (monotonic) */
    int64_t warned_ms;
    unsigned long unlogged;      /* failures since that line, counted in the next */
    bool ready;                  /* on the worker's ready list */
    struct receiver *next_ready; /* receivers with queued jobs */
    struct receiver *next;       /* hash chain */
};

/* A leased row, queued for its receiver or in flight. */
struct job {
    struct db_outbox_item it;
    struct receiver *rcv;
    bool sending;
    bool body_new;   /* built by this worker: stored with a failed attempt's record */
    const char *why; /* when the payload could not be built: why the row gives up */
    size_t slot;     /* index in the worker's held array */
    struct channel_req req;
    struct job *next; /* receiver queue */
};

struct worker {
    struct deliver *d;
    pthread_t thread;
    int index;
    bool started;
    char owner[DB_OUTBOX_OWNER_MAX + 1]; /* its name while registered */
    bool registered;                     /* its lease row exists and was live at renewed_ms */
    int64_t token;                       /* of the last name it registered */
    /* What the dispatch thread sees (deliver_owner_for): the name under pub_mu, whether it may be
     * given rows, and about how many it was given and has not loaded yet. */
    pthread_mutex_t pub_mu;
    char pub_owner[DB_OUTBOX_OWNER_MAX + 1];
    atomic_bool live;
    atomic_size_t given;
    struct db *db;
    int64_t db_retry_ms;
    bool db_down;
    struct outbound *out;
    struct push_keys *keys; /* the tenants' VAPID keys and JWTs */
    atomic_bool woken;
    unsigned seed;
    int64_t renewed_ms, next_claim_ms;
    int64_t renew_retry_ms; /* after a failed renewal, the next is not tried before this */
    int64_t orphans_ms;     /* when its lease statement last looked for orphans */
    struct job **held;      /* the rows it holds: n_held of max_held (held_max) */
    size_t n_held, max_held;
    struct receiver *receivers[RECEIVER_BUCKETS];
    struct receiver *ready; /* receivers with queued jobs */
    /* Scratch of one round: max_held entries each, claimed DB_OUTBOX_CLAIM_MAX. */
    struct db_outbox_item *claimed;
    struct outbound_done *done;
    int64_t *ids;
    const char **texts, **texts2;
    struct db_outbox_failure *fails;
    unsigned *fail_channels; /* the channel of each failure */
    bool *fail_final;        /* whether it fails the row for good */
    struct job **jobs;
    enum channel_verdict *verdicts;
    /* Delivered answers not recorded yet (max_held entries), the oldest taken at answered_ms:
     * flush_delivered records them together. Their jobs keep their slots until then. */
    struct job **answered;
    int *answered_status;
    bool *answered_recorded; /* which of them the statement recorded (not another's answer) */
    size_t n_answered;
    int64_t answered_ms;
};

/* Requests in flight in this process, for /metrics: sent and not answered, or answered and not
 * recorded yet (what a kill would send again). */
static atomic_size_t in_flight;

struct deliver {
    atomic_bool stop;
    char *database_url, *instance_id;
    struct channel_opts channel; /* borrowed strings: the configuration outlives delivery */
    int64_t retry_base_ms, timeout_ms;
    int max_attempts, concurrency, per_receiver, per_push_service;
    int n_workers;
    struct worker *workers;
};

int64_t
deliver_backoff_ms(int64_t base_ms, int attempt, double r)
{
    int64_t d = base_ms;

    for (int i = 1; i < attempt && d < DELIVER_BACKOFF_MAX_MS; i++)
        d *= 2;
    if (d > DELIVER_BACKOFF_MAX_MS)
        d = DELIVER_BACKOFF_MAX_MS;
    return d + (int64_t)((double)d * DELIVER_JITTER_PCT / 100.0 * (2.0 * r - 1.0));
}

/* ---- receivers ----------------------------------------------------------------------------- */

static size_t
bucket(const char *key)
{
    uint64_t h = 14695981039346656037ULL;

    for (; *key != '\0'; key++)
        h = (h ^ (unsigned char)*key) * 1099511628211ULL; /* FNV-1a */
    return h % RECEIVER_BUCKETS;
}

/* A worker's slots (TOCSIN_DELIVERY_CONCURRENCY) bound the rows it holds, but one receiver's rows
 * take at most its hold cap of them: a fraction of the slots, or its share when larger. A lease
 * may bring one receiver more rows than that (a burst the fire statement gave this worker, read
 * in id order); they wait in its queue without a slot, and it is left out of leases while it
 * holds its share, so a slow receiver's backlog never keeps the worker from other receivers'
 * rows. Cutting the lease per receiver instead cost PostgreSQL each lease's whole window of given
 * rows (twice its CPU in a 50,000 burst). With the defaults (256 slots, shares 16 and 64) a
 * receiver takes 64 slots at most. */
#define HOLD_DIVISOR 4

static size_t
hold_cap(int concurrency, size_t share)
{
    size_t part = (size_t)concurrency / HOLD_DIVISOR;

    return share > part ? share : part > 0 ? part : 1;
}

/* The rows a worker may hold: its slots, and rows beyond their receivers' hold caps. Slots taken
 * count every receiver at its cap at most, and they never pass the slots, so fewer than
 * HOLD_DIVISOR * 2 receivers hold more than their cap at once (a cap is at least a
 * HOLD_DIVISOR-th of the slots, rounded down), each with at most one lease's rows beyond it: it is
 * left out of leases from then on. A bound, not a guess: claim never asks for more than fits. */
static size_t
held_max(int concurrency)
{
    return (size_t)concurrency + (size_t)HOLD_DIVISOR * 2 * DB_OUTBOX_CLAIM_MAX;
}

/* The receiver of a row: its key names one channel's receiver (a push service's origin is never
 * a webhook id), so the share set when the key is first seen holds for all its rows. */
static struct receiver *
receiver_get(struct worker *w, const struct db_outbox_item *it)
{
    struct receiver **r = &w->receivers[bucket(it->receiver)];

    while (*r != NULL && strcmp((*r)->key, it->receiver) != 0)
        r = &(*r)->next;
    if (*r == NULL && (*r = calloc(1, sizeof **r)) != NULL) {
        snprintf((*r)->key, sizeof(*r)->key, "%s", it->receiver);
        (*r)->channel = it->channel;
        (*r)->share =
            (size_t)(it->channel == CHANNEL_PUSH ? w->d->per_push_service : w->d->per_receiver);
        (*r)->hold = hold_cap(w->d->concurrency, (*r)->share);
    }
    return *r;
}

static bool
circuit_open(const struct receiver *r, int64_t now)
{
    return now < r->hold_until_ms || (r->open_until_ms != 0 && now < r->open_until_ms);
}

/* Room for one more request now: a closed circuit under the receiver's share, or a half-open one
 * with no probe out yet. */
static bool
may_send(const struct receiver *r, int64_t now)
{
    if (circuit_open(r, now))
        return false;
    if (r->open_until_ms != 0) /* half open */
        return !r->probing && r->sending == 0;
    return r->sending < r->share;
}

static bool
left_out(const struct receiver *r, int64_t now)
{
    return circuit_open(r, now) || r->sending + r->queued >= (r->open_until_ms != 0 ? 1 : r->share);
}

/* Receivers whose rows must not be leased now: a full share, an open circuit, a probe out. Those
 * holding their hold cap come first: past DB_OUTBOX_EXCLUDE_MAX the others may be leased again,
 * never they. Sets *beyond to the rows held beyond the receivers' caps (they take no slot). */
static size_t
excluded(struct worker *w, int64_t now, const char **out, size_t max, size_t *beyond)
{
    size_t n = 0;

    *beyond = 0;
    for (size_t b = 0; b < RECEIVER_BUCKETS; b++)
        for (struct receiver *r = w->receivers[b]; r != NULL; r = r->next) {
            size_t h = r->sending + r->queued;
            if (h > r->hold)
                *beyond += h - r->hold;
            if (h >= r->hold && n < max)
                out[n++] = r->key;
        }
    for (size_t b = 0; b < RECEIVER_BUCKETS && n < max; b++)
        for (struct receiver *r = w->receivers[b]; r != NULL && n < max; r = r->next)
            if (r->sending + r->queued < r->hold && left_out(r, now))
                out[n++] = r->key; /* open, half open with a probe at hand, or a full share */
    return n;
}

static void
forget_idle(struct worker *w, int64_t now)
{
    for (size_t b = 0; b < RECEIVER_BUCKETS; b++) {
        struct receiver **r = &w->receivers[b];
        while (*r != NULL) {
            struct receiver *x = *r;
            bool idle = x->sending == 0 && x->queued == 0 && x->open_until_ms == 0 &&
                        x->failures == 0 && now >= x->hold_until_ms &&
                        now - x->idle_since_ms > RECEIVER_IDLE_MS;
            if (idle) {
                *r = x->next;
                free(x);
            } else {
                r = &x->next;
            }
        }
    }
}

/* ---- jobs ------------------------------------------------------------------------------------ */

static void
enqueue(struct worker *w, struct job *j)
{
    struct receiver *r = j->rcv;

    j->next = NULL;
    if (r->tail != NULL)
        r->tail->next = j;
    else
        r->head = j;
    r->tail = j;
    r->queued++;
    if (!r->ready) {
        r->ready = true;
        r->next_ready = w->ready;
        w->ready = r;
    }
}

static struct job *
dequeue(struct receiver *r)
{
    struct job *j = r->head;

    if (j == NULL)
        return NULL;
    r->head = j->next;
    if (r->head == NULL)
        r->tail = NULL;
    r->queued--;
    return j;
}

static void
job_drop(struct worker *w, struct job *j)
{
    struct job *last = w->held[--w->n_held];

    w->held[j->slot] = last;
    last->slot = j->slot;
    if (j->rcv != NULL && j->rcv->sending + j->rcv->queued == 0)
        j->rcv->idle_since_ms = timefmt_mono_ms();
    db_outbox_item_fini(&j->it);
    free(j);
}

/* ---- recording --------------------------------------------------------------------------- */

static void
db_lost(struct worker *w, const char *what)
{
    if (!w->db_down)
        LOG_WARN("deliver: %s: %s", what, w->db ? db_errmsg(w->db) : "no database");
    w->db_down = true;
}

/* A statement worked again after db_lost. */
static void
db_back(struct worker *w)
{
    if (w->db_down)
        LOG_INFO("deliver: database available again");
    w->db_down = false;
}

/* Gives back the receiver slot of j, whose answer was taken (a failure) or recorded (a
 * delivery): until then it counts against the receiver's share, so that a kill repeats at most
 * a share per receiver and worker. */
static void
slot_back(struct worker *w, struct job *j, int64_t now)
{
    /* A receiver whose rows filled its share (sent and queued: excluded from leases) has a slot
     * again: rows for it are leased now, not at the next poll, or the slot idles until then. The
     * total falls by one per answer (a queued row that starts moves within it), so it passes the
     * share exactly here. */
    if (j->rcv->sending-- + j->rcv->queued == j->rcv->share)
        w->next_claim_ms = now;
}

/* Records the delivered answers waiting in w->answered in one statement and frees their jobs.
 * Overwrites w->ids. */
static void
record_delivered(struct worker *w)
{
    size_t n = w->n_answered;
    struct job **ok = w->answered;
    int64_t mono = timefmt_mono_ms();

    for (size_t i = 0; i < n; i++)
        w->ids[i] = ok[i]->it.id;
    if (w->db == NULL || db_outbox_delivered(w->db, w->ids, w->answered_status, n,
                                             w->answered_recorded) != DB_ONE_RESULT) {
        db_lost(w, "deliveries not recorded (they will be sent again)");
    } else {
        /* An answer for a row another worker's answer recorded first was counted there. */
        int64_t now = timefmt_now_ms();
        for (size_t i = 0; i < n; i++) {
            if (!w->answered_recorded[i])
                continue;
            metrics_add(METRIC_DELIVERED, 1);
            metrics_channel_add(ok[i]->it.channel, OUTCOME_SENT, 1);
            metrics_observe_delivery_ms(ok[i]->it.channel, now - ok[i]->it.fire_at_ms);
        }
    }
    atomic_fetch_sub(&in_flight, n);
    w->n_answered = 0;
    for (size_t i = 0; i < n; i++) {
        slot_back(w, ok[i], mono);
        job_drop(w, ok[i]);
    }
}

/* Records the delivered answers once enough wait, the oldest has waited long enough or no
 * other answer can join them (nothing in flight), and always when force: one statement for many
 * answers costs PostgreSQL a fraction of one per answer. */
static void
flush_delivered(struct worker *w, int64_t now, bool force)
{
    if (w->n_answered > 0 &&
        (force || w->n_answered >= DELIVER_RECORD_MAX || outbound_active(w->out) == 0 ||
         now - w->answered_ms >= DELIVER_RECORD_LINGER_MS))
        record_delivered(w);
}

/* Records the failed attempts w->fails[0..n) (reasons and bodies in texts/texts2) in one
 * statement. */
static void
record_failed(struct worker *w, size_t n)
{
    char *errors = codec_string_array(w->texts, n), *bodies = codec_string_array(w->texts2, n);
    size_t failed = 0;

    if (errors == NULL || bodies == NULL || w->db == NULL ||
        db_outbox_failed(w->db, w->owner, w->fails, n, errors, bodies, w->d->max_attempts,
                         &failed) != DB_ONE_RESULT) {
        db_lost(w, "failed attempts not recorded (they will be tried again)");
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

/* Queues one failed attempt of j into the round's failures. */
static void
add_failure(struct worker *w, size_t *n, const struct job *j, long status, int64_t retry_after_s,
            const char *err, bool give_up)
{
    int64_t delay = deliver_backoff_ms(w->d->retry_base_ms, j->it.attempts + 1,
                                       (double)rand_r(&w->seed) / RAND_MAX);

    if (retry_after_s * 1000 > delay) /* the receiver asked for a later retry */
        delay = retry_after_s * 1000;
    w->fails[*n] = (struct db_outbox_failure){j->it.id, (int)status, delay, give_up, false};
    w->fail_channels[*n] = j->it.channel;
    w->fail_final[*n] = give_up || j->it.attempts + 1 >= w->d->max_attempts;
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
        db_lost(w, "a gone push subscription not removed (retried at its next reminder)");
}

/* Logs a failed attempt of j at warn: the first of its receiver, then at most one line per
 * WARN_EVERY_MS per receiver (and worker) with the count of those not logged, so that a dead
 * receiver is seen without flooding the log. The line carries the delivery's trace id, the one
 * its requests send in traceparent (webhook.c). */
static void
warn_failure(const struct job *j, const char *err)
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
             channel_name(j->it.channel), id, (long long)j->it.tenant_id, r->key,
             j->it.attempts + 1, err, more);
    log_context_set(NULL, NULL);
    r->warned = true;
    r->warned_ms = now;
    r->unlogged = 0;
}

/* ---- circuits ----------------------------------------------------------------------------- */

/* Gives the receiver's queued rows back, due when its circuit may close: no attempt spent. */
static void
release_queued(struct worker *w, struct receiver *r, int64_t delay_ms)
{
    size_t n = 0;
    struct job *j;

    while ((j = dequeue(r)) != NULL) {
        w->ids[n++] = j->it.id;
        job_drop(w, j);
    }
    if (n > 0 && w->db != NULL &&
        db_outbox_release(w->db, w->owner, w->ids, n, delay_ms) != DB_ONE_RESULT)
        db_lost(w, "rows not given back (still this worker's: its next lease reads them again)");
}

/* Accounts one answer (or its absence) of receiver r: broken when it says the receiver itself
 * is in trouble (channel_receiver_trouble). A success closes the circuit but ends no Retry-After
 * hold: it answers a request sent before the receiver asked to be left alone. */
static void
circuit_note(struct worker *w, struct receiver *r, bool broken, int64_t now)
{
    if (!broken) {
        if (r->open_until_ms != 0) {
            LOG_INFO("deliver: receiver %s answers again; circuit closed", r->key);
            metrics_circuits_add(r->channel, -1);
        }
        r->failures = 0;
        r->open_until_ms = r->open_ms = 0;
        r->probing = false;
        return;
    }
    r->failures++;
    if (!r->probing && (r->open_until_ms != 0 || r->failures < DELIVER_CIRCUIT_FAILURES))
        return;
    r->open_ms = r->probing ? r->open_ms * 2 : DELIVER_CIRCUIT_OPEN_MS;
    if (r->open_ms < DELIVER_CIRCUIT_OPEN_MS) /* after a shorter Retry-After hold */
        r->open_ms = DELIVER_CIRCUIT_OPEN_MS;
    if (r->open_ms > DELIVER_CIRCUIT_OPEN_MAX_MS)
        r->open_ms = DELIVER_CIRCUIT_OPEN_MAX_MS;
    if (r->open_until_ms == 0)
        metrics_circuits_add(r->channel, 1);
    r->open_until_ms = now + r->open_ms;
    r->probing = false;
    LOG_WARN("deliver: receiver %s failed %d times in a row; circuit open for %lld ms", r->key,
             r->failures, (long long)r->open_ms);
    release_queued(w, r, r->open_ms);
}

/* A receiver in trouble that said when to come back (Retry-After on a 429 or 5xx) gets nothing
 * from this worker until then, even if an answer to an earlier request succeeds meanwhile: its
 * circuit opens for that long at least, its queued rows go back due when it may close without
 * spending attempts, and the first request after it is the probe. Delaying only the row that got
 * the answer sent the rest of the queue into the same refusal. Called before circuit_note, which
 * then leaves the open circuit as it is: the other way round, the failure that opened the circuit
 * gave the queue back due in DELIVER_CIRCUIT_OPEN_MS, before the time asked for. */
static void
circuit_hold_off(struct worker *w, struct receiver *r, int64_t ms, int64_t now)
{
    if (ms <= 0 || r->hold_until_ms >= now + ms)
        return;
    r->hold_until_ms = now + ms;
    if (r->open_until_ms == 0)
        metrics_circuits_add(r->channel, 1);
    if (r->open_until_ms < now + ms)
        r->open_until_ms = now + ms;
    if (r->open_ms < ms)
        r->open_ms = ms;
    r->probing = false;
    LOG_WARN("deliver: receiver %s asked to wait %lld ms (Retry-After); circuit open until then",
             r->key, (long long)ms);
    release_queued(w, r, r->open_until_ms - now);
}

/* ---- one round ------------------------------------------------------------------------------ */

/* Takes the answers done[0..n): failed attempts are recorded in one statement and their jobs
 * freed; deliveries wait in w->answered for flush_delivered. */
static void
take_answers(struct worker *w, size_t n)
{
    size_t n_fail = 0, n_failed = 0;
    struct job **failed = w->jobs;
    int64_t now = timefmt_mono_ms();

    for (size_t i = 0; i < n; i++) {
        struct job *j = w->done[i].tag;
        j->sending = false;
        bool trouble = channel_receiver_trouble(j->it.channel, &w->done[i]);
        if (trouble)
            circuit_hold_off(w, j->rcv, w->done[i].retry_after_s * 1000, now);
        circuit_note(w, j->rcv, trouble, now);
        w->verdicts[i] = channel_verdict(j->it.channel, &w->done[i]);
        if (w->verdicts[i] == CHANNEL_DELIVERED) {
            if (w->n_answered == 0)
                w->answered_ms = now;
            w->answered_status[w->n_answered] = (int)w->done[i].status;
            w->answered[w->n_answered++] = j;
            continue;
        }
        slot_back(w, j, now);
        atomic_fetch_sub(&in_flight, 1);
        if (w->verdicts[i] == CHANNEL_GONE)
            target_gone(w, j);
        warn_failure(j, w->done[i].err);
        add_failure(w, &n_fail, j, w->done[i].status, w->done[i].retry_after_s, w->done[i].err,
                    w->verdicts[i] != CHANNEL_RETRY);
        failed[n_failed++] = j;
    }
    if (n_fail > 0)
        record_failed(w, n_fail);
    for (size_t i = 0; i < n_failed; i++)
        job_drop(w, failed[i]);
}

/* Writes a push job's VAPID Authorization (its tenant's key pair, made on first use). 0, or -1
 * with the reason in err and *give_up set when the endpoint can never be signed for. */
static int
authorize_push(struct worker *w, struct job *j, char err[OUTBOUND_ERR_MAX], bool *give_up)
{
    char audience[WEBPUSH_ORIGIN_MAX + 1];

    if (channel_push_audience(&j->it, audience) != 0) {
        snprintf(err, OUTBOUND_ERR_MAX, "push endpoint has no usable origin");
        *give_up = true;
        return -1;
    }
    switch (push_keys_authorization(w->keys, w->db, j->it.tenant_id, audience,
                                    timefmt_now_ms() / 1000, j->req.authorization)) {
    case DB_ONE_RESULT:
        return 0;
    case DB_NO_RESULTS:
    case DB_HARD_ERROR:
        snprintf(err, OUTBOUND_ERR_MAX, "VAPID key could not be made or used");
        return -1;
    case DB_SOFT_ERROR:
        snprintf(err, OUTBOUND_ERR_MAX, "database unavailable reading the VAPID key");
        return -1;
    }
    TOCSIN_UNREACHABLE("a db_status outside its enum");
}

/* Starts j's request. false when it could not start: the attempt is recorded as failed and j is
 * freed. */
static bool
start(struct worker *w, struct job *j)
{
    char err[OUTBOUND_ERR_MAX];
    bool give_up = false;

    if ((j->it.channel != CHANNEL_PUSH || authorize_push(w, j, err, &give_up) == 0) &&
        channel_start(&w->d->channel, w->out, &j->it, &j->req, j, err, &give_up) == 0) {
        j->sending = true;
        j->rcv->sending++;
        atomic_fetch_add(&in_flight, 1);
        return true;
    }
    size_t n = 0;
    warn_failure(j, err);
    add_failure(w, &n, j, 0, 0, err, give_up);
    record_failed(w, n);
    job_drop(w, j);
    return false;
}

/* Starts what the receivers on the ready list have room for. */
static void
start_ready(struct worker *w, int64_t now)
{
    struct receiver **link = &w->ready;

    while (*link != NULL) {
        struct receiver *r = *link;
        while (r->queued > 0 && may_send(r, now)) {
            /* Half open: the first request that goes out decides. A row that cannot even start
             * (its subscription's keys are bad, say) says nothing of the receiver: the next
             * one is the probe. */
            bool probe = r->open_until_ms != 0;
            if (start(w, dequeue(r)) && probe)
                r->probing = true;
        }
        if (r->queued == 0) {
            r->ready = false;
            *link = r->next_ready;
        } else {
            link = &r->next_ready;
        }
    }
}

/* The payload of one new job from its meeting m; people[x] is m's participants, parsed on the
 * first row that asks (push and email rows do, webhook rows not). */
static void
build_body(struct worker *w, struct job *j, const struct meeting *m, struct codec_people **people,
           int64_t now)
{
    if (m->id[0] == '\0') {
        j->why = "meeting deleted before delivery";
        return;
    }
    if (*people == NULL && j->it.channel != CHANNEL_WEBHOOK)
        *people = codec_people_parse(m);
    if ((j->it.payload = channel_payload(&w->d->channel, &j->it, m, *people, now, &j->why)) != NULL)
        j->body_new = true;
}

/* Builds the payloads of the new jobs j[0..n) that have none from their meetings as the API
 * shows them now, in one round trip: a reminder of a series' occurrence sees that occurrence
 * (db_meeting_get_many_for). The rows of one reminder share its meeting, read and parsed once. A
 * job whose payload cannot be built keeps none and says why (its meeting is gone, ...). 0, or -1
 * on database trouble. */
static int
build_bodies(struct worker *w, struct job **j, size_t n)
{
    const char **ids = w->texts; /* scratch: before any failure is queued */
    int64_t *rids = w->ids;      /* scratch, as texts */
    struct db_meeting_list ms;
    struct codec_people *people[DB_OUTBOX_CLAIM_MAX] = {0};
    size_t k = 0, at[DB_OUTBOX_CLAIM_MAX];
    int64_t now = timefmt_now_ms();

    for (size_t i = 0; i < n; i++) /* n <= DB_OUTBOX_CLAIM_MAX: one lease */
        if (j[i]->it.payload == NULL) {
            ids[k] = j[i]->it.meeting_id;
            rids[k++] = j[i]->it.reminder_id;
        }
    if (k == 0)
        return 0;
    if (db_meeting_get_many_for(w->db, ids, rids, k, &ms, at) != DB_ONE_RESULT)
        return -1;
    for (size_t i = 0, x = 0; i < n; i++, x++) {
        if (j[i]->it.payload != NULL) {
            x--;
            continue;
        }
        build_body(w, j[i], &ms.m[at[x]], &people[at[x]], now);
    }
    for (size_t d = 0; d < ms.n; d++)
        codec_people_free(people[d]);
    db_meeting_list_fini(&ms);
    return 0;
}

static const char *
target_gone_reason(unsigned channel)
{
    return channel == CHANNEL_PUSH ? "push subscription removed" : "webhook deleted";
}

/* Turns leased rows into jobs: rows whose target or meeting is gone, or whose payload cannot be
 * built, fail for good; the others are queued for their receivers. */
static void
take_rows(struct worker *w, size_t n)
{
    struct job **fresh = w->jobs;
    size_t k = 0, n_fail = 0;

    for (size_t i = 0; i < n; i++) {
        struct job *j = calloc(1, sizeof *j);
        if (j == NULL || (j->rcv = receiver_get(w, &w->claimed[i])) == NULL) {
            free(j);
            db_outbox_item_fini(&w->claimed[i]); /* still its: the next lease brings it back */
            continue;
        }
        j->it = w->claimed[i];
        j->slot = w->n_held;
        w->held[w->n_held++] = j;
        fresh[k++] = j;
    }
    if (build_bodies(w, fresh, k) != 0) {
        db_lost(w, "cannot read the meetings of leased rows (given back)");
        for (size_t i = 0; i < k; i++)
            w->ids[i] = fresh[i]->it.id;
        if (db_outbox_release(w->db, w->owner, w->ids, k, 0) != DB_ONE_RESULT)
            db_lost(w,
                    "rows not given back (still this worker's: its next lease reads them again)");
        for (size_t i = 0; i < k; i++)
            job_drop(w, fresh[i]);
        return;
    }
    struct job *gone[DB_OUTBOX_CLAIM_MAX];
    size_t n_gone = 0;
    for (size_t i = 0; i < k; i++) {
        struct job *j = fresh[i];
        const char *why = j->it.target_gone       ? target_gone_reason(j->it.channel)
                          : j->it.payload == NULL ? j->why
                                                  : NULL;
        if (why == NULL) {
            enqueue(w, j);
            continue;
        }
        add_failure(w, &n_fail, j, 0, 0, why, true);
        gone[n_gone++] = j;
    }
    if (n_fail > 0)
        record_failed(w, n_fail);
    for (size_t i = 0; i < n_gone; i++)
        job_drop(w, gone[i]);
}

/* The slots not taken: rows held beyond their receivers' hold caps take none. */
static size_t
free_slots(const struct worker *w, size_t beyond)
{
    size_t taken = w->n_held - beyond;

    return taken < (size_t)w->d->concurrency ? (size_t)w->d->concurrency - taken : 0;
}

/* Leases what the worker has room for. Returns whether the statement filled the room it asked
 * for: only then may more be waiting (rows given later wake the worker). */
static bool
claim(struct worker *w, int64_t now)
{
    const char *exclude[DB_OUTBOX_EXCLUDE_MAX];
    size_t beyond, n = 0;
    size_t n_ex = excluded(w, now, exclude, DB_OUTBOX_EXCLUDE_MAX, &beyond);
    size_t room = free_slots(w, beyond);

    if (room > w->max_held - w->n_held)
        room = w->max_held - w->n_held;
    if (room > DB_OUTBOX_CLAIM_MAX)
        room = DB_OUTBOX_CLAIM_MAX;
    if (room == 0 || !w->registered)
        return false;
    for (size_t i = 0; i < w->n_held; i++)
        w->ids[i] = w->held[i]->it.id;
    /* Orphans at most once a poll: a dead replica's rows wait DELIVER_POLL_MS at most for some
     * worker's look, and a worker that leases often does not probe every owner each time. */
    bool orphans = now - w->orphans_ms >= DELIVER_POLL_MS;
    if (orphans)
        w->orphans_ms = now;
    if (db_outbox_claim(w->db, w->owner, orphans, exclude, n_ex, w->ids, w->n_held, w->claimed,
                        room, &n) != DB_ONE_RESULT) {
        db_lost(w, "cannot lease outbox rows");
        return false;
    }
    db_back(w);
    size_t given = 0;
    for (size_t i = 0; i < n; i++)
        given += w->claimed[i].given;
    for (size_t was = atomic_load(&w->given);
         !atomic_compare_exchange_weak(&w->given, &was, was > given ? was - given : 0);)
        ;
    take_rows(w, n);
    return n == room;
}

/* Drops the rows queued and not sent: their lease may be gone, so another worker may send them. */
static void
drop_queued(struct worker *w)
{
    for (struct receiver *r = w->ready; r != NULL; r = r->next_ready) {
        struct job *j;
        while ((j = dequeue(r)) != NULL)
            job_drop(w, j);
    }
}

/* Makes the name the dispatch thread gives rows to (NULL: none, no rows given). */
static void
publish(struct worker *w, const char *owner)
{
    pthread_mutex_lock(&w->pub_mu);
    snprintf(w->pub_owner, sizeof w->pub_owner, "%s", owner != NULL ? owner : "");
    atomic_store(&w->given, 0);
    atomic_store(&w->live, owner != NULL);
    pthread_mutex_unlock(&w->pub_mu);
}

/* Registers the worker under a new name: the rows of an earlier name are orphans once it lapsed,
 * taken by whoever looks first (this worker included). */
static void
register_owner(struct worker *w, int64_t now)
{
    int64_t token = timefmt_now_ms();

    w->token = token > w->token ? token : w->token + 1;
    snprintf(w->owner, sizeof w->owner, "%s/%d/%lld", w->d->instance_id, w->index,
             (long long)w->token);
    if (db_outbox_owner_register(w->db, w->owner, DELIVER_LEASE_MS) != DB_ONE_RESULT) {
        db_lost(w, "cannot register a delivery lease");
        return;
    }
    w->registered = true;
    w->renewed_ms = now;
    publish(w, w->owner);
}

/* Renews the worker's lease every DELIVER_RENEW_MS, and before anything else after a statement
 * failed (the connection may have been replaced, and with it the backend the lease names): one
 * row, however many rows it holds. When it had lapsed (the worker stalled for DELIVER_LEASE_MS,
 * or its backend is not the one that took it), the rows it holds may be another worker's now:
 * the queued ones are dropped and it starts again under a new name. When the renewal fails, the
 * queued rows are dropped too, and no rows are given to it until it works again. */
static void
renew(struct worker *w, int64_t now)
{
    if (!w->registered) {
        register_owner(w, now);
        return;
    }
    if ((now - w->renewed_ms < DELIVER_RENEW_MS && !w->db_down) || now < w->renew_retry_ms)
        return;
    switch (db_outbox_owner_renew(w->db, w->owner, DELIVER_LEASE_MS)) {
    case DB_ONE_RESULT:
        w->renewed_ms = now;
        w->renew_retry_ms = 0;
        db_back(w);
        if (!atomic_load(&w->live)) /* held back while the renewals failed */
            publish(w, w->owner);
        return;
    case DB_NO_RESULTS:
        LOG_WARN("deliver: the lease of %s lapsed or its connection was replaced; its rows go to "
                 "whoever takes them first",
                 w->owner);
        publish(w, NULL);
        drop_queued(w);
        w->registered = false;
        register_owner(w, now);
        return;
    case DB_SOFT_ERROR:
    case DB_HARD_ERROR:
        break;
    }
    db_lost(w, "cannot renew the delivery lease; dropping the rows not sent yet");
    w->renew_retry_ms = now + DELIVER_RENEW_RETRY_MS;
    if (now - w->renewed_ms >= DELIVER_LEASE_MS)
        publish(w, NULL);
    drop_queued(w);
}

static bool
connected(struct worker *w, int64_t now)
{
    char err[DB_ERR_MAX];

    if (w->db != NULL)
        return true;
    if (now < w->db_retry_ms)
        return false;
    if ((w->db = db_open_in_order(w->d->database_url, err, sizeof err)) == NULL) {
        if (!w->db_down)
            LOG_WARN("deliver: database unavailable, retrying: %s", err);
        w->db_down = true;
        w->db_retry_ms = now + DB_RETRY_MS;
    }
    return w->db != NULL;
}

/* How long the loop may wait for an answer before it has other work. */
static int64_t
wait_ms(struct worker *w, int64_t now)
{
    int64_t until = w->next_claim_ms;

    if (w->registered) {
        int64_t renew_at = w->renewed_ms + DELIVER_RENEW_MS;
        if (renew_at < w->renew_retry_ms)
            renew_at = w->renew_retry_ms;
        if (renew_at < until)
            until = renew_at;
    }
    if (w->n_answered > 0 && w->answered_ms + DELIVER_RECORD_LINGER_MS < until)
        until = w->answered_ms + DELIVER_RECORD_LINGER_MS;
    return until > now ? until - now : 0;
}

static void
round_of(struct worker *w)
{
    int64_t now = timefmt_mono_ms();
    bool woken = atomic_exchange(&w->woken, false);

    if (connected(w, now)) {
        renew(w, now);
        if (woken || now >= w->next_claim_ms) {
            bool more = claim(w, now);
            w->next_claim_ms = more ? now : now + DELIVER_POLL_MS;
        }
    } else {
        w->next_claim_ms = now + DELIVER_POLL_MS;
    }
    start_ready(w, now);
    size_t n =
        outbound_run(w->out, wait_ms(w, timefmt_mono_ms()), w->done, (size_t)w->d->concurrency);
    if (n > 0)
        take_answers(w, n);
    flush_delivered(w, timefmt_mono_ms(), false);
}

/* Stopping: the queued rows go back at once, the requests in flight finish (bounded) and are
 * recorded. */
static void
wind_down(struct worker *w)
{
    int64_t deadline = timefmt_mono_ms() + w->d->timeout_ms + STOP_SLACK_MS;

    for (struct receiver *r = w->ready; r != NULL; r = r->next_ready)
        release_queued(w, r, 0);
    w->ready = NULL;
    while (outbound_active(w->out) > 0 && timefmt_mono_ms() < deadline) {
        /* The rows still out stay this worker's, and the answers are recorded as they come: a
         * receiver that takes its time must not hand the others to another replica to send
         * again. */
        if (w->registered && w->db != NULL)
            renew(w, timefmt_mono_ms());
        int64_t wait = w->n_answered > 0 ? DELIVER_RECORD_LINGER_MS : STOP_POLL_MS;
        size_t n = outbound_run(w->out, wait, w->done, (size_t)w->d->concurrency);
        if (n > 0)
            take_answers(w, n);
        flush_delivered(w, timefmt_mono_ms(), false);
    }
    flush_delivered(w, timefmt_mono_ms(), true);
    publish(w, NULL);
    if (w->registered && w->db != NULL && outbound_active(w->out) == 0 &&
        db_outbox_owner_leave(w->db, w->owner) != DB_ONE_RESULT)
        db_lost(w, "rows not given back (they go to others once the lease lapses)");
}

static void *
run(void *arg)
{
    struct worker *w = arg;
    int64_t last_sweep = timefmt_mono_ms();

    while (!atomic_load(&w->d->stop)) {
        round_of(w);
        if (timefmt_mono_ms() - last_sweep > RECEIVER_IDLE_MS) {
            forget_idle(w, timefmt_mono_ms());
            last_sweep = timefmt_mono_ms();
        }
    }
    wind_down(w);
    return NULL;
}

/* ---- start and stop ------------------------------------------------------------------------ */

static void
worker_fini(struct worker *w)
{
    outbound_free(w->out); /* first: a transfer still out past the stop uses its job's body */
    while (w->n_held > 0)
        job_drop(w, w->held[0]);
    for (size_t b = 0; b < RECEIVER_BUCKETS; b++)
        while (w->receivers[b] != NULL) {
            struct receiver *r = w->receivers[b];
            w->receivers[b] = r->next;
            if (r->open_until_ms != 0)
                metrics_circuits_add(r->channel, -1);
            free(r);
        }
    push_keys_free(w->keys);
    db_close(w->db);
    free(w->held);
    free(w->claimed);
    free(w->done);
    free(w->ids);
    free(w->texts);
    free(w->texts2);
    free(w->fails);
    free(w->fail_channels);
    free(w->fail_final);
    free(w->jobs);
    free(w->answered);
    free(w->answered_status);
    free(w->answered_recorded);
    free(w->verdicts);
    pthread_mutex_destroy(&w->pub_mu);
}

static int
worker_init(struct deliver *d, struct worker *w, int i)
{
    size_t c = held_max(d->concurrency);

    w->d = d;
    w->max_held = c;
    w->index = i;
    pthread_mutex_init(&w->pub_mu, NULL);
    w->seed = (unsigned)time(NULL) ^ (unsigned)(i * 7919);
    atomic_init(&w->woken, false);
    atomic_init(&w->live, false);
    atomic_init(&w->given, 0);
    w->out = outbound_new((size_t)d->concurrency);
    w->keys = push_keys_new(d->channel.vapid_subject);
    /* Arrays of pointers: sizeof *p is a pointer's size, as meant. */
    w->held = calloc(c, sizeof *w->held); // NOLINT(bugprone-sizeof-expression)
    w->claimed = calloc(DB_OUTBOX_CLAIM_MAX, sizeof *w->claimed);
    w->done = calloc(c, sizeof *w->done);
    w->ids = calloc(c, sizeof *w->ids);
    w->texts = calloc(c, sizeof *w->texts);
    w->texts2 = calloc(c, sizeof *w->texts2);
    w->fails = calloc(c, sizeof *w->fails);
    w->fail_channels = calloc(c, sizeof *w->fail_channels);
    w->fail_final = calloc(c, sizeof *w->fail_final);
    w->jobs = calloc(c, sizeof *w->jobs); // NOLINT(bugprone-sizeof-expression)
    w->verdicts = calloc(c, sizeof *w->verdicts);
    w->answered = calloc(c, sizeof *w->answered); // NOLINT(bugprone-sizeof-expression)
    w->answered_status = calloc(c, sizeof *w->answered_status);
    w->answered_recorded = calloc(c, sizeof *w->answered_recorded);
    return w->out && w->keys && w->held && w->claimed && w->done && w->ids && w->texts &&
                   w->texts2 && w->fails && w->fail_channels && w->fail_final && w->jobs &&
                   w->verdicts && w->answered && w->answered_status && w->answered_recorded
               ? 0
               : -1;
}

static void
destroy(struct deliver *d)
{
    for (int i = 0; d->workers != NULL && i < d->n_workers; i++)
        worker_fini(&d->workers[i]);
    free(d->workers);
    free(d->database_url);
    free(d->instance_id);
    free(d);
}

struct deliver *
deliver_start(const struct deliver_opts *opts)
{
    struct deliver *d = calloc(1, sizeof *d);

    if (d == NULL)
        return NULL;
    atomic_init(&d->stop, false);
    d->retry_base_ms = opts->retry_base_ms;
    d->timeout_ms = opts->timeout_ms;
    d->channel = opts->channel;
    d->channel.timeout_ms = opts->timeout_ms;
    d->max_attempts = opts->max_attempts;
    d->concurrency = opts->concurrency;
    d->per_receiver = opts->per_receiver;
    d->per_push_service = opts->per_push_service;
    d->database_url = strdup(opts->database_url);
    d->instance_id = strdup(opts->instance_id);
    d->workers = calloc((size_t)opts->workers, sizeof *d->workers);
    if (d->database_url == NULL || d->instance_id == NULL || d->workers == NULL) {
        destroy(d);
        return NULL;
    }
    for (int i = 0; i < opts->workers; i++) {
        struct worker *w = &d->workers[i];
        d->n_workers = i + 1;
        if (worker_init(d, w, i) != 0 || pthread_create(&w->thread, NULL, run, w) != 0) {
            deliver_stop(d);
            return NULL;
        }
        w->started = true;
    }
    return d;
}

int
deliver_owner_for(void *arg, char *out, size_t cap)
{
    struct deliver *d = arg;
    struct worker *best = NULL;

    for (int i = 0; d != NULL && i < d->n_workers; i++) {
        struct worker *w = &d->workers[i];
        size_t given = atomic_load(&w->given);
        if (atomic_load(&w->live) && given < DELIVER_GIVEN_MAX &&
            (best == NULL || given < atomic_load(&best->given)))
            best = w;
    }
    if (best == NULL)
        return -1;
    pthread_mutex_lock(&best->pub_mu);
    int ok = atomic_load(&best->live) && (size_t)snprintf(out, cap, "%s", best->pub_owner) < cap;
    pthread_mutex_unlock(&best->pub_mu);
    return ok ? 0 : -1;
}

void
deliver_notify(void *arg, const char *owner, const int64_t *outbox_ids, size_t n)
{
    struct deliver *d = arg;

    (void)outbox_ids;
    if (d == NULL || n == 0)
        return;
    for (int i = 0; i < d->n_workers; i++) {
        struct worker *w = &d->workers[i];
        pthread_mutex_lock(&w->pub_mu);
        bool mine = owner != NULL && strcmp(owner, w->pub_owner) == 0;
        if (mine)
            atomic_fetch_add(&w->given, n);
        pthread_mutex_unlock(&w->pub_mu);
        if (owner != NULL && !mine)
            continue; /* given to another worker: nothing for this one */
        atomic_store(&w->woken, true);
        outbound_wakeup(w->out);
    }
}

size_t
deliver_in_flight(void)
{
    return atomic_load(&in_flight);
}

void
deliver_stop(struct deliver *d)
{
    if (d == NULL)
        return;
    atomic_store(&d->stop, true);
    for (int i = 0; i < d->n_workers; i++) {
        if (d->workers[i].out != NULL)
            outbound_wakeup(d->workers[i].out);
    }
    for (int i = 0; i < d->n_workers; i++)
        if (d->workers[i].started)
            pthread_join(d->workers[i].thread, NULL);
    destroy(d);
}
