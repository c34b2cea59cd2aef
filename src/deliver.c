/* deliver.c -- the delivery workers of deliver.h. A worker leases a batch, builds the body of each
 * row at its first attempt (the meeting as the API shows it, and the reminder; the meetings of a
 * batch in one round trip), signs it with the occurrence's stable id, POSTs it, and records the
 * outcome with the body sent: the batch's successes in one statement. */
#include "deliver.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec.h"
#include "db.h"
#include "db_webhook.h"
#include "log.h"
#include "metrics.h"
#include "timefmt.h"
#include "webhook.h"
#include "webhook_sign.h"

#define OWNER_MAX 160

/* What a round does with a leased row. */
enum row_state {
    ROW_SEND,    /* body fixed: send it */
    ROW_DONE,    /* recorded failed for good already (webhook or meeting deleted) */
    ROW_RELEASE, /* database trouble: give the lease back, try again later */
};

struct worker {
    struct deliver *d;
    pthread_t thread;
    int index;
    bool started;
    char owner[OWNER_MAX];
    struct db *db;
    bool db_down;
    struct webhook_client *http;
    unsigned seed;
    struct db_outbox_item batch[DB_OUTBOX_CLAIM_MAX];
    int64_t ok_ids[DB_OUTBOX_CLAIM_MAX];
    int ok_status[DB_OUTBOX_CLAIM_MAX];
    int64_t unsent_ids[DB_OUTBOX_CLAIM_MAX];
    int64_t batch_ids[DB_OUTBOX_CLAIM_MAX]; /* the current batch, for lease renewal */
    size_t n_batch;                         /* 0 between batches */
    int64_t renewed_ms;                     /* monotonic time of the claim or last renewal */
    bool lease_lost;                        /* a renewal failed: send nothing more */
    enum row_state state[DB_OUTBOX_CLAIM_MAX];
    size_t fresh[DB_OUTBOX_CLAIM_MAX]; /* rows whose body is built in this round */
    const char *ok_bodies[DB_OUTBOX_CLAIM_MAX];
};

struct deliver {
    pthread_mutex_t mu; /* guards stop and wakeups */
    pthread_cond_t cv;  /* monotonic clock */
    bool stop;
    unsigned long wakeups;
    char *database_url, *instance_id;
    int64_t retry_base_ms, timeout_ms;
    int max_attempts;
    bool allow_private;
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

static bool
stopping(struct deliver *d)
{
    pthread_mutex_lock(&d->mu);
    bool s = d->stop;
    pthread_mutex_unlock(&d->mu);
    return s;
}

/* Waits up to DELIVER_POLL_MS for a notify (seen_wakeups tracks which ones were seen). */
static void
idle(struct deliver *d, unsigned long *seen)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += (long)DELIVER_POLL_MS * 1000000L;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    pthread_mutex_lock(&d->mu);
    while (!d->stop && d->wakeups == *seen)
        if (pthread_cond_timedwait(&d->cv, &d->mu, &ts) == ETIMEDOUT)
            break;
    *seen = d->wakeups;
    pthread_mutex_unlock(&d->mu);
}

/* Gives up on a row for good, or schedules its retry. */
static void
record_failure(struct worker *w, const struct db_outbox_item *it, long status, const char *err,
               bool give_up)
{
    int attempt = it->attempts + 1;
    int64_t delay =
        deliver_backoff_ms(w->d->retry_base_ms, attempt, (double)rand_r(&w->seed) / RAND_MAX);
    bool last = give_up || attempt >= w->d->max_attempts;

    if (db_outbox_failed(w->db, it->id, (int)status, err, delay, w->d->max_attempts, give_up,
                         it->payload) != DB_ONE_RESULT) {
        LOG_WARN("deliver: cannot record an attempt of outbox %lld: %s", (long long)it->id,
                 db_errmsg(w->db));
        return;
    }
    metrics_add(last ? METRIC_DELIVERY_FAILED : METRIC_DELIVERY_RETRIED, 1);
    if (last)
        LOG_WARN("deliver: outbox %lld failed for good after %d attempts: %s", (long long)it->id,
                 attempt, err);
}

static const struct meeting *
find_meeting(const struct db_meeting_list *l, const char *id)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->m[i].id, id) == 0)
            return &l->m[i];
    return NULL;
}

/* Builds the bodies of the rows sent for the first time (indexes need[0..k)) from their meetings
 * as the API shows them now, loaded in one round trip. A row whose meeting is gone is recorded
 * failed (ROW_DONE); on database trouble the rows are given back (ROW_RELEASE). */
