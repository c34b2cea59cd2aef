/* itest_recon.c -- the reconciler against a real PostgreSQL and Redis. Needs
 * TOCSIN_TEST_DATABASE_URL (a libpq URI to a database where we may CREATE DATABASE) and
 * TOCSIN_TEST_REDIS_URL (redis://host:port/db); fails, never skips, without them. In a database of
 * its own (fixture.h) it writes reminders with db_*, deletes their Redis keys and checks recon puts
 * them back with the exact expiry: after a FLUSHALL-like loss (marker gone), after a kick, and by
 * its periodic pass. Then the stated worst case when every Redis event is lost and no scheduler
 * runs: the overdue sweep alone fires a reminder within SWEEP_INTERVAL_MS plus SWEEP_SLACK_MS, and
 * dispatch drops a second copy of it without a Redis claim. The test uses libpq only to read the
 * fired reminder, hiredis only to look at and delete keys. */
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "db.h"
#include "dispatch.h"
#include "fixture.h"
#include "fixture_redis.h"
#include "metrics.h"
#include "mirror.h"
#include "mirror_claim.h"
#include "recon.h"
#include "recon_walk.h"
#include "shard.h"

#define HORIZON_MS 3600000
#define WAIT_MS 10000 /* the bound on how long recon may take to repair */
#define N_NEAR 3
#define SWEEP_INTERVAL_MS 1000 /* TOCSIN_RECON_INTERVAL_MS's default: design.md section 4 */
#define SWEEP_SLACK_MS 1500    /* one sweep, one claim, one fire statement: generous */
#define SWEEP_LEAD_MS 1500     /* the reminder falls due this long after it is written */
#define WALK_SHARD 7           /* the shard the walk test fills */
#define WALK_ROWS 2500         /* more than two of the walk's pages */
#define WALK_ROWS_SQL "2500"
#define KICK_ROWS 5000     /* spread over every shard: a walk of several steps and rests */
#define KICK_EVERY_MS 30   /* kicks come faster than a walk ends */
#define KICK_WAIT_MS 30000 /* generous: two walks of KICK_ROWS under ASan */
#define FLAT_ROWS 300000   /* a flat-out walk of them takes seconds (longer than the bound) */
/* Due soon after the loss: fired, by the sweep, long before that walk ends. */
#define FLAT_LEAD_MS 300
#define BULK_FIRST_ID 5000000000LL /* ids of the bulk rows: above any the tests make otherwise */

static char prefix[MIRROR_PREFIX_MAX + 1];
static struct reminder_key near_keys[N_NEAR]; /* due within the horizon: must be mirrored */
static struct reminder_key far_key;           /* beyond the horizon: must not be */

