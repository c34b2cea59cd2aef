/* itest_series.c -- the statements that carry the recurrence guarantees (db_series.c through
 * series_sync.c, and db_meeting_get.c's view of an occurrence), on a real PostgreSQL: a series'
 * first window written once per occurrence and reminder, the write repeated changing nothing (same
 * ids, no keys), the reconciler's extension when due and not before, two connections extending one
 * series at once (each row once), a batch read before a writer's change skipped, a deleted
 * meeting's series dropped, a series turned back into a single meeting leaving no pending
 * occurrence, the notification view of an occurrence, and a read of too many of those refused with
 * its own message and nothing logged. */
#include <pthread.h>
#include <time.h>

#include "db.h"
#include "db_series.h"
#include "fixture.h"
#include "series_sync.h"
#include "stream_body.h"
#include "timefmt.h"

#define DAY_MS 86400000LL
#define HOUR_MS 3600000LL
#define WINDOW_MS (3 * DAY_MS)

static const struct series_sync_params params = {WINDOW_MS, HOUR_MS, 60000};

static long long
count(const char *sql, const char *id)
{
    return fixture_sql(sql, id, NULL, NULL);
}

/* The series' reminder count at or after an instant (fixture_i64 formats it). */
static long long
count_from(const char *id, int64_t from_ms)
{
    char ms[32];
    return fixture_sql("SELECT count(*) FROM reminders WHERE meeting_id = $1"
                       " AND original_start >= 'epoch'::timestamptz + $2::bigint * interval '1 ms'",
                       id, fixture_i64(ms, from_ms), NULL);
}

/* A daily series at the next whole hour in UTC with reminders 10 and 0 minutes before. */
static void
make_series(struct meeting *m, int64_t now)
{
    static const int minutes[] = {10, 0};
    int64_t start = (now / HOUR_MS + 1) * HOUR_MS;

    fixture_meeting(m, "daily", start, minutes, 2);
    m->time_zone = strdup("UTC");
    m->version = 1;
    m->recurrence = calloc(1, sizeof *m->recurrence);
    m->recurrence->rrule = strdup("FREQ=DAILY");
}

static enum db_status
sync_write(struct db *db, int64_t tenant, const struct meeting *m, bool was, int64_t now,
           struct db_series_keys *gone, struct db_series_keys *fresh)
{
    return series_sync_write(db, tenant, m, was, &params, now, gone, fresh, NULL);
}

/* Failures of the modules built on the db layer are on the handle with their own message, not
 * the handle's previous one (here check_too_many's): a stored metadata text jansson cannot read
 * (json keeps 1e400 as written; jansson overflows) makes the stream body unencodable, and a zone
 * that does not exist makes the series unexpandable. */
static void
check_own_errors(struct db *db, int64_t tenant, const struct meeting *m, int64_t rid, int64_t now)
{
    struct db_stream_event ev = {
        1, rid, m->starts_at_ms + DAY_MS, 0, "", NULL, DB_STREAM_REMINDER, NULL, -1, -1};
    char *body = NULL;

    snprintf(ev.meeting_id, sizeof ev.meeting_id, "%s", m->id);
    CHECK(fixture_sql("UPDATE meetings SET metadata = '{\"x\": 1e400}' WHERE id = $1", m->id, NULL,
                      NULL) == 1,
          "unreadable metadata");
    CHECK(stream_bodies(db, &ev, 1, &body) == DB_HARD_ERROR && body == NULL,
          "an unencodable stream body is a hard error");
    CHECK(db_err(db) == DB_HARD_ERROR && strstr(db_errmsg(db), "cannot encode") != NULL &&
              strstr(db_errmsg(db), m->id) != NULL,
          "its message is its own: %s", db_errmsg(db));
    CHECK(fixture_sql("UPDATE meetings SET metadata = NULL WHERE id = $1", m->id, NULL, NULL) == 1,
          "metadata back");

    struct meeting lost = *m;
    lost.time_zone = "Nowhere/Gone";
    CHECK(sync_write(db, tenant, &lost, true, now, NULL, NULL) == DB_HARD_ERROR,
          "an unexpandable series is a hard error");
    CHECK(db_err(db) == DB_HARD_ERROR && strstr(db_errmsg(db), "cannot expand") != NULL,
          "its message is its own: %s", db_errmsg(db));
}

/* A read of more (meeting, reminder) pairs than one statement takes is refused with a message
 * that says so (not "out of memory"), and the db layer logs nothing (db.h): stderr, where log.c
 * writes, goes to a temporary file meanwhile and must stay empty. */
