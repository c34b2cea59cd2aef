/* dispatch.c -- the dispatch thread of dispatch.h. Each round: take due deferred occurrences and
 * a batch from the queue, dedupe, hold back the early ones, drop what it claimed lately, claim the
 * rest in Redis pipelines (mirror_claim.h), fire the winners in one PostgreSQL statement
 * (db_fire.c), retry that statement with backoff while the database is away (their outbox rows
 * owned by a local delivery worker), then hand the outbox ids to delivery (and its webhook rows
 * with their meetings, db_fire.h's handover), remove the batch's
 * Redis keys and wake the stream hubs. */
#include "dispatch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db_fire.h"
#include "db_outbox.h"
#include "dbclock.h"
#include "log.h"
#include "metrics.h"
#include "mirror_claim.h"
#include "mirror_stream.h"
#include "queue.h"
#include "thread.h"
#include "timefmt.h"

_Static_assert(DISPATCH_BATCH_MAX <= DB_FIRE_BATCH_MAX,
               "a dispatch batch must fit one fire statement");

#define DISPATCH_IDLE_WAIT_MS 1000 /* queue wait with nothing deferred (checks the stop flag) */
#define FIRE_LOG_EVERY_MS 1000     /* fire rounds: one info line at most this often */
_Static_assert((DISPATCH_SEEN_SLOTS & (DISPATCH_SEEN_SLOTS - 1)) == 0, "slots: a power of two");

/* An occurrence this replica claimed, and until when (monotonic) its Redis claim holds. */
struct seen {
    struct reminder_key k;
    int64_t until_ms;
};

struct dispatch {
    pthread_t thread;
    struct queue *q;
    atomic_bool stop;
    atomic_int_fast64_t drain_until_ms; /* monotonic; set by dispatch_stop before the close */
    char *database_url;
    char *instance_id;
    int64_t claim_ttl_ms, missed_grace_ms;
    bool email; /* outbox rows for the email channel (SMTP configured) */
    dispatch_fired_fn on_fired;
    dispatch_owner_fn owner_for;
    void *on_fired_arg;
    dispatch_streamed_fn on_streamed;
    void *on_streamed_arg;
    /* Below: the thread's own. */
    struct mirror *mi;
    struct db *db;
    bool db_down, redis_down;
    size_t n_defer;
    struct reminder_key batch[DISPATCH_BATCH_MAX];
    struct reminder_key defer[DISPATCH_DEFER_MAX];
    unsigned char won[DISPATCH_BATCH_MAX];
    struct seen *seen; /* DISPATCH_SEEN_SLOTS */
    struct db_fire_result res;
    char owner[DB_OUTBOX_OWNER_MAX + 1]; /* of the batch being fired; "" = nobody */
    int64_t started_ms;                  /* monotonic: when its statement was sent */
};

static int
cmp_key(const void *a, const void *b)
{
    const struct reminder_key *x = a, *y = b;

    if (x->reminder_id != y->reminder_id)
        return x->reminder_id < y->reminder_id ? -1 : 1;
    return (x->fire_at_ms > y->fire_at_ms) - (x->fire_at_ms < y->fire_at_ms);
}

/* Sorts and removes duplicates in place; returns the new count. */
static size_t
dedupe(struct reminder_key *k, size_t n)
{
    size_t out = 0;

    qsort(k, n, sizeof *k, cmp_key);
    for (size_t i = 0; i < n; i++)
        if (out == 0 || cmp_key(&k[i], &k[out - 1]) != 0)
            k[out++] = k[i];
    return out;
}

static bool
giving_up(struct dispatch *d)
{
    return atomic_load(&d->stop) && timefmt_mono_ms() >= atomic_load(&d->drain_until_ms);
}

/* Keeps the occurrences not yet due (an expired event from a Redis whose clock runs ahead, or a
 * bug upstream) in d->defer, so nothing is ever fired before its time. Returns the due count. */
static size_t
hold_early(struct dispatch *d, struct reminder_key *k, size_t n, int64_t now)
{
    size_t due = 0;

    for (size_t i = 0; i < n; i++) {
        if (k[i].fire_at_ms <= now)
            k[due++] = k[i];
        else if (k[i].fire_at_ms - now <= DISPATCH_DEFER_HORIZON_MS &&
                 d->n_defer < DISPATCH_DEFER_MAX)
            d->defer[d->n_defer++] = k[i];
        else /* its own key, the scheduler or the sweep brings it back when due */
            LOG_WARN("dispatch: dropped an occurrence due in %lld ms (reminder %lld)",
                     (long long)(k[i].fire_at_ms - now), (long long)k[i].reminder_id);
    }
    return due;
}

