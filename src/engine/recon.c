/* recon.c -- the reconciler thread: PostgreSQL is the truth, the Redis mirror is repaired from it.
 * Every RECON_TICK_MS it looks at Redis's identity (run_id, marker key). A full pass re-arms with
 * SET NX every pending reminder due within the horizon: at start, when kicked, at once after
 * Redis lost data, and full_interval_ms after the last one ended. It is a walk of the owned shards
 * that goes on a step per tick and rests between steps (recon_walk.h), flat out only after a data
 * loss. Every interval_ms, a short pass arms only the slice that entered the horizon since the
 * last pass, so the periodic cost does not grow with the number of pending reminders; the walk
 * covers the horizon as it was when it began, the short passes what came after. Every interval it
 * also sweeps overdue pending reminders into dispatch (claim + fire), which bounds lateness when
 * every Redis event and the scheduler fail: interval_ms + one sweep + one fire (while dispatch is
 * busy, a sweep waits for its queue to drain, RECON_SWEEP_DEFER_MS at most). A failed step of the
 * full pass is retried next tick from the same page, a failed short pass next interval (from where
 * the last complete one ended); an outage is logged once when it starts and once when it ends,
 * never per tick. Recurring meetings' windows are extended after each tick (extend_series). */
#include "recon.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cond.h"
#include "db.h"
#include "dbclock.h"
#include "log.h"
#include "members.h"
#include "recon_walk.h"
#include "thread.h"
#include "timefmt.h"

/* Keys per page of the short pass: one database read. The read walks each owned shard's slice,
 * twice the shard's part of a page but at least DUE_SLICE_MIN (db_reminder.c) rows: with pages of
 * 1,000 and 85 shards (3 replicas) that floor made each page read 5,440 rows. A short pass's slice
 * rarely fills one page; the full pass walks shard by shard instead (recon_walk.h). */
#define RECON_PASS_PAGE DB_DUE_BATCH_MAX
_Static_assert(RECON_PASS_PAGE <= DB_DUE_BATCH_MAX, "a repair page fits r->batch");

struct recon {
    pthread_t thread;
    pthread_mutex_t mu; /* guards stop and kicked */
    pthread_cond_t cv;  /* signalled by recon_kick and recon_stop; waits on CLOCK_MONOTONIC */
    bool stop;
    bool kicked;
    atomic_uint_fast64_t passes;
    atomic_bool redis_up; /* the last identity check (every tick) got answers */
    char *database_url;
    char *instance_id; /* names the marker key */
    int64_t interval_ms;
    int64_t full_interval_ms;
    int64_t horizon_ms;
    struct dispatch *d; /* NULL: no overdue sweep */
    struct members *members;
    /* Below: used by the thread only, once started. */
    struct mirror *mi;
    struct db *db;
    struct reminder_key *batch; /* DB_DUE_BATCH_MAX entries */
    int64_t armed_until;    /* realtime ms: the short passes arm from here (the walk, up to here) */
    struct recon_walk walk; /* the full pass, while one goes on */
    char run_id[MIRROR_RUN_ID_MAX + 1]; /* "" until Redis was first seen */
    bool redis_down;
    bool db_down;
    int64_t clock_sampled_ms; /* monotonic: the last dbclock sample (0: none yet) */
    struct series_sync_params series;
    int64_t series_next_ms; /* monotonic: when series windows are looked at next */
    int64_t swept_ms;       /* monotonic: the last sweep */
};

static void
outage(bool *down, const char *what, const char *why)
{
    if (!*down)
        LOG_WARN("recon: %s unavailable, retrying every tick: %s", what, why);
    *down = true;
}

static void
recovered(bool *down, const char *what)
{
    if (*down)
        LOG_INFO("recon: %s available again", what);
    *down = false;
}

static bool
stopping(struct recon *r)
{
    bool stop;

    pthread_mutex_lock(&r->mu);
    stop = r->stop;
    pthread_mutex_unlock(&r->mu);
    return stop;
}

/* Sleeps until the next tick (RECON_TICK_MS, or the interval when shorter), a kick or stop;
 * not at all when at_once (a flat-out walk that stopped for the sweep goes on). Returns false
 * when the thread must end. */
static bool
wait_tick(struct recon *r, bool *due, bool at_once)
{
    struct timespec until;
    bool go;

    until = cond_deadline(r->interval_ms < RECON_TICK_MS ? r->interval_ms : RECON_TICK_MS);
    pthread_mutex_lock(&r->mu);
    while (!at_once && !r->stop && !r->kicked)
        if (pthread_cond_timedwait(&r->cv, &r->mu, &until) == ETIMEDOUT)
            break;
    go = !r->stop;
    if (r->kicked)
        *due = true;
    r->kicked = false;
    pthread_mutex_unlock(&r->mu);
    return go;
}