static void
check_too_many(struct db *db, const char *id)
{
    static const char *ids[DB_GET_MANY_MAX + 1];
    static int64_t rids[DB_GET_MANY_MAX + 1];
    static size_t at[DB_GET_MANY_MAX + 1];
    struct db_meeting_list l;
    char path[] = "/tmp/itest_series_XXXXXX", logged[512] = "", said[32];
    int fd = mkstemp(path), saved = dup(STDERR_FILENO);

    for (size_t i = 0; i <= DB_GET_MANY_MAX; i++) {
        ids[i] = id;
        rids[i] = (int64_t)i + 1;
    }
    unlink(path);
    dup2(fd, STDERR_FILENO);
    enum db_status st = db_meeting_get_many_for(db, ids, rids, DB_GET_MANY_MAX + 1, &l, at);
    dup2(saved, STDERR_FILENO);
    close(saved);
    ssize_t n = pread(fd, logged, sizeof logged - 1, 0);
    close(fd);
    CHECK(st == DB_HARD_ERROR && db_err(db) == DB_HARD_ERROR, "too many pairs: %d", (int)st);
    snprintf(said, sizeof said, "%d pairs", DB_GET_MANY_MAX + 1);
    CHECK(strstr(db_errmsg(db), said) != NULL && strstr(db_errmsg(db), "out of memory") == NULL,
          "the error says what went wrong: %s", db_errmsg(db));
    CHECK(n == 0, "the db layer logged: %s", logged);
}

/* The first original start of the stored series id at or after from_ms and the rule times its
 * expansion walked to find it. */
static int64_t
stored_first_from(struct db *db, int64_t tenant, const char *id, int64_t from_ms, size_t *walked)
{
    struct meeting got;
    struct series_gen g = {0};
    int64_t t = -1;

    meeting_init(&got);
    CHECK(db_meeting_get(db, tenant, id, &got, false) == DB_ONE_RESULT && got.recurrence != NULL,
          "read the COUNT series");
    CHECK(got.recurrence != NULL && series_gen_init(&g, &got, from_ms) == 0 &&
              series_gen_next(&g, &t) == 1,
          "expand it from far ahead");
    *walked = g.walked;
    series_gen_fini(&g);
    meeting_fini(&got);
    return t;
}

/* A COUNT rule is read far from its start without walking it from there (issue 35, N4: 300
 * FREQ=DAILY;COUNT=10000 series read 24 years ahead cost 7.5 s of CPU): its write stores its
 * UNTIL equivalent, the instant of the 10,000th day, and a read 24 years on walks a few rule
 * times, not 8,800. A series stored without it (before migration 018) or for another version
 * of the meeting (a replica that predates it wrote the series) gets it from the reconciler's
 * next pass. */
static void
check_count_reads(struct db *db, int64_t tenant, int64_t now)
{
    struct meeting m;
    size_t walked = 0, seen = 0, rows = 0;
    int64_t far, want;

    make_series(&m, now);
    free(m.recurrence->rrule);
    m.recurrence->rrule = strdup("FREQ=DAILY;COUNT=10000");
    CHECK(db_meeting_insert(db, tenant, &m, NULL) == DB_ONE_RESULT, "insert the COUNT series");
    CHECK(sync_write(db, tenant, &m, false, now, NULL, NULL) == DB_ONE_RESULT, "write it");
    CHECK(count("SELECT count(*) FROM series s JOIN meetings m ON m.id = s.meeting_id"
                " WHERE s.meeting_id = $1 AND s.count_until = m.starts_at + interval '9999 days'",
                m.id) == 1,
          "its UNTIL equivalent is the 10,000th day");
    far = m.starts_at_ms + 24 * 365 * DAY_MS + DAY_MS / 2;
    want = m.starts_at_ms + 24 * 365 * DAY_MS + DAY_MS;
    CHECK(stored_first_from(db, tenant, m.id, far, &walked) == want, "the day after 24 years");
    CHECK(walked < 10, "a read 24 years ahead walked %zu rule times", walked);
    CHECK(stored_first_from(db, tenant, m.id, m.starts_at_ms + 9999 * DAY_MS, &walked) ==
              m.starts_at_ms + 9999 * DAY_MS,
          "the last day is the 10,000th");

    /* Stored without it (before migration 018), or for another version of the meeting (written
     * by a replica that predates it, which may have changed the rule): walked from the start,
     * until the reconciler has been by. */
    static const char *const stale[] = {
        "UPDATE series SET count_until = NULL, count_until_version = NULL WHERE meeting_id = $1",
        "UPDATE meetings SET version = version + 1 WHERE id = $1"};
    for (size_t i = 0; i < sizeof stale / sizeof stale[0]; i++) {
        fixture_sql(stale[i], m.id, NULL, NULL);
        fixture_sql("UPDATE series SET extend_after = now() - interval '1 second'"
                    " WHERE meeting_id = $1",
                    m.id, NULL, NULL);
        CHECK(stored_first_from(db, tenant, m.id, far, &walked) == want && walked > 8000,
              "case %zu: without it the rule is walked: %zu", i, walked);
        CHECK(series_sync_extend(db, NULL, &params, now, &seen, &rows) == DB_ONE_RESULT &&
                  seen == 1,
              "case %zu: the reconciler passes over it: %zu", i, seen);
        CHECK(stored_first_from(db, tenant, m.id, far, &walked) == want && walked < 10,
              "case %zu: then a read walks %zu", i, walked);
    }
    meeting_fini(&m);
}