/* Moves deferred occurrences that are due into k (room for max); returns how many. Sets *next to
 * the earliest remaining due time (INT64_MAX when none). */
static size_t
take_deferred(struct dispatch *d, struct reminder_key *k, size_t max, int64_t now, int64_t *next)
{
    size_t n = 0, kept = 0;

    *next = INT64_MAX;
    for (size_t i = 0; i < d->n_defer; i++) {
        if (d->defer[i].fire_at_ms <= now && n < max) {
            k[n++] = d->defer[i];
            continue;
        }
        if (d->defer[i].fire_at_ms < *next)
            *next = d->defer[i].fire_at_ms;
        d->defer[kept++] = d->defer[i];
    }
    d->n_defer = kept;
    return n;
}

static struct seen *
seen_slot(struct dispatch *d, const struct reminder_key *k)
{
    uint64_t h = (uint64_t)k->reminder_id * 0x9E3779B97F4A7C15u ^ (uint64_t)k->fire_at_ms;

    return &d->seen[(h ^ h >> 29) & (DISPATCH_SEEN_SLOTS - 1)];
}

/* Drops from k[0..n) what this replica claimed within the claim's TTL: claimed again, Redis would
 * answer that it exists. Returns how many are left. */
static size_t
drop_seen(struct dispatch *d, struct reminder_key *k, size_t n, int64_t now)
{
    size_t left = 0;

    for (size_t i = 0; i < n; i++) {
        const struct seen *e = seen_slot(d, &k[i]);
        if (e->until_ms > now && e->k.reminder_id == k[i].reminder_id &&
            e->k.fire_at_ms == k[i].fire_at_ms)
            continue;
        k[left++] = k[i];
    }
    metrics_add(METRIC_ALREADY_CLAIMED, n - left);
    return left;
}

/* Claims k[0..n) and keeps the winners in place; returns their count. Without Redis every item
 * counts as won: the claim only saves database work, because the fire statement changes a row only
 * while it is pending and a concurrent fire of the same row blocks on its lock, then sees it fired
 * and changes nothing. Exactly-once holds without Redis; we just do the losers' work too. */
static size_t
claim(struct dispatch *d, struct reminder_key *k, size_t n)
{
    size_t won = 0;

    if (mirror_claim(d->mi, k, n, d->instance_id, d->claim_ttl_ms, d->won) != 0) {
        if (!d->redis_down)
            LOG_WARN("dispatch: redis unavailable, firing without claims (the database still "
                     "fires each reminder once)");
        d->redis_down = true;
        return n;
    }
    if (d->redis_down)
        LOG_INFO("dispatch: redis available again, claiming");
    d->redis_down = false;
    int64_t until = timefmt_mono_ms() + d->claim_ttl_ms;
    for (size_t i = 0; i < n; i++)
        if (d->won[i]) {
            *seen_slot(d, &k[i]) = (struct seen){k[i], until};
            k[won++] = k[i];
        }
    metrics_add(METRIC_ALREADY_CLAIMED, n - won);
    return won;
}

/* One info line per fire round, at most one a second (a steady flow must not flood the log):
 * what this round fired, its worst lateness (of the fired ones), and how many rounds went
 * unlogged since the last line. */
static void
log_round(const struct dispatch *d, size_t fired, int64_t worst)
{
    static struct log_throttle rounds = LOG_THROTTLE_INIT(FIRE_LOG_EVERY_MS);
    unsigned long unlogged;
    int64_t since_ms;

    if (d->res.n == 0 || !log_enabled(LOG_LEVEL_INFO) ||
        !log_throttle_take(&rounds, timefmt_mono_ms(), &unlogged, &since_ms))
        return;
    LOG_INFO("dispatch: fired %zu reminders (%zu missed), at most %lld ms late; %lu more rounds "
             "in the last %lld ms",
             fired, d->res.n - fired, (long long)worst, unlogged, (long long)since_ms);
}

/* Counts and hands over what one committed fire statement changed, and removes the keys of the
 * batch keys[0..n_sent). */