static void
build_payloads(struct worker *w, const size_t *need, size_t k)
{
    struct db_meeting_list ms;
    const char *ids[DB_OUTBOX_CLAIM_MAX];
    int64_t now = timefmt_now_ms();

    for (size_t j = 0; j < k; j++)
        ids[j] = w->batch[need[j]].meeting_id;
    if (db_meeting_get_many(w->db, ids, k, &ms) != DB_ONE_RESULT) {
        for (size_t j = 0; j < k; j++)
            w->state[need[j]] = ROW_RELEASE;
        return;
    }
    for (size_t j = 0; j < k; j++) {
        struct db_outbox_item *it = &w->batch[need[j]];
        const struct meeting *m = find_meeting(&ms, it->meeting_id);

        if (m == NULL) {
            record_failure(w, it, 0, "meeting deleted before delivery", true);
            w->state[need[j]] = ROW_DONE;
        } else if ((it->payload = codec_notification_encode(
                        m, &(struct occurrence){it->reminder_id, it->fire_at_ms, 0}, now)) ==
                   NULL) {
            w->state[need[j]] = ROW_RELEASE;
        }
    }
    db_meeting_list_fini(&ms);
}

/* Decides each leased row's fate before anything is sent: rows of deleted webhooks or meetings
 * are recorded failed; rows sent for the first time get their body, stored with the attempt's
 * outcome so that every later attempt sends the same bytes. */
static void
prepare(struct worker *w, size_t n)
{
    size_t need = 0;

    for (size_t i = 0; i < n; i++) {
        struct db_outbox_item *it = &w->batch[i];

        w->state[i] = ROW_SEND;
        if (it->webhook_deleted) {
            record_failure(w, it, 0, "webhook deleted", true);
            w->state[i] = ROW_DONE;
        } else if (it->payload == NULL) {
            w->fresh[need++] = i;
        }
    }
    if (need > 0)
        build_payloads(w, w->fresh, need);
}

/* Records the delivered rows ok_ids[0..ok) with their bodies, in one statement. */
static void
record_delivered(struct worker *w, size_t ok)
{
    char *bodies = codec_string_array(w->ok_bodies, ok);

    if (bodies == NULL ||
        db_outbox_delivered(w->db, w->ok_ids, w->ok_status, ok, bodies) != DB_ONE_RESULT)
        LOG_WARN("deliver: %zu deliveries not recorded (they will be sent again): %s", ok,
                 bodies ? db_errmsg(w->db) : "out of memory");
    else
        metrics_add(METRIC_DELIVERED, ok);
    free(bodies);
}

/* One attempt at one prepared row. Returns 1 when delivered (status in *status), 0 otherwise. */
static int
send_one(struct worker *w, struct db_outbox_item *it, long *status)
{
    char id[WEBHOOK_ID_MAX], sig[WEBHOOK_SIGNATURE_LEN + 1], err[WEBHOOK_ERR_MAX];
    int64_t ts = timefmt_now_ms() / 1000;

    *status = 0;
    webhook_message_id(it->reminder_id, it->fire_at_ms, id);
    if (webhook_sign(it->secret, id, ts, it->payload, strlen(it->payload), sig) != 0) {
        record_failure(w, it, 0, "webhook secret unusable", true);
        return 0;
    }
    struct webhook_message msg = {it->url, id, ts, sig, it->payload, strlen(it->payload)};
    if (webhook_post(w->http, &msg, status, err) == 0)
        return 1;
    record_failure(w, it, *status, err, false);
    return 0;
}

/* Extends the lease of the current batch when DELIVER_RENEW_MS have passed since the last time;
 * called between requests and, through the HTTP client's tick, during them. A failed renewal
 * stops the batch: once the lease may have run out, another worker may be sending the rows. */
static void
renew(struct worker *w)
{
    int64_t now = timefmt_mono_ms();

    if (w->n_batch == 0 || w->lease_lost || now - w->renewed_ms < DELIVER_RENEW_MS)
        return;
    if (db_outbox_renew(w->db, w->owner, w->batch_ids, w->n_batch, DELIVER_LEASE_MS) !=
        DB_ONE_RESULT) {
        LOG_WARN("deliver: cannot renew the lease of %zu rows: %s", w->n_batch, db_errmsg(w->db));
        w->lease_lost = true;
        return;
    }
    w->renewed_ms = now;
}

static void
tick(void *arg)
{
    renew(arg);
}