struct racer {
    const char *url;
    int64_t now;
    size_t rows;
    enum db_status st;
};

static void *
race(void *arg)
{
    struct racer *r = arg;
    char err[DB_ERR_MAX];
    struct db *db = db_open(r->url, err, sizeof err);
    size_t seen = 0;

    r->st =
        db != NULL ? series_sync_extend(db, NULL, &params, r->now, &seen, &r->rows) : DB_HARD_ERROR;
    db_close(db);
    return NULL;
}

static void
run(const char *url)
{
    char err[DB_ERR_MAX];
    struct db *db = db_open(url, err, sizeof err);
    struct db_series_keys gone = {0}, fresh = {0};
    struct meeting m;
    int64_t tenant = 0, now = timefmt_now_ms();
    size_t seen = 0, rows = 0, skipped = 0;

    CHECK(db != NULL && db_migrate(db, err, sizeof err) == 0, "migrate: %s", err);
    CHECK(db_tenant_ensure(db, "series", &tenant) == DB_ONE_RESULT, "tenant");
    make_series(&m, now);
    CHECK(db_meeting_insert(db, tenant, &m, NULL) == DB_ONE_RESULT, "insert");

    /* The first window: 3 days ahead (the occurrence at the next hour and the two after), two
     * rows each, all fresh. */
    CHECK(sync_write(db, tenant, &m, false, now, &gone, &fresh) == DB_ONE_RESULT, "first write");
    CHECK(count("SELECT count(*) FROM reminders WHERE meeting_id = $1", m.id) == 6, "6 rows");
    CHECK(fresh.n == 6 && gone.n == 0, "fresh %zu gone %zu", fresh.n, gone.n);
    long long sum = count("SELECT sum(id) FROM reminders WHERE meeting_id = $1", m.id);
    fresh.n = 0;
    CHECK(sync_write(db, tenant, &m, true, now + 1000, &gone, &fresh) == DB_ONE_RESULT, "again");
    CHECK(fresh.n == 0 && gone.n == 0, "repeated write: fresh %zu gone %zu", fresh.n, gone.n);
    CHECK(count("SELECT sum(id) FROM reminders WHERE meeting_id = $1", m.id) == sum, "same ids");

    /* Not due yet: nothing to extend. */
    CHECK(series_sync_extend(db, NULL, &params, now, &seen, &rows) == DB_ONE_RESULT && seen == 0,
          "nothing due, saw %zu", seen);
    /* A day later (extend_after moved into the past), two connections extend it at once. */
    CHECK(fixture_sql("UPDATE series SET extend_after = now() - interval '1 second'", NULL, NULL,
                      NULL) == 1,
          "make due");
    struct racer a = {url, now + DAY_MS, 0, DB_HARD_ERROR}, b = a;
    pthread_t ta, tb;
    pthread_create(&ta, NULL, race, &a);
    pthread_create(&tb, NULL, race, &b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    CHECK(a.st == DB_ONE_RESULT && b.st == DB_ONE_RESULT, "both extensions ran");
    CHECK(a.rows + b.rows == 2, "one new occurrence, written once: %zu + %zu", a.rows, b.rows);
    CHECK(count("SELECT count(*) FROM reminders WHERE meeting_id = $1", m.id) == 8, "8 rows");
    CHECK(count_from(m.id, m.starts_at_ms + 3 * DAY_MS) == 2, "the 4th occurrence's rows");
    CHECK(count("SELECT count(*) FROM (SELECT original_start, minutes_before FROM reminders"
                " WHERE meeting_id = $1 GROUP BY 1, 2 HAVING count(*) > 1) d",
                m.id) == 0,
          "no occurrence twice");
    CHECK(count("SELECT count(*) FROM series WHERE meeting_id = $1 AND extend_after > now()",
                m.id) == 1,
          "not due again");

    /* A batch read before a writer's change is skipped as a whole. */
    struct db_series_extension ext = {&m, tenant, {0}, 0, 0};
    int64_t covered = 0;
    CHECK(series_rows_build(&m, NULL, 0, now + 4 * DAY_MS, now + 6 * DAY_MS, false, now, &ext.rows,
                            &covered) == 0 &&
              ext.rows.n == 4,
          "rows to extend");
    ext.covered_to = covered;
    ext.extend_after = covered;
    CHECK(db_meeting_touch(db, tenant, m.id, now) == DB_ONE_RESULT, "touch");
    CHECK(db_series_extend(db, &ext, 1, &rows, &skipped) == DB_ONE_RESULT && skipped == 1 &&
              rows == 0,
          "stale batch skipped (%zu, %zu)", skipped, rows);
    m.version++;
    CHECK(db_series_extend(db, &ext, 1, &rows, &skipped) == DB_ONE_RESULT && skipped == 0 &&
              rows == 4,
          "current batch written (%zu, %zu)", skipped, rows);
    series_rows_fini(&ext.rows);

    /* The notification view of an occurrence: its own start and reminders. */
    int64_t rid = count("SELECT id FROM reminders WHERE meeting_id = $1 AND minutes_before = 0"
                        " ORDER BY original_start OFFSET 1 LIMIT 1",
                        m.id);
    /* Equal pairs share one entry (one row read), in order of first appearance. */
    const char *ids[] = {m.id, m.id, m.id, "not-an-id", m.id};
    int64_t rids[] = {rid, 999999999, rid, rid, 999999999};
    size_t at[5];
    struct db_meeting_list views = {0};
    CHECK(db_meeting_get_many_for(db, ids, rids, 5, &views, at) == DB_ONE_RESULT && views.n == 3,
          "views: %zu", views.n);
    CHECK(at[0] == 0 && at[1] == 1 && at[2] == 0 && at[3] == 2 && at[4] == 1,
          "entries %zu %zu %zu %zu %zu", at[0], at[1], at[2], at[3], at[4]);
    CHECK(views.n == 3 && views.m[0].is_occurrence &&
              views.m[0].starts_at_ms == m.starts_at_ms + DAY_MS &&
              views.m[0].original_start_ms == m.starts_at_ms + DAY_MS &&
              views.m[0].n_reminders == 2 && views.m[0].recurrence != NULL,
          "occurrence view");
    CHECK(views.n == 3 && !views.m[1].is_occurrence && views.m[1].starts_at_ms == m.starts_at_ms,
          "an unknown reminder sees the series");
    CHECK(views.n == 3 && views.m[2].id[0] == '\0', "an invalid id names no meeting");
    db_meeting_list_fini(&views);
    check_too_many(db, m.id);
    check_own_errors(db, tenant, &m, rid, now);

    /* Back to a single meeting: the pending occurrences go, keys reported; the series row too. */
    free(m.recurrence->rrule);
    free(m.recurrence);
    m.recurrence = NULL;
    struct reminder_keys single_gone = {0};
    gone.n = fresh.n = 0;
    long long pending = count("SELECT count(*) FROM reminders WHERE meeting_id = $1"
                              " AND status = 'pending' AND original_start IS NOT NULL",
                              m.id);
    m.version++;
    CHECK(db_meeting_update(db, tenant, &m, &single_gone) == DB_ONE_RESULT, "update");
    CHECK(sync_write(db, tenant, &m, true, now, &gone, &fresh) == DB_ONE_RESULT, "drop series");
    CHECK((long long)gone.n == pending && pending > 0, "gone %zu of %lld", gone.n, pending);
    CHECK(count("SELECT count(*) FROM reminders WHERE meeting_id = $1 AND status = 'pending'"
                " AND original_start IS NOT NULL",
                m.id) == 0,
          "no pending occurrence left");
    CHECK(count("SELECT count(*) FROM series WHERE meeting_id = $1", m.id) == 0, "series gone");
    meeting_fini(&m);

    /* A deleted series' row is dropped when it comes due, and nothing is extended. */
    make_series(&m, now);
    CHECK(db_meeting_insert(db, tenant, &m, NULL) == DB_ONE_RESULT, "insert 2");
    gone.n = fresh.n = 0;
    CHECK(sync_write(db, tenant, &m, false, now, &gone, &fresh) == DB_ONE_RESULT, "write 2");
    struct reminder_keys del = {0};
    CHECK(db_meeting_delete(db, tenant, m.id, &del) == DB_ONE_RESULT, "delete");
    CHECK(del.n == 6, "the delete reports its pending keys: %zu", del.n);
    fixture_sql("UPDATE series SET extend_after = now() - interval '1 second'", NULL, NULL, NULL);
    CHECK(series_sync_extend(db, NULL, &params, now + DAY_MS, &seen, &rows) == DB_ONE_RESULT &&
              seen == 0,
          "a deleted series is not extended");
    CHECK(count("SELECT count(*) FROM series WHERE meeting_id = $1", m.id) == 0,
          "its series row is gone");
    meeting_fini(&m);
    check_count_reads(db, tenant, now);
    db_series_keys_fini(&gone);
    db_series_keys_fini(&fresh);
    db_close(db);
}

int
main(void)
{
    return fixture_main("itest_series", run);
}