static int64_t
clock_ms(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t
pexpiretime(const struct reminder_key *k)
{
    char key[MIRROR_KEY_MAX];
    const char *argv[] = {"PEXPIRETIME", key};
    redisReply *r;
    int64_t v = INT64_MIN;

    mirror_key_format(key, sizeof key, prefix, k->reminder_id, k->fire_at_ms);
    r = redisCommandArgv(fixture_redis, 2, argv, NULL);
    if (r != NULL && r->type == REDIS_REPLY_INTEGER)
        v = r->integer;
    if (r != NULL)
        freeReplyObject(r);
    return v;
}

static void
del_key(const char *key)
{
    const char *argv[] = {"DEL", key};
    redisReply *r = redisCommandArgv(fixture_redis, 2, argv, NULL);

    if (r != NULL)
        freeReplyObject(r);
}

/* Deletes the reminder keys, and the marker too when with_marker (what FLUSHALL would do). */
/* The replicas of the tests: each has its own marker key. */
static const char *const owners[] = {"recon-a", "recon-b"};

static void
lose_keys(bool with_marker)
{
    char key[MIRROR_KEY_MAX];

    for (size_t i = 0; i < N_NEAR; i++) {
        mirror_key_format(key, sizeof key, prefix, near_keys[i].reminder_id,
                          near_keys[i].fire_at_ms);
        del_key(key);
    }
    for (size_t i = 0; with_marker && i < sizeof owners / sizeof owners[0]; i++) {
        snprintf(key, sizeof key, "%s:recon:marker:%s", prefix, owners[i]);
        del_key(key);
    }
}

/* Polls until every near_keys key has PEXPIRETIME == its fire time; returns the wait in ms or -1.
 */
static int64_t
wait_mirrored(void)
{
    int64_t t0 = clock_ms(CLOCK_MONOTONIC), t;

    while ((t = clock_ms(CLOCK_MONOTONIC) - t0) < WAIT_MS) {
        size_t ok = 0;

        for (size_t i = 0; i < N_NEAR; i++)
            ok += pexpiretime(&near_keys[i]) == near_keys[i].fire_at_ms;
        if (ok == N_NEAR)
            return t;
        usleep(20000);
    }
    return -1;
}

/* Polls until r has completed more than `than` passes: the keys appear during a pass, the count
 * only after it. Returns 0, or -1 after within_ms. */
static int
wait_passes(struct recon *r, uint64_t than, int64_t within_ms)
{
    int64_t t0 = clock_ms(CLOCK_MONOTONIC);

    while (recon_passes(r) <= than)
        if (clock_ms(CLOCK_MONOTONIC) - t0 >= within_ms)
            return -1;
        else
            usleep(20000);
    return 0;
}

/* The reminder's fired_at minus its fire_at in ms, once it is fired; INT64_MIN while it is not
 * (or on error). */
static int64_t
fired_lateness(int64_t reminder_id)
{
    char id[24];
    const char *params[] = {id};
    PGresult *res;
    int64_t late = INT64_MIN;

    snprintf(id, sizeof id, "%" PRId64, reminder_id);
    res = PQexecParams(fixture_raw,
                       "SELECT round(extract(epoch FROM fired_at - fire_at) * 1000)::bigint "
                       "FROM reminders WHERE id = $1 AND status = 'fired'",
                       1, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
        late = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    return late;
}

/* One tenant, a meeting starting in 30 minutes with three reminders, one starting in 3 hours. */
static int
seed(struct db *db)
{
    char err[DB_ERR_MAX];
    int64_t tenant, now = clock_ms(CLOCK_REALTIME);
    static const int minutes[] = {20, 10, 5};

    if (db_migrate(db, err, sizeof err) != 0) {
        CHECK(0, "db_migrate: %s", err);
        return -1;
    }
    if (db_tenant_ensure(db, "itest-recon", &tenant) != DB_ONE_RESULT)
        return -1;
    for (int k = 0; k < 2; k++) {
        struct meeting m;
        size_t nr = k == 0 ? N_NEAR : 1;
        enum db_status st;

        meeting_init(&m);
        if (meeting_new_id(m.id) != 0)
            return -1;
        m.version = 1;
        m.created_at_ms = m.updated_at_ms = now;
        m.title = strdup("recon test");
        m.participants_json = strdup("[]");
        m.starts_at_ms = now + (k == 0 ? 30 : 180) * 60000;
        m.n_reminders = nr;
        for (size_t i = 0; i < nr; i++)
            m.reminders[i] = (struct reminder){.minutes_before = minutes[i]};
        meeting_derive_fire_times(&m);
        st = db_meeting_insert(db, tenant, &m, NULL);
        for (size_t i = 0; i < nr; i++) {
            struct reminder_key rk = {m.reminders[i].id, m.reminders[i].fire_at_ms};
            if (k == 0)
                near_keys[i] = rk;
            else
                far_key = rk;
        }
        meeting_fini(&m);
        CHECK(st == DB_ONE_RESULT, "db_meeting_insert: %s", db_errmsg(db));
        if (st != DB_ONE_RESULT)
            return -1;
    }
    return 0;
}

/* Inserts a meeting whose one reminder (5 minutes before) falls due lead_ms from now; its key. */
static int
insert_due_soon(struct db *db, int64_t lead_ms, struct reminder_key *out)
{
    int64_t tenant, now = clock_ms(CLOCK_REALTIME);
    struct meeting m;
    enum db_status st;

    if (db_tenant_ensure(db, "itest-recon", &tenant) != DB_ONE_RESULT)
        return -1;
    meeting_init(&m);
    if (meeting_new_id(m.id) != 0)
        return -1;
    m.version = 1;
    m.created_at_ms = m.updated_at_ms = now;
    m.title = strdup("sweep test");
    m.participants_json = strdup("[]");
    m.starts_at_ms = now + lead_ms + 5 * 60000;
    m.n_reminders = 1;
    m.reminders[0] = (struct reminder){.minutes_before = 5};
    meeting_derive_fire_times(&m);
    st = db_meeting_insert(db, tenant, &m, NULL);
    *out = (struct reminder_key){m.reminders[0].id, m.reminders[0].fire_at_ms};
    meeting_fini(&m);
    CHECK(st == DB_ONE_RESULT, "db_meeting_insert: %s", db_errmsg(db));
    return st == DB_ONE_RESULT ? 0 : -1;
}

static bool
key_exists(const char *key)
{
    const char *argv[] = {"EXISTS", key};
    redisReply *r = redisCommandArgv(fixture_redis, 2, argv, NULL);
    bool yes = r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer == 1;

    if (r != NULL)
        freeReplyObject(r);
    return yes;
}

/* A second copy of an occurrence d claimed lately (its key expired into an event just before the
 * fire removed it) is dropped by d without a Redis claim: with the claim key deleted, a claim
 * would win again and set it. */
static void
check_seen_dropped(struct dispatch *d, const struct reminder_key *k)
{
    char key[MIRROR_PREFIX_MAX + 64]; /* a claim key: the occurrence key's name and ":claim" */
    uint64_t lost = metrics_get(METRIC_ALREADY_CLAIMED);
    int64_t t0 = clock_ms(CLOCK_MONOTONIC);

    mirror_claim_key(key, sizeof key, prefix, k->reminder_id, k->fire_at_ms);
    CHECK(key_exists(key), "the fired occurrence has no claim key");
    del_key(key);
    CHECK(dispatch_submit(d, k, 1) == 1, "the second copy was refused");
    while (metrics_get(METRIC_ALREADY_CLAIMED) == lost && clock_ms(CLOCK_MONOTONIC) - t0 < WAIT_MS)
        usleep(20000);
    CHECK(metrics_get(METRIC_ALREADY_CLAIMED) == lost + 1, "the second copy was not dropped");
    CHECK(!key_exists(key), "the second copy was claimed in Redis");
}

/* Writes a reminder due lead_ms from now and checks the sweep alone fires it, never early,
 * within one sweep interval plus the slack (what: the case, for the messages). Its key, or
 * reminder_id 0 when it was not written. */
static struct reminder_key
check_swept(struct db *db, const char *what, int64_t lead_ms)
{
    struct reminder_key k = {0};
    int64_t late = INT64_MIN, deadline;

    if (insert_due_soon(db, lead_ms, &k) != 0)
        return (struct reminder_key){0};
    deadline = k.fire_at_ms + SWEEP_INTERVAL_MS + SWEEP_SLACK_MS + WAIT_MS;
    while ((late = fired_lateness(k.reminder_id)) == INT64_MIN &&
           clock_ms(CLOCK_REALTIME) < deadline)
        usleep(20000);
    CHECK(late != INT64_MIN, "%s: not fired %d ms after it was due", what, WAIT_MS);
    if (late == INT64_MIN)
        return (struct reminder_key){0};
    CHECK(late >= 0, "%s: fired %" PRId64 " ms early", what, -late);
    CHECK(late <= SWEEP_INTERVAL_MS + SWEEP_SLACK_MS,
          "%s: fired %" PRId64 " ms late by the sweep alone (bound %d ms)", what, late,
          SWEEP_INTERVAL_MS + SWEEP_SLACK_MS);
    printf("itest_recon: %s: the sweep alone fired it %" PRId64 " ms after due\n", what, late);
    return k;
}

/* A dispatch, and a reconciler feeding it that sweeps every SWEEP_INTERVAL_MS; NULL in *d or the
 * return value when one could not start. */
static struct recon *
start_sweeping(const struct recon_opts *base, const char *url, struct dispatch **d)
{
    struct recon_opts o = *base;
    struct dispatch_opts dopts = {url,  base->mirror, "itest-recon", 30000, 3600000, false,
                                  NULL, NULL,         NULL,          NULL,  NULL};

    *d = dispatch_start(&dopts);
    o.interval_ms = SWEEP_INTERVAL_MS;
    o.full_interval_ms = 3600000;
    o.dispatch = *d;
    struct recon *r = *d != NULL ? recon_start(&o) : NULL;
    CHECK(r != NULL, "dispatch_start or recon_start failed");
    return r;
}

/* Every Redis event lost, no scheduler: nobody listens to this prefix's expired events and only
 * the reconciler feeds dispatch. The reminder must still fire, never early, within one sweep
 * interval plus the slack: the worst case docs/design.md section 4 states. */
static void
test_sweep_bound(const struct recon_opts *base, struct db *db, const char *url)
{
    struct dispatch *d;
    struct recon *r = start_sweeping(base, url, &d);

    if (r != NULL) {
        struct reminder_key k = check_swept(db, "sweep bound", SWEEP_LEAD_MS);
        if (k.reminder_id != 0)
            check_seen_dropped(d, &k);
    }
    recon_stop(r);
    dispatch_stop(d);
}

/* n pending reminders with ids from BULK_FIRST_ID on (so, every shard), 10 ms apart from ten
 * minutes ahead: occurrences of the first near meeting (libpq: the API cannot write so many
 * fast). Returns the rows written. */
static long long
bulk_rows(long n)
{
    static long long next_id = BULK_FIRST_ID; /* each call's rows are new ones */
    char tmpl[24], first[24], count[24];

    snprintf(tmpl, sizeof tmpl, "%" PRId64, near_keys[0].reminder_id);
    snprintf(first, sizeof first, "%lld", next_id);
    next_id += n;
    snprintf(count, sizeof count, "%ld", n);
    /* The record is built in FROM: (f(...)).* in the select list calls f once per column (a
     * 300,000-row insert took 22 s that way, 7 s this way). */
    return fixture_sql(
        "INSERT INTO reminders OVERRIDING SYSTEM VALUE SELECT j.*"
        " FROM reminders r, generate_series(0, $3::int - 1) g,"
        " LATERAL (SELECT date_trunc('second', now()) + interval '10 minutes'"
        "  + g * interval '10 milliseconds' AS f) x,"
        " LATERAL jsonb_populate_record(r, jsonb_build_object('id', $2::bigint + g, 'fire_at', f,"
        "  'original_start', to_timestamp(($2::bigint + g)::float8), 'starts_at', f"
        "  + interval '5 minutes')) j WHERE r.id = $1::bigint",
        tmpl, first, count);
}

static void
bulk_cancel(void)
{
    char first[24];

    snprintf(first, sizeof first, "%lld", BULK_FIRST_ID);
    CHECK(fixture_sql("UPDATE reminders SET status = 'cancelled' WHERE id >= $1::bigint"
                      " AND status = 'pending'",
                      first, NULL, NULL) >= 0,
          "clean-up of the bulk rows");
}

/* Kicks that come faster than a walk ends (a subscriber restarting over and over, reshards): each
 * used to start the walk again from the first shard, and no full pass ended while they came. The
 * walk goes on now, and the one a kick owes begins when it ends. */
static void
test_kicks(const struct recon_opts *base)
{
    struct recon_opts o = *base;

    CHECK(bulk_rows(KICK_ROWS) == KICK_ROWS, "bulk rows");
    o.interval_ms = 3600000;
    o.instance_id = owners[0];
    struct recon *r = recon_start(&o);
    CHECK(r != NULL, "recon_start failed");
    if (r != NULL) {
        CHECK(wait_passes(r, 0, WAIT_MS) == 0, "no start-up pass");
        uint64_t before = recon_passes(r);
        int64_t t0 = clock_ms(CLOCK_MONOTONIC);
        while (recon_passes(r) < before + 2 && clock_ms(CLOCK_MONOTONIC) - t0 < KICK_WAIT_MS) {
            recon_kick(r);
            usleep(KICK_EVERY_MS * 1000);
        }
        CHECK(recon_passes(r) >= before + 2, "%" PRIu64 " passes in %d ms of kicks every %d ms",
              recon_passes(r) - before, KICK_WAIT_MS, KICK_EVERY_MS);
        printf("itest_recon: %" PRIu64 " passes under kicks every %d ms in %" PRId64 " ms\n",
               recon_passes(r) - before, KICK_EVERY_MS, clock_ms(CLOCK_MONOTONIC) - t0);
    }
    recon_stop(r);
    bulk_cancel();
}

/* A walk flat out after a data loss (the marker gone) over FLAT_ROWS pending reminders: the sweep
 * still comes every interval, and comes while the walk goes on (the walk ran to its end first:
 * 4.3-4.7 s without a sweep with 600,000 pending). No pass has ended when the reminder fires:
 * the paced start-up walk of those rows takes far longer than the wait before the loss, and the
 * loss starts the walk again, so the first pass to end is the flat-out one. */
static void
test_flat_out_sweep(const struct recon_opts *base, struct db *db, const char *url)
{
    char marker[MIRROR_KEY_MAX];
    struct dispatch *d;

    CHECK(bulk_rows(FLAT_ROWS) == FLAT_ROWS, "bulk rows");
    struct recon_opts o = *base;
    o.instance_id = owners[1];
    struct recon *r = start_sweeping(&o, url, &d);
    if (r != NULL) {
        usleep(3 * RECON_TICK_MS * 1000); /* it has seen Redis: a loss is one from now on */
        CHECK(recon_passes(r) == 0, "the start-up walk of %d rows ended already", FLAT_ROWS);
        snprintf(marker, sizeof marker, "%s:recon:marker:%s", prefix, owners[1]);
        del_key(marker);
        int64_t t0 = clock_ms(CLOCK_MONOTONIC);
        if (check_swept(db, "during a flat-out walk", FLAT_LEAD_MS).reminder_id != 0)
            CHECK(recon_passes(r) == 0, "the sweep waited for the flat-out walk's end");
        int ended = wait_passes(r, 0, KICK_WAIT_MS);
        printf("itest_recon: the flat-out walk of %d rows took %" PRId64 " ms\n", FLAT_ROWS,
               clock_ms(CLOCK_MONOTONIC) - t0);
        CHECK(ended == 0 && recon_passes(r) == 1, "%" PRIu64 " flat-out walks ended in %d ms",
              recon_passes(r), KICK_WAIT_MS);
    }
    recon_stop(r);
    dispatch_stop(d);
    bulk_cancel();
}

/* With Redis down from the start and the first database connection refused (a role that does
 * not exist yet), the sweep starts once the database lets the reconciler in: nothing but the
 * Redis steps opened the connection before. */
static void
test_sweep_late_db(const struct recon_opts *base, struct db *db, const char *url)
{
    char role[64], sql[128], late_url[FIXTURE_URL_MAX];
    const char *at = strchr(url, '@'), *scheme = strstr(url, "://");
    struct dispatch *d;

    snprintf(role, sizeof role, "itest_recon_late_%ld", (long)getpid());
    CHECK(at != NULL && scheme != NULL && at > scheme, "the test URL names no user: %s", url);
    if (at == NULL || scheme == NULL || at <= scheme)
        return;
    snprintf(late_url, sizeof late_url, "%.*s%s%s", (int)(scheme + 3 - url), url, role, at);
    /* dispatch has the database from the start: it is not the part under test */
    struct dispatch_opts dopts = {url,  base->mirror, "itest-recon", 30000, 3600000, false,
                                  NULL, NULL,         NULL,          NULL,  NULL};
    struct recon_opts o = *base;
    d = dispatch_start(&dopts);
    o.interval_ms = SWEEP_INTERVAL_MS;
    o.full_interval_ms = 3600000;
    o.dispatch = d;
    o.database_url = late_url;
    o.mirror.port = 1; /* nothing listens there: Redis is down for this reconciler */
    struct recon *r = d != NULL ? recon_start(&o) : NULL;
    CHECK(r != NULL, "dispatch_start or recon_start failed");
    usleep(2 * RECON_TICK_MS * 1000); /* its first connection was refused */
    snprintf(sql, sizeof sql, "CREATE ROLE %s LOGIN SUPERUSER", role);
    CHECK(fixture_sql(sql, NULL, NULL, NULL) >= 0, "create the role");
    if (r != NULL)
        check_swept(db, "database late, Redis down", SWEEP_LEAD_MS);
    recon_stop(r);
    dispatch_stop(d);
    snprintf(sql, sizeof sql, "DROP ROLE %s", role);
    CHECK(fixture_sql(sql, NULL, NULL, NULL) >= 0, "drop the role");
}

/* Long interval: only the start-up pass, the marker and kicks can repair within WAIT_MS. */
static void
test_loss_and_kick(const struct recon_opts *base)
{
    struct recon_opts o = *base;
    struct recon *r;
    uint64_t passes;

    o.interval_ms = 3600000;
    o.instance_id = owners[0];
    r = recon_start(&o);
    /* A second replica on the same Redis: a flush must be noticed by each (with one marker key
     * for all, the first to recreate it hid the loss from the other). */
    struct recon_opts o2 = o;
    o2.instance_id = owners[1];
    struct recon *r2 = recon_start(&o2);
    CHECK(r != NULL && r2 != NULL, "recon_start failed");
    if (r == NULL || r2 == NULL) {
        recon_stop(r);
        recon_stop(r2);
        return;
    }
    CHECK(wait_mirrored() >= 0, "start-up pass did not mirror the keys");
    CHECK(pexpiretime(&far_key) == -2, "a reminder beyond the horizon was mirrored");
    CHECK(wait_passes(r, 0, WAIT_MS) == 0 && wait_passes(r2, 0, WAIT_MS) == 0, "no pass counted");
    uint64_t before2 = recon_passes(r2);
    lose_keys(true);
    CHECK(wait_mirrored() >= 0, "keys not restored after the marker vanished");
    CHECK(wait_passes(r, 1, WAIT_MS) == 0, "the repair after the marker vanished was not counted");
    CHECK(wait_passes(r2, before2, WAIT_MS) == 0, "the second replica did not notice the loss");
    recon_stop(r2);
    passes = recon_passes(r);
    lose_keys(false);
    recon_kick(r);
    CHECK(wait_mirrored() >= 0, "keys not restored after a kick");
    CHECK(wait_passes(r, passes, WAIT_MS) == 0, "kick did not count a pass");
    recon_stop(r);
}

/* Short interval: a key deleted without any other sign comes back by the periodic pass. */
static void
test_periodic(const struct recon_opts *base)
{
    struct recon_opts o = *base;
    struct recon *r;
    int64_t took;

    o.interval_ms = 300;
    r = recon_start(&o);
    CHECK(r != NULL, "recon_start failed");
    if (r == NULL)
        return;
    CHECK(wait_mirrored() >= 0, "start-up pass did not mirror the keys");
    lose_keys(false);
    took = wait_mirrored();
    CHECK(took >= 0 && took < 2000, "periodic pass took %" PRId64 " ms", took);
    recon_stop(r);
    lose_keys(true);
}

/* Whether the key of reminder id (fire_at_ms) has that expiry in Redis. */
static bool
armed(int64_t id, int64_t fire_at_ms)
{
    struct reminder_key k = {.reminder_id = id, .fire_at_ms = fire_at_ms};

    return pexpiretime(&k) == fire_at_ms;
}

/* The full pass's walk (recon_walk.h): it arms every pending reminder of the shards it was given,
 * page after page of one shard (more rows than a page in WALK_SHARD), and no other shard's; a
 * walk that rests does nothing until its rest is over. Rows of WALK_SHARD are written with ids
 * chosen for it (libpq: the API cannot choose ids). */
static void
test_walk(const struct recon_opts *base, const char *url)
{
    char err[DB_ERR_MAX], tmpl[24], base_id[24];
    struct db *db = db_open(url, err, sizeof err);
    struct mirror *mi = mirror_new(&base->mirror);
    struct reminder_key *batch = calloc(RECON_WALK_PAGE, sizeof *batch);
    struct recon_walk w;
    struct shard_set shards;
    int64_t first = 1000003LL * SHARD_COUNT + WALK_SHARD;

    CHECK(db != NULL && mi != NULL && batch != NULL, "set-up: %s", db ? "out of memory" : err);
    if (db == NULL || mi == NULL || batch == NULL)
        goto out;
    snprintf(tmpl, sizeof tmpl, "%" PRId64, near_keys[0].reminder_id);
    snprintf(base_id, sizeof base_id, "%" PRId64, first);
    /* WALK_ROWS rows in WALK_SHARD, a second apart from ten minutes ahead, copies of a near one. */
    CHECK(fixture_sql("INSERT INTO reminders OVERRIDING SYSTEM VALUE SELECT j.*"
                      " FROM reminders r, generate_series(0, " WALK_ROWS_SQL " - 1) g,"
                      " LATERAL jsonb_populate_record(r, jsonb_build_object("
                      "  'id', $2::bigint + g * " SHARD_COUNT_SQL ", 'minutes_before', 1000 + g,"
                      "  'fire_at', date_trunc('second', now()) + interval '10 minutes'"
                      "  + g * interval '1 second')) j WHERE r.id = $1::bigint",
                      tmpl, base_id, NULL) == WALK_ROWS,
          "rows of one shard");
    lose_keys(false);
    shard_set_clear(&shards);
    shard_set_add(&shards, WALK_SHARD);
    recon_walk_begin(&w, &shards, clock_ms(CLOCK_REALTIME) + HORIZON_MS, false);
    enum recon_walk_result res = RECON_WALK_MORE;
    int steps = 0;
    while (res == RECON_WALK_MORE && steps++ < 1000) {
        int64_t mono = clock_ms(CLOCK_MONOTONIC);
        if (mono < w.next_ms) {
            CHECK(recon_walk_step(&w, db, mi, batch, mono) == RECON_WALK_MORE && w.active,
                  "a resting walk waits");
            usleep((useconds_t)(w.next_ms - mono) * 1000);
            continue;
        }
        res = recon_walk_step(&w, db, mi, batch, mono);
    }
    CHECK(res == RECON_WALK_DONE && !w.active, "the walk ended: %d after %d steps", (int)res,
          steps);
    CHECK(w.rearmed == WALK_ROWS, "it armed %zu keys, want " WALK_ROWS_SQL, w.rearmed);
    int found = 0;
    for (int64_t g = 0; g < WALK_ROWS; g++) {
        char id[32];
        int64_t id_g = first + g * SHARD_COUNT;
        long long at = fixture_sql("SELECT (extract(epoch FROM fire_at) * 1000)::bigint FROM"
                                   " reminders WHERE id = $1::bigint",
                                   fixture_i64(id, id_g), NULL, NULL);
        found += armed(id_g, at);
    }
    CHECK(found == WALK_ROWS, "%d of " WALK_ROWS_SQL " keys armed with their fire time", found);
    for (size_t i = 0; i < N_NEAR; i++)
        CHECK(near_keys[i].reminder_id % SHARD_COUNT == WALK_SHARD ||
                  pexpiretime(&near_keys[i]) == -2,
              "a reminder of another shard was armed");
    CHECK(fixture_sql("UPDATE reminders SET status = 'cancelled' WHERE id >= $1::bigint", base_id,
                      NULL, NULL) == WALK_ROWS,
          "clean-up");
out:
    free(batch);
    mirror_free(mi);
    db_close(db);
}

/* fixture_main's part: the test database is url (and fixture_raw). */
static void
run(const char *url)
{
    char err[DB_ERR_MAX];
    struct db *db = db_open(url, err, sizeof err);

    CHECK(db != NULL, "db_open: %s", err);
    if (db != NULL && seed(db) == 0) {
        struct recon_opts o = {.database_url = url,
                               .mirror = {.host = fixture_redis_host,
                                          .port = fixture_redis_port,
                                          .db = fixture_redis_db,
                                          .prefix = prefix,
                                          .horizon_ms = HORIZON_MS}};
        test_loss_and_kick(&o);
        test_periodic(&o);
        test_sweep_bound(&o, db, url);
        test_walk(&o, url);
        test_kicks(&o);
        test_flat_out_sweep(&o, db, url);
        test_sweep_late_db(&o, db, url);
    }
    db_close(db);
}

int
main(void)
{
    if (fixture_redis_open() != 0) {
        fixture_redis_close();
        return check_summary("itest_recon");
    }
    snprintf(prefix, sizeof prefix, "itest_recon_%ld_%" PRId64, (long)getpid(),
             clock_ms(CLOCK_REALTIME));
    int rc = fixture_main("itest_recon", run);
    fixture_redis_close();
    return rc;
}