/* Leases and works through one batch; returns how many rows it leased. */
static size_t
round_of(struct worker *w)
{
    size_t n = 0, ok = 0, unsent = 0;
    int64_t window_end;
    char err[DB_ERR_MAX];

    if (w->db == NULL && (w->db = db_open(w->d->database_url, err, sizeof err)) == NULL) {
        if (!w->db_down)
            LOG_WARN("deliver: database unavailable, retrying: %s", err);
        w->db_down = true;
        return 0;
    }
    /* Taken before the claim, like the renewal times: the lease starts no earlier. */
    w->renewed_ms = timefmt_mono_ms();
    window_end = w->renewed_ms + DELIVER_BATCH_WINDOW_MS;
    if (db_outbox_claim(w->db, w->owner, DELIVER_LEASE_MS, w->batch, DB_OUTBOX_CLAIM_MAX, &n) !=
        DB_ONE_RESULT) {
        if (!w->db_down)
            LOG_WARN("deliver: cannot lease outbox rows: %s", db_errmsg(w->db));
        w->db_down = true;
        return 0;
    }
    w->db_down = false;
    w->lease_lost = false;
    for (size_t i = 0; i < n; i++)
        w->batch_ids[i] = w->batch[i].id;
    w->n_batch = n;
    prepare(w, n);
    for (size_t i = 0; i < n; i++) {
        long status;

        renew(w);
        if (w->state[i] == ROW_DONE)
            ;
        else if (w->state[i] == ROW_RELEASE || w->lease_lost || stopping(w->d) ||
                 timefmt_mono_ms() > window_end)
            w->unsent_ids[unsent++] = w->batch[i].id;
        else if (send_one(w, &w->batch[i], &status)) {
            w->ok_ids[ok] = w->batch[i].id;
            w->ok_bodies[ok] = w->batch[i].payload;
            w->ok_status[ok++] = (int)status;
        }
    }
    if (ok > 0)
        record_delivered(w, ok);
    /* If this fails the leases simply run out: later, never lost. */
    if (unsent > 0 && db_outbox_release(w->db, w->owner, w->unsent_ids, unsent) != DB_ONE_RESULT)
        LOG_WARN("deliver: cannot release %zu unsent rows: %s", unsent, db_errmsg(w->db));
    w->n_batch = 0;
    for (size_t i = 0; i < n; i++)
        db_outbox_item_fini(&w->batch[i]);
    return n;
}

static void *
run(void *arg)
{
    struct worker *w = arg;
    unsigned long seen = 0;

    while (!stopping(w->d))
        if (round_of(w) < DB_OUTBOX_CLAIM_MAX)
            idle(w->d, &seen);
    return NULL;
}

static void
destroy(struct deliver *d)
{
    for (int i = 0; d->workers != NULL && i < d->n_workers; i++) {
        webhook_client_free(d->workers[i].http);
        db_close(d->workers[i].db);
    }
    free(d->workers);
    free(d->database_url);
    free(d->instance_id);
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
    free(d);
}

static int
sync_init(struct deliver *d)
{
    pthread_condattr_t ca;
    int rc;

    if (pthread_mutex_init(&d->mu, NULL) != 0)
        return -1;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    rc = pthread_cond_init(&d->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (rc != 0)
        pthread_mutex_destroy(&d->mu);
    return rc == 0 ? 0 : -1;
}

struct deliver *
deliver_start(const struct deliver_opts *opts)
{
    struct deliver *d = calloc(1, sizeof *d);

    if (d == NULL || sync_init(d) != 0) {
        free(d);
        return NULL;
    }
    d->retry_base_ms = opts->retry_base_ms;
    d->timeout_ms = opts->timeout_ms;
    d->max_attempts = opts->max_attempts;
    d->allow_private = opts->allow_private;
    d->database_url = strdup(opts->database_url);
    d->instance_id = strdup(opts->instance_id);
    d->workers = calloc((size_t)opts->workers, sizeof *d->workers);
    if (d->database_url == NULL || d->instance_id == NULL || d->workers == NULL) {
        destroy(d);
        return NULL;
    }
    for (int i = 0; i < opts->workers; i++) {
        struct worker *w = &d->workers[i];
        w->d = d;
        w->index = i;
        w->seed = (unsigned)time(NULL) ^ (unsigned)(i * 7919);
        snprintf(w->owner, sizeof w->owner, "%s/%d", opts->instance_id, i);
        d->n_workers = i + 1;
        if ((w->http = webhook_client_new(opts->timeout_ms, opts->allow_private)) != NULL)
            webhook_client_on_tick(w->http, tick, w);
        if (w->http == NULL || pthread_create(&w->thread, NULL, run, w) != 0) {
            deliver_stop(d);
            return NULL;
        }
        w->started = true;
    }
    return d;
}

void
deliver_notify(void *arg, const int64_t *outbox_ids, size_t n)
{
    struct deliver *d = arg;

    (void)outbox_ids;
    if (d == NULL || n == 0)
        return;
    pthread_mutex_lock(&d->mu);
    d->wakeups++;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

void
deliver_stop(struct deliver *d)
{
    if (d == NULL)
        return;
    pthread_mutex_lock(&d->mu);
    d->stop = true;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    for (int i = 0; i < d->n_workers; i++)
        if (d->workers[i].started)
            pthread_join(d->workers[i].thread, NULL);
    destroy(d);
}