static void
account(struct dispatch *d, const struct reminder_key *keys, size_t n_sent)
{
    size_t fired = 0;
    int64_t worst = 0; /* the round's worst lateness, of the fired ones */

    for (size_t i = 0; i < d->res.n; i++) {
        const struct db_fire_item *it = &d->res.item[i];
        if (it->status == REMINDER_FIRED) {
            fired++;
            metrics_observe_lateness_ms(it->lateness_ms);
            if (it->lateness_ms > worst)
                worst = it->lateness_ms;
        }
        LOG_DEBUG("dispatch: reminder %lld %s, %lld ms late", (long long)it->reminder_id,
                  meeting_reminder_status_name(it->status), (long long)it->lateness_ms);
    }
    metrics_add(METRIC_FIRED, fired);
    metrics_add(METRIC_MISSED, d->res.n - fired);
    log_round(d, fired, worst);
    metrics_add(METRIC_STALE_DROPPED, n_sent - d->res.n);
    if (d->on_fired != NULL && d->res.n_outbox > 0) {
        struct db_fire_handover *h = d->res.handover;
        d->res.handover = NULL; /* the callee's now */
        if (h != NULL) {
            snprintf(h->owner, sizeof h->owner, "%s", d->owner);
            h->started_ms = d->started_ms;
        }
        d->on_fired(d->on_fired_arg, d->owner[0] != '\0' ? d->owner : NULL, d->res.outbox_ids,
                    d->res.n_outbox, h);
    }
    /* The batch's keys are spent (fired, missed, or stale): removed now, they never expire into
     * an event that every replica would receive and claim. Best effort: a key left behind
     * expires into an event that changes nothing. Not waited for: the next claim reads the
     * replies, and the next batch need not wait a Redis round trip. */
    if (!d->redis_down)
        (void)mirror_disarm_nowait(d->mi, keys, n_sent);
    if (d->res.n_streams == 0)
        return;
    /* This replica's hub first (no round trip), then the others. A lost PUBLISH costs them at
     * most their catch-up poll: the events are in PostgreSQL. */
    if (d->on_streamed != NULL)
        d->on_streamed(d->on_streamed_arg, d->res.stream, d->res.n_streams);
    if (!d->redis_down)
        (void)mirror_stream_publish(d->mi, d->res.stream, d->res.n_streams);
}

/* One attempt; on an error, why says what went wrong (for fire to log once). */
static enum db_status
fire_once(struct dispatch *d, const struct reminder_key *k, size_t n, char why[DB_ERR_MAX])
{
    if (d->db == NULL && (d->db = db_open_in_order(d->database_url, why, DB_ERR_MAX)) == NULL)
        return DB_SOFT_ERROR;
    /* Asked per attempt: a worker whose lease lapsed meanwhile has a new name. */
    bool hand = false;
    if (d->owner_for == NULL ||
        d->owner_for(d->on_fired_arg, d->owner, sizeof d->owner, &hand) != 0)
        d->owner[0] = '\0';
    /* Before the statement is sent: the handover's age counts from before the fire's now(). */
    d->started_ms = timefmt_mono_ms();
    enum db_status st = db_fire_batch(d->db, k, n, d->missed_grace_ms, d->email,
                                      d->owner[0] != '\0' ? d->owner : NULL,
                                      hand ? DB_FIRE_HANDOVER_GRACE_MS : 0, &d->res);
    if (st == DB_HARD_ERROR || st == DB_SOFT_ERROR)
        snprintf(why, DB_ERR_MAX, "%s", db_errmsg(d->db));
    return st;
}

/* Fires k[0..n), retrying transient failures with backoff until it works or dispatch_stop's
 * drain time is over (then the occurrences stay pending for the reconciler's sweep). A hard
 * error on a batch retries its items one by one so one bad row cannot block the others. */