/* Returns 1 when Redis lost data since we last saw it (new run_id, or the marker key is gone),
 * 0 when it looks the same, -1 when it cannot be reached. The first sighting is not a loss: the
 * start-up pass covers it. */
static int
redis_lost(struct recon *r)
{
    char id[MIRROR_RUN_ID_MAX + 1];
    int created;
    bool known = r->run_id[0] != '\0', changed;

    if (mirror_run_id(r->mi, id) != 0 ||
        (created = mirror_marker_ensure(r->mi, r->instance_id)) < 0) {
        atomic_store(&r->redis_up, false);
        outage(&r->redis_down, "redis", "no answer");
        return -1;
    }
    atomic_store(&r->redis_up, true);
    recovered(&r->redis_down, "redis");
    changed = known && strcmp(id, r->run_id) != 0;
    strcpy(r->run_id, id);
    if (changed)
        LOG_INFO("recon: redis run_id changed to %s", id);
    else if (known && created == 1)
        LOG_INFO("recon: redis marker key vanished");
    return known && (changed || created == 1);
}

/* Fetches the next page of pending reminders of the owned shards: strictly after (after_at,
 * after_id) in (fire_at, id) order, due by until. Returns the row count or -1. */
static long
fetch(struct recon *r, int64_t after_at, int64_t after_id, int64_t until)
{
    struct shard_set owned;
    size_t n = 0;

    members_shards(r->members, &owned);
    switch (db_reminder_due_batch(r->db, &owned, after_at, after_id, until, r->batch,
                                  RECON_PASS_PAGE, &n)) {
    case DB_HARD_ERROR:
    case DB_SOFT_ERROR:
        outage(&r->db_down, "database", db_errmsg(r->db));
        return -1;
    case DB_NO_RESULTS:
    case DB_ONE_RESULT:
        break;
    }
    recovered(&r->db_down, "database");
    return (long)n;
}

/* Opens the thread's database connection when it has none. */
static bool
db_ready(struct recon *r)
{
    char err[DB_ERR_MAX];

    if (r->db == NULL && (r->db = db_open(r->database_url, err, sizeof err)) == NULL)
        outage(&r->db_down, "database", err);
    return r->db != NULL;
}

/* The short pass: arms the pending reminders due in (from, now + horizon] (from clamped to now),
 * batch by batch. Moves armed_until only when complete: when the database or Redis failed or we
 * are stopping, the next interval starts again from the same place. */
static void
pass(struct recon *r, int64_t from)
{
    int64_t now = timefmt_now_ms(), after_id = INT64_MAX;
    int64_t after_at = from > now ? from : now, until = now + r->horizon_ms;
    long n;

    if (!db_ready(r))
        return;
    while ((n = fetch(r, after_at, after_id, until)) > 0) {
        /* A fresh now per batch: keys that fell due meanwhile are skipped, not set in the past. */
        if (mirror_arm(r->mi, r->batch, (size_t)n, timefmt_now_ms(), 1) != 0) {
            outage(&r->redis_down, "redis", "write failed");
            return;
        }
        after_at = r->batch[n - 1].fire_at_ms;
        after_id = r->batch[n - 1].reminder_id;
        if (n < RECON_PASS_PAGE)
            break;
        if (stopping(r))
            return;
    }
    if (n >= 0)
        r->armed_until = until;
}

/* Hands every overdue pending reminder to dispatch (which claims, fires once, and drops what is
 * stale or already fired). The read walks the partial index of pending reminders from its start,
 * so it costs what is overdue, not what is pending. While dispatch has occurrences queued, the
 * sweep waits (RECON_SWEEP_DEFER_MS at most): in a burst every occurrence is overdue by a few
 * milliseconds until its batch is fired, and a sweep then read again what the scheduler had just
 * handed out and queued each a second time, on the thread that fires them. */
static void
sweep(struct recon *r)
{
    int64_t now = dbclock_now_ms(), at = INT64_MIN, id = 0, mono = timefmt_mono_ms();
    struct shard_set owned;
    size_t n;

    if (r->d == NULL || !db_ready(r)) /* opens it, also when nothing else did (Redis down) */
        return;
    if (dispatch_depth(r->d) > 0 && mono - r->swept_ms < RECON_SWEEP_DEFER_MS)
        return;
    r->swept_ms = mono;
    members_shards(r->members, &owned);
    do {
        if (db_reminder_due_batch(r->db, &owned, at, id, now, r->batch, DB_DUE_BATCH_MAX, &n) !=
            DB_ONE_RESULT) {
            outage(&r->db_down, "database", db_errmsg(r->db));
            return;
        }
        for (size_t done = 0; done < n;) {
            size_t chunk = n - done < DISPATCH_BATCH_MAX ? n - done : DISPATCH_BATCH_MAX;
            if (dispatch_submit(r->d, r->batch + done, chunk) < chunk)
                return; /* the queue is full: the next sweep brings the rest */
            done += chunk;
        }
        if (n > 0) {
            at = r->batch[n - 1].fire_at_ms;
            id = r->batch[n - 1].reminder_id;
        }
    } while (n == DB_DUE_BATCH_MAX && !stopping(r));
}