static void
fire(struct dispatch *d, const struct reminder_key *k, size_t n)
{
    int64_t backoff = DISPATCH_BACKOFF_MIN_MS;
    char why[DB_ERR_MAX];

    for (;;) {
        enum db_status st = fire_once(d, k, n, why);
        switch (st) {
        case DB_ONE_RESULT:
        case DB_NO_RESULTS:
            if (d->db_down)
                LOG_INFO("dispatch: database available again");
            d->db_down = false;
            account(d, k, n);
            db_fire_result_fini(&d->res);
            return;
        case DB_HARD_ERROR:
            db_fire_result_fini(&d->res);
            metrics_add(METRIC_DISPATCH_ERRORS, 1);
            for (size_t i = 0; n > 1 && i < n; i++)
                fire(d, &k[i], 1);
            if (n == 1)
                LOG_ERROR("dispatch: reminder %lld not fired: %s", (long long)k[0].reminder_id,
                          why);
            return;
        case DB_SOFT_ERROR:
            break;
        }
        db_fire_result_fini(&d->res);
        metrics_add(METRIC_DISPATCH_ERRORS, 1);
        if (!d->db_down)
            LOG_WARN("dispatch: database unavailable, retrying %zu reminders with backoff: %s", n,
                     why);
        d->db_down = true;
        if (giving_up(d))
            return;
        timefmt_sleep_ms(backoff);
        backoff = backoff * 2 < DISPATCH_BACKOFF_MAX_MS ? backoff * 2 : DISPATCH_BACKOFF_MAX_MS;
    }
}

static void
process(struct dispatch *d, size_t n)
{
    n = dedupe(d->batch, n);
    n = hold_early(d, d->batch, n, dbclock_now_ms());
    n = drop_seen(d, d->batch, n, timefmt_mono_ms());
    if (n > 0)
        n = claim(d, d->batch, n);
    if (n > 0)
        fire(d, d->batch, n);
}

static void *
dispatch_thread(void *arg)
{
    struct dispatch *d = arg;

    thread_set_name("tocsin-dispatch");

    for (;;) {
        int64_t now = dbclock_now_ms(), next, wait = DISPATCH_IDLE_WAIT_MS;
        size_t n = take_deferred(d, d->batch, DISPATCH_BATCH_MAX, now, &next);

        if (giving_up(d))
            break; /* what is left stays pending in PostgreSQL for the next sweep */
        if (next != INT64_MAX && next - now < wait)
            wait = next - now;
        if (n < DISPATCH_BATCH_MAX)
            n += queue_pop(d->q, d->batch + n, DISPATCH_BATCH_MAX - n, n > 0 ? 0 : wait);
        if (n > 0)
            process(d, n);
        else if (atomic_load(&d->stop))
            break; /* closed and empty; deferred ones are not due and stay pending */
    }
    return NULL;
}

static void
destroy(struct dispatch *d)
{
    queue_free(d->q);
    mirror_free(d->mi);
    db_close(d->db);
    free(d->database_url);
    free(d->instance_id);
    free(d->seen);
    free(d);
}

struct dispatch *
dispatch_start(const struct dispatch_opts *opts)
{
    struct dispatch *d = calloc(1, sizeof *d);

    if (d == NULL)
        return NULL;
    atomic_init(&d->stop, false);
    atomic_init(&d->drain_until_ms, 0);
    d->claim_ttl_ms = opts->claim_ttl_ms;
    d->missed_grace_ms = opts->missed_grace_ms;
    d->email = opts->email;
    d->on_fired = opts->on_fired;
    d->owner_for = opts->owner_for;
    d->on_fired_arg = opts->on_fired_arg;
    d->on_streamed = opts->on_streamed;
    d->on_streamed_arg = opts->on_streamed_arg;
    d->q = queue_new(sizeof(struct reminder_key), DISPATCH_QUEUE_MAX);
    d->mi = mirror_new(&opts->mirror);
    d->database_url = strdup(opts->database_url);
    d->instance_id = strdup(opts->instance_id);
    d->seen = calloc(DISPATCH_SEEN_SLOTS, sizeof *d->seen);
    if (d->q == NULL || d->mi == NULL || d->database_url == NULL || d->instance_id == NULL ||
        d->seen == NULL || pthread_create(&d->thread, NULL, dispatch_thread, d) != 0) {
        destroy(d);
        return NULL;
    }
    return d;
}

size_t
dispatch_submit(struct dispatch *d, const struct reminder_key *k, size_t n)
{
    size_t done = queue_push(d->q, k, n);

    if (done < n)
        metrics_add(METRIC_QUEUE_DROPPED, n - done);
    return done;
}

size_t
dispatch_depth(struct dispatch *d)
{
    return queue_depth(d->q);
}

void
dispatch_stop(struct dispatch *d)
{
    if (d == NULL)
        return;
    atomic_store(&d->drain_until_ms, timefmt_mono_ms() + DISPATCH_DRAIN_MS);
    atomic_store(&d->stop, true);
    queue_close(d->q);
    pthread_join(d->thread, NULL);
    destroy(d);
}