/* A sample of the database's clock for dbclock.h, every DBCLOCK_SAMPLE_MS. */
static void
sample_clock(struct recon *r, int64_t mono)
{
    int64_t before, db_ms;

    if (r->db == NULL || mono - r->clock_sampled_ms < DBCLOCK_SAMPLE_MS)
        return;
    r->clock_sampled_ms = mono;
    before = timefmt_now_ms();
    if (db_clock_ms(r->db, &db_ms) == DB_ONE_RESULT)
        dbclock_observe(before, db_ms, timefmt_now_ms());
}

/* Starts the full pass, or starts it again (a kick or a data loss during one): the walk covers the
 * horizon as it is now, and the short passes go on from its end. */
static void
walk_begin(struct recon *r, bool lost)
{
    struct shard_set owned;
    int64_t until = timefmt_now_ms() + r->horizon_ms;

    members_shards(r->members, &owned);
    recon_walk_begin(&r->walk, &owned, until, lost);
    if (r->armed_until < until)
        r->armed_until = until;
}

/* Takes the full pass a step further; one that is flat out, on until its end or until the
 * sweep is due (until, monotonic): with 600,000 pending a flat-out walk held the sweep off for
 * 4.3-4.7 s, and the sweep is what bounds lateness while Redis events are lost. Returns what the
 * last step did (RECON_WALK_DONE: the walk ended with it). */
static enum recon_walk_result
walk_on(struct recon *r, int64_t until)
{
    enum recon_walk_result res;

    do
        res = recon_walk_step(&r->walk, r->db, r->mi, r->batch, timefmt_mono_ms());
    while (res == RECON_WALK_MORE && r->walk.flat_out && timefmt_mono_ms() < until && !stopping(r));
    if (res == RECON_WALK_DB)
        outage(&r->db_down, "database", db_errmsg(r->db));
    else if (res == RECON_WALK_REDIS)
        outage(&r->redis_down, "redis", "write failed");
    return res;
}

/* One tick: starts the full pass when one is owed (*full: at start, when kicked, every full
 * interval after the last one ended, and flat out when Redis lost data), takes it a step further,
 * and every interval runs the short pass and the sweep. A kick during a walk does not start it
 * again: the walk goes on and the next one begins when it ends, so every key is armed by a walk
 * that began after the kick, and walks still end under a stream of kicks (each kick starting
 * the walk from its first shard put every full pass off for as long as kicks came: none in 40 s
 * of subscriber restarts). A data loss does start it again, flat out: what it armed before is
 * gone. *lost persists until a walk after the loss begins; the walk's flat_out says it was one.
 * Returns whether a flat-out walk stopped for the sweep and goes on at once: not after a failed
 * step, which waits for the next tick like any retry (else an outage would spin the thread). */
static bool
tick(struct recon *r, bool *full, bool *lost, int64_t *last_pass_ms, int64_t *last_full_ms)
{
    int64_t mono = timefmt_mono_ms();
    int l = redis_lost(r);
    enum recon_walk_result res = RECON_WALK_DB; /* no step taken */

    sample_clock(r, mono);
    if (l > 0)
        *full = *lost = true;
    if (!r->walk.active && mono - *last_full_ms >= r->full_interval_ms)
        *full = true;
    if (*full && (!r->walk.active || l > 0) && l >= 0 && db_ready(r)) {
        walk_begin(r, *lost);
        *full = *lost = false;
    }
    if (r->walk.active && l >= 0 && db_ready(r) &&
        (res = walk_on(r, *last_pass_ms + r->interval_ms)) == RECON_WALK_DONE) {
        atomic_fetch_add(&r->passes, 1);
        *last_full_ms = timefmt_mono_ms();
        if (r->walk.flat_out)
            LOG_INFO("recon: redis data loss detected, re-mirrored %zu keys", r->walk.rearmed);
        else if (r->walk.rearmed > 0)
            LOG_INFO("recon: re-mirrored %zu missing keys", r->walk.rearmed);
    }
    bool again = res == RECON_WALK_MORE && r->walk.active && r->walk.flat_out;
    if (timefmt_mono_ms() - *last_pass_ms < r->interval_ms)
        return again;
    /* The sweep needs no Redis: with Redis down, overdue reminders still fire from the database,
     * also when its connection could not be opened before (nothing else opens it then). */
    if (l >= 0)
        pass(r, r->armed_until);
    sweep(r);
    *last_pass_ms = timefmt_mono_ms();
    return again;
}

/* Extends the windows of the due series of the owned shards, batch after batch while a backlog
 * lasts (a full batch) and the tick's budget allows; then rests RECON_SERIES_REST_FACTOR times as
 * long as it worked while the backlog lasts, or an interval once it is gone. Rows it writes lie
 * beyond the mirror's horizon (series_window_ms), so the short pass and the scheduler's reads
 * pick them up as they come near, like any reminder. */
static void
extend_series(struct recon *r)
{
    int64_t start = timefmt_mono_ms();
    size_t seen = 0, rows = 0, total = 0;
    struct shard_set owned;

    if (r->db == NULL || start < r->series_next_ms)
        return;
    members_shards(r->members, &owned);
    do {
        if (series_sync_extend(r->db, &owned, &r->series, dbclock_now_ms(), &seen, &rows) !=
            DB_ONE_RESULT) {
            outage(&r->db_down, "database", db_errmsg(r->db));
            seen = 0;
            break;
        }
        total += rows;
    } while (seen == DB_SERIES_BATCH_MAX && timefmt_mono_ms() - start < RECON_SERIES_BUDGET_MS &&
             !stopping(r));
    int64_t end = timefmt_mono_ms();
    r->series_next_ms = seen == DB_SERIES_BATCH_MAX ? end + (end - start) * RECON_SERIES_REST_FACTOR
                                                    : start + r->interval_ms;
    if (total > 0)
        LOG_DEBUG("recon: %zu occurrence rows written ahead", total);
}

static void *
recon_thread(void *arg)
{
    struct recon *r = arg;
    bool full = true, lost = false, again;
    int64_t last_pass_ms = timefmt_mono_ms(), last_full_ms = last_pass_ms;

    thread_set_name("tocsin-recon");

    do {
        again = tick(r, &full, &lost, &last_pass_ms, &last_full_ms);
        extend_series(r);
    } while (wait_tick(r, &full, again));
    return NULL;
}

static void
destroy(struct recon *r)
{
    db_close(r->db);
    mirror_free(r->mi);
    free(r->batch);
    free(r->database_url);
    free(r->instance_id);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

/* Mutex and a condition variable that times out on the monotonic clock. */
static int
sync_init(struct recon *r)
{
    if (pthread_mutex_init(&r->mu, NULL) != 0)
        return -1;
    cond_init_monotonic(&r->cv);
    return 0;
}

struct recon *
recon_start(const struct recon_opts *opts)
{
    struct recon *r = calloc(1, sizeof *r);

    if (r == NULL)
        return NULL;
    if (sync_init(r) != 0) {
        free(r);
        return NULL;
    }
    atomic_init(&r->passes, 0);
    atomic_init(&r->redis_up, false);
    r->interval_ms = opts->interval_ms;
    r->full_interval_ms = opts->full_interval_ms > 0 ? opts->full_interval_ms : opts->interval_ms;
    r->horizon_ms = opts->mirror.horizon_ms;
    r->d = opts->dispatch;
    r->members = opts->members;
    r->series = opts->series;
    r->database_url = strdup(opts->database_url);
    r->instance_id = strdup(opts->instance_id != NULL ? opts->instance_id : "recon");
    r->mi = mirror_new(&opts->mirror);
    r->batch = calloc(DB_DUE_BATCH_MAX, sizeof *r->batch);
    if (r->database_url == NULL || r->instance_id == NULL || r->mi == NULL || r->batch == NULL) {
        destroy(r);
        return NULL;
    }
    /* The first sample of the database's clock, here and not on the thread's first tick: the
     * scheduler and the sweep start after this and go by it (dbclock.h). Until a sample they go by
     * this replica's own clock, and one running ahead hands out occurrences the database finds
     * not yet due (they wait for their claims to lapse and the sweep). Without a database now,
     * the thread samples once it connects. The connection is the thread's from here on. */
    if (db_ready(r))
        sample_clock(r, timefmt_mono_ms());
    if (pthread_create(&r->thread, NULL, recon_thread, r) != 0) {
        destroy(r);
        return NULL;
    }
    return r;
}

void
recon_kick(struct recon *r)
{
    pthread_mutex_lock(&r->mu);
    r->kicked = true;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

uint64_t
recon_passes(struct recon *r)
{
    return atomic_load(&r->passes);
}

bool
recon_redis_up(struct recon *r)
{
    return r != NULL && atomic_load(&r->redis_up);
}

void
recon_stop(struct recon *r)
{
    if (r == NULL)
        return;
    pthread_mutex_lock(&r->mu);
    r->stop = true;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->thread, NULL);
    destroy(r);
}
