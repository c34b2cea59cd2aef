/* itest_db.c -- every db_* function against a real PostgreSQL. Needs TOCSIN_TEST_DATABASE_URL (a
 * libpq URI or key=value string for a role that may CREATE DATABASE); fails, never skips, without
 * it. Works in a database of its own (itest_db_<pid>, dropped at the end: fixture.h) so it can run
 * again and next to other tests. libpq is used directly only for poking rows (tampering a
 * checksum, marking a reminder fired, killing a backend). */
#include <inttypes.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "db.h"
#include "db_fire.h"
#include "db_internal.h" /* db_exec_simple, db_exec_generic, db_exec and the statement ids */
#include "db_members.h"
#include "db_migrations.h"
#include "fixture.h"
#include "shard.h"

#define MIN_MS FIXTURE_MIN_MS
#define BASE_MS 1893456000000LL /* 2030-01-01T00:00:00Z */
#define LIST_N 7
#define LIST_PAGE 3
#define MEMBER_TTL_MS 60000

/* ---- fixtures ---- */

static const struct reminder *
find_reminder(const struct meeting *m, int minutes_before)
{
    for (size_t i = 0; i < m->n_reminders; i++) {
        if (m->reminders[i].minutes_before == minutes_before)
            return &m->reminders[i];
    }
    return NULL;
}

static bool
has_key(const struct reminder_keys *k, int64_t id, int64_t fire_at_ms)
{
    for (size_t i = 0; i < k->n; i++) {
        if (k->k[i].reminder_id == id && k->k[i].fire_at_ms == fire_at_ms)
            return true;
    }
    return false;
}

static bool
str_eq(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* ---- migrations ---- */

static void
test_migrate(struct db *db)
{
    char err[DB_ERR_MAX];
    PGresult *res;

    CHECK(db_migrate_current(db) == -1, "fresh database reported current");
    CHECK(db_migrate(db, err, sizeof(err)) == 0, "first migrate: %s", err);
    CHECK(db_migrate(db, err, sizeof(err)) == 0, "second migrate: %s", err);
    CHECK(db_migrate_current(db) == 0, "not current after migrate");
    CHECK(fixture_sql("SELECT count(*) FROM schema_migrations", NULL, NULL, NULL) ==
              (long long)db_migrations_count,
          "schema_migrations rows != %zu", db_migrations_count);
    CHECK(fixture_sql("SELECT count(*) FROM schema_migrations WHERE version = 1 AND name = "
                      "'001_init.sql' AND checksum ~ '^[0-9a-f]{64}$'",
                      NULL, NULL, NULL) == 1,
          "001 not recorded with name and checksum");

    res = PQexec(fixture_raw, "SELECT checksum FROM schema_migrations WHERE version = 1");
    char saved[80] = "";
    if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
        snprintf(saved, sizeof(saved), "%s", PQgetvalue(res, 0, 0));
    PQclear(res);
    fixture_sql("UPDATE schema_migrations SET checksum = 'tampered' WHERE version = 1", NULL, NULL,
                NULL);
    err[0] = '\0';
    CHECK(db_migrate(db, err, sizeof(err)) == -1, "tampered checksum accepted");
    CHECK(strstr(err, "001_init.sql") != NULL, "error does not name the file: %s", err);
    CHECK(db_migrate_current(db) == -1, "tampered checksum reported current");
    fixture_sql("UPDATE schema_migrations SET checksum = $1 WHERE version = 1", saved, NULL, NULL);
    CHECK(db_migrate_current(db) == 0, "not current after restoring the checksum");
    CHECK(db_migrate(db, err, sizeof(err)) == 0, "migrate after restore: %s", err);
}

/* ---- tenants and keys ---- */

struct key_rows {
    int n;
    int live;
    char tenant[TENANT_NAME_MAX + 1];
};

static void
key_row(void *arg, const char *prefix, const char *tenant, int64_t created_at_ms,
        int64_t revoked_at_ms)
{
    struct key_rows *k = arg;

    k->n++;
    k->live += revoked_at_ms == 0;
    snprintf(k->tenant, sizeof(k->tenant), "%s", tenant);
    CHECK(created_at_ms > BASE_MS - 10LL * 365 * 86400000, "created_at %" PRId64, created_at_ms);
    CHECK(strcmp(prefix, "abcd1234") == 0, "prefix %s", prefix);
}

static void
test_keys(struct db *db, int64_t *t1, int64_t *t2)
{
    uint8_t hash[32], other[32];
    int64_t id = 0, again = 0;
    int n = -1;
    struct key_rows rows = {0};

    memset(hash, 0xab, sizeof(hash));
    memset(other, 0xab, sizeof(other));
    other[31] = 0;
    CHECK(db_tenant_ensure(db, "acme", t1) == DB_ONE_RESULT && *t1 > 0, "tenant acme");
    CHECK(db_tenant_ensure(db, "acme", &again) == DB_ONE_RESULT && again == *t1,
          "tenant ensure not idempotent: %" PRId64 " vs %" PRId64, again, *t1);
    CHECK(db_tenant_ensure(db, "globex", t2) == DB_ONE_RESULT && *t2 != *t1, "tenant globex");

    CHECK(db_keys_insert(db, *t1, "abcd1234", hash) == DB_ONE_RESULT, "key insert");
    CHECK(db_keys_insert(db, *t2, "abcd1234", other) == DB_NO_RESULTS, "duplicate prefix accepted");
    CHECK(db_keys_lookup(db, "abcd1234", hash, &id) == DB_ONE_RESULT && id == *t1, "lookup");
    CHECK(db_keys_lookup(db, "abcd1234", other, &id) == DB_NO_RESULTS, "wrong hash found");
    CHECK(db_keys_lookup(db, "ffff0000", hash, &id) == DB_NO_RESULTS, "unknown prefix found");
    CHECK(db_keys_list(db, key_row, &rows) == DB_ONE_RESULT, "key list");
    CHECK(rows.n == 1 && rows.live == 1 && strcmp(rows.tenant, "acme") == 0,
          "key list rows %d live %d tenant %s", rows.n, rows.live, rows.tenant);

    CHECK(db_keys_revoke(db, "", &n) == DB_NO_RESULTS && n == 0, "empty prefix revoked");
    CHECK(db_keys_revoke(db, "abcd", &n) == DB_ONE_RESULT && n == 1, "revoke: n=%d", n);
    CHECK(db_keys_lookup(db, "abcd1234", hash, &id) == DB_NO_RESULTS, "revoked key found");
    CHECK(db_keys_revoke(db, "abcd", &n) == DB_NO_RESULTS && n == 0, "revoked twice");
    memset(&rows, 0, sizeof(rows));
    CHECK(db_keys_list(db, key_row, &rows) == DB_ONE_RESULT && rows.n == 1 && rows.live == 0,
          "revoked key not listed as revoked");
}

/* ---- meetings ---- */

static void
check_same(const struct meeting *want, const struct meeting *got)
{
    CHECK(strcmp(want->id, got->id) == 0, "id %s vs %s", want->id, got->id);
    CHECK(got->version == want->version, "version %" PRId64, got->version);
    CHECK(got->created_at_ms == want->created_at_ms, "created_at %" PRId64, got->created_at_ms);
    CHECK(got->updated_at_ms == want->updated_at_ms, "updated_at %" PRId64, got->updated_at_ms);
    CHECK(got->starts_at_ms == want->starts_at_ms, "starts_at %" PRId64, got->starts_at_ms);
    CHECK(got->has_ends_at == want->has_ends_at &&
              (!want->has_ends_at || got->ends_at_ms == want->ends_at_ms),
          "ends_at");
    CHECK(str_eq(got->title, want->title), "title %s", got->title);
    CHECK(str_eq(got->description, want->description), "description");
    CHECK(str_eq(got->time_zone, want->time_zone), "time_zone");
    CHECK(str_eq(got->location, want->location), "location");
    CHECK(str_eq(got->participants_json, want->participants_json), "participants %s",
          got->participants_json);
    CHECK(str_eq(got->metadata_json, want->metadata_json), "metadata %s", got->metadata_json);
    CHECK(got->n_reminders == want->n_reminders, "n_reminders %zu vs %zu", got->n_reminders,
          want->n_reminders);
    for (size_t i = 0; i < got->n_reminders && i < want->n_reminders; i++) {
        const struct reminder *a = &want->reminders[i], *b = &got->reminders[i];
        CHECK(a->id == b->id && a->minutes_before == b->minutes_before &&
                  a->fire_at_ms == b->fire_at_ms && a->status == b->status &&
                  a->fired_at_ms == b->fired_at_ms,
              "reminder %zu: id %" PRId64 "/%" PRId64 " mb %d/%d status %d/%d", i, a->id, b->id,
              a->minutes_before, b->minutes_before, (int)a->status, (int)b->status);
    }
}

static void
test_insert_get(struct db *db, int64_t t1, int64_t t2)
{
    static const int minutes[] = {60, 10, 0};
    struct meeting m, got, bare;

    fixture_meeting(&m, "Weekly sync \xc3\xa9", BASE_MS + 86400000, minutes, 3);
    m.description = strdup("it's \"quoted\" ?? and \\ backslash");
    m.time_zone = strdup("Europe/Berlin");
    m.location = strdup("Room 1");
    m.has_ends_at = true;
    m.ends_at_ms = m.starts_at_ms + 30 * MIN_MS;
    m.metadata_json = strdup("{\"z\":1,\"a\":[true,null]}");
    CHECK(db_meeting_insert(db, t1, &m, NULL) == DB_ONE_RESULT, "insert: %s", db_errmsg(db));
    CHECK(m.version == 1, "version after insert %" PRId64, m.version);
    for (size_t i = 0; i < m.n_reminders; i++)
        CHECK(m.reminders[i].id > 0, "reminder %zu has no id", i);
    CHECK(m.reminders[0].id != m.reminders[1].id && m.reminders[1].id != m.reminders[2].id,
          "reminder ids not distinct");

    meeting_init(&got);
    CHECK(db_meeting_get(db, t1, m.id, &got, false) == DB_ONE_RESULT, "get");
    check_same(&m, &got);
    meeting_fini(&got);
    CHECK(db_meeting_get(db, t2, m.id, &got, false) == DB_NO_RESULTS, "other tenant sees it");
    CHECK(db_meeting_get(db, t1, "not-a-uuid", &got, false) == DB_NO_RESULTS, "bad id");
    CHECK(db_meeting_get(db, t1, "00000000-0000-4000-8000-000000000000", &got, false) ==
              DB_NO_RESULTS,
          "unknown id found");

    /* No reminders, no optional fields; a reminder inserted as already fired keeps its state. */
    fixture_meeting(&bare, "bare", BASE_MS + 2 * 86400000, NULL, 0);
    CHECK(db_meeting_insert(db, t1, &bare, NULL) == DB_ONE_RESULT, "insert bare");
    CHECK(db_meeting_get(db, t1, bare.id, &got, false) == DB_ONE_RESULT && got.n_reminders == 0 &&
              got.metadata_json == NULL && got.description == NULL && !got.has_ends_at,
          "bare meeting read back wrong");
    meeting_fini(&got);
    meeting_fini(&bare);

    static const int one[] = {5};
    fixture_meeting(&bare, "fired", BASE_MS + 3 * 86400000, one, 1);
    bare.reminders[0].status = REMINDER_FIRED;
    bare.reminders[0].fired_at_ms = BASE_MS + 123;
    CHECK(db_meeting_insert(db, t1, &bare, NULL) == DB_ONE_RESULT, "insert fired");
    CHECK(db_meeting_get(db, t1, bare.id, &got, true) == DB_ONE_RESULT,
          "get for_update outside tx");
    check_same(&bare, &got);
    meeting_fini(&got);
    meeting_fini(&bare);

    /* Duplicate ids are a hard error, not a silent overwrite. */
    CHECK(db_meeting_insert(db, t1, &m, NULL) == DB_HARD_ERROR, "duplicate id accepted");
    meeting_fini(&m);
}

struct update_arg {
    int64_t tenant;
    struct meeting *m;
    struct reminder_keys *gone;
    enum db_status get_st;
};

/* What a PUT handler does: lock, then write. */
static enum db_status
locked_update(struct db *db, void *arg)
{
    struct update_arg *a = arg;
    struct meeting cur;

    meeting_init(&cur);
    a->get_st = db_meeting_get(db, a->tenant, a->m->id, &cur, true);
    meeting_fini(&cur);
    if (a->get_st != DB_ONE_RESULT)
        return a->get_st;
    return db_meeting_update(db, a->tenant, a->m, a->gone);
}

static void
test_update_delete(struct db *db, int64_t t1, int64_t t2)
{
    static const int before[] = {60, 10, 0}, after[] = {10, 5};
    struct meeting m, got;
    struct reminder_keys gone = {0};
    char idbuf[32];

    fixture_meeting(&m, "update me", BASE_MS + 5 * 86400000, before, 3);
    CHECK(db_meeting_insert(db, t1, &m, NULL) == DB_ONE_RESULT, "insert");
    struct reminder r60 = m.reminders[0], r10 = m.reminders[1], r0 = m.reminders[2];
    CHECK(fixture_sql("UPDATE reminders SET status = 'fired', fired_at = now() WHERE id = $1",
                      fixture_i64(idbuf, r10.id), NULL, NULL) == 1,
          "mark fired");

    /* Same start, reminders {10, 5}: 10 keeps id and fired state, 60 and 0 go, 5 is new. */
    free(m.title);
    m.title = strdup("updated");
    m.version = 2;
    m.updated_at_ms = BASE_MS + 5;
    m.n_reminders = 2;
    memset(m.reminders, 0, sizeof(m.reminders));
    m.reminders[0].minutes_before = after[0];
    m.reminders[1].minutes_before = after[1];
    meeting_derive_fire_times(&m);
    CHECK(db_meeting_update(db, t2, &m, &gone) == DB_NO_RESULTS && gone.n == 0,
          "other tenant updated it");
    CHECK(db_meeting_update(db, t1, &m, &gone) == DB_ONE_RESULT, "update: %s", db_errmsg(db));
    CHECK(gone.n == 2 && has_key(&gone, r60.id, r60.fire_at_ms) &&
              has_key(&gone, r0.id, r0.fire_at_ms),
          "gone after first update: n=%zu", gone.n);
    const struct reminder *k10 = find_reminder(&m, 10), *k5 = find_reminder(&m, 5);
    CHECK(m.n_reminders == 2 && m.reminders[0].minutes_before == 10, "result not sorted desc");
    CHECK(k10 && k10->id == r10.id && k10->status == REMINDER_FIRED && k10->fired_at_ms > 0,
          "unchanged reminder lost its id or state");
    CHECK(k5 && k5->id > r60.id && k5->status == REMINDER_PENDING, "new reminder");
    meeting_init(&got);
    CHECK(db_meeting_get(db, t1, m.id, &got, false) == DB_ONE_RESULT, "get after update");
    check_same(&m, &got);
    meeting_fini(&got);

    /* One hour later: both move; only the pending one (5) leaves a gone key; 10 is re-armed. */
    struct reminder old5 = *k5;
    gone.n = 0;
    m.starts_at_ms += 60 * MIN_MS;
    m.version = 3;
    meeting_derive_fire_times(&m);
    struct update_arg ua = {t1, &m, &gone, DB_HARD_ERROR};
    CHECK(db_tx_run(db, locked_update, &ua) == DB_ONE_RESULT, "locked update");
    CHECK(gone.n == 1 && has_key(&gone, old5.id, old5.fire_at_ms), "gone after move: n=%zu",
          gone.n);
    k10 = find_reminder(&m, 10);
    k5 = find_reminder(&m, 5);
    CHECK(k10 && k10->id == r10.id && k10->status == REMINDER_PENDING && k10->fired_at_ms == 0 &&
              k10->fire_at_ms == m.starts_at_ms - 10 * MIN_MS,
          "moved fired reminder not reset to pending");
    CHECK(k5 && k5->id == old5.id && k5->fire_at_ms == m.starts_at_ms - 5 * MIN_MS,
          "moved pending reminder");
    meeting_init(&got);
    CHECK(db_meeting_get(db, t1, m.id, &got, false) == DB_ONE_RESULT, "get after move");
    check_same(&m, &got);
    meeting_fini(&got);

    /* Delete: pending reminders are cancelled and their keys reported; then it is gone. */
    gone.n = 0;
    CHECK(db_meeting_delete(db, t2, m.id, &gone) == DB_NO_RESULTS, "other tenant deleted it");
    CHECK(db_meeting_delete(db, t1, m.id, &gone) == DB_ONE_RESULT, "delete");
    CHECK(gone.n == 2 && has_key(&gone, k10->id, k10->fire_at_ms) &&
              has_key(&gone, k5->id, k5->fire_at_ms),
          "gone after delete: n=%zu", gone.n);
    CHECK(db_meeting_get(db, t1, m.id, &got, false) == DB_NO_RESULTS, "deleted meeting found");
    CHECK(db_meeting_delete(db, t1, m.id, &gone) == DB_NO_RESULTS && gone.n == 2, "deleted twice");
    CHECK(db_meeting_update(db, t1, &m, &gone) == DB_NO_RESULTS, "deleted meeting updated");
    CHECK(fixture_sql("SELECT count(*) FROM reminders WHERE meeting_id = $1::uuid AND status = "
                      "'cancelled'",
                      m.id, NULL, NULL) == 2,
          "reminders not cancelled");
    ua.m = &m;
    CHECK(db_tx_run(db, locked_update, &ua) == DB_NO_RESULTS && ua.get_st == DB_NO_RESULTS,
          "locked update of a deleted meeting");
    meeting_fini(&m);
}

/* ---- listing ---- */

static int
by_start_id(const void *a, const void *b)
{
    const struct meeting *x = a, *y = b;

    if (x->starts_at_ms != y->starts_at_ms)
        return x->starts_at_ms < y->starts_at_ms ? -1 : 1;
    return strcmp(x->id, y->id);
}

static void
test_list(struct db *db, int64_t t1)
{
    static const int one[] = {5};
    struct meeting all[LIST_N], gone_m;
    struct db_list_query q = {.from_ms = INT64_MIN, .to_ms = INT64_MAX, .limit = LIST_PAGE};
    struct db_meeting_list page = {0};
    struct reminder_keys gone = {0};
    int64_t tenant = 0;
    size_t seen = 0;

    CHECK(db_tenant_ensure(db, "lister", &tenant) == DB_ONE_RESULT, "tenant");
    for (int i = 0; i < LIST_N; i++) {
        /* Two meetings share a start so the id has to break the tie. */
        fixture_meeting(&all[i], "listed", BASE_MS + (i == 4 ? 3 : i) * MIN_MS, one, 1);
        CHECK(db_meeting_insert(db, tenant, &all[i], NULL) == DB_ONE_RESULT, "insert %d", i);
    }
    fixture_meeting(&gone_m, "deleted", BASE_MS + 2 * MIN_MS, one, 1);
    CHECK(db_meeting_insert(db, tenant, &gone_m, NULL) == DB_ONE_RESULT &&
              db_meeting_delete(db, tenant, gone_m.id, &gone) == DB_ONE_RESULT,
          "deleted meeting");
    meeting_fini(&gone_m);
    qsort(all, LIST_N, sizeof(all[0]), by_start_id);

    for (int p = 0; p < 4; p++) {
        CHECK(db_meeting_list(db, tenant, &q, &page) == DB_ONE_RESULT, "list page %d", p);
        for (size_t i = 0; i < page.n && seen < LIST_N; i++, seen++) {
            CHECK(strcmp(page.m[i].id, all[seen].id) == 0, "page %d item %zu out of order", p, i);
            CHECK(page.m[i].n_reminders == 1 && page.m[i].reminders[0].id > 0, "reminders");
        }
        bool more = page.more;
        CHECK(more == (seen < LIST_N), "page %d: more=%d after %zu", p, more, seen);
        if (page.n > 0) {
            q.has_after = true;
            q.after_starts_at_ms = page.m[page.n - 1].starts_at_ms;
            memcpy(q.after_id, page.m[page.n - 1].id, sizeof(q.after_id));
        }
        db_meeting_list_fini(&page);
        if (!more)
            break;
    }
    CHECK(seen == LIST_N, "listed %zu of %d", seen, LIST_N);

    /* Bounds: from inclusive, to exclusive. */
    struct db_list_query b = {
        .from_ms = BASE_MS + MIN_MS, .to_ms = BASE_MS + 3 * MIN_MS, .limit = DB_LIST_LIMIT_MAX};
    CHECK(db_meeting_list(db, tenant, &b, &page) == DB_ONE_RESULT && page.n == 2 && !page.more,
          "bounded list: n=%zu", page.n);
    db_meeting_list_fini(&page);
    CHECK(db_meeting_list(db, t1 + 1000000, &q, &page) == DB_ONE_RESULT && page.n == 0,
          "unknown tenant: n=%zu", page.n);
    db_meeting_list_fini(&page);
    b.limit = 0;
    CHECK(db_meeting_list(db, tenant, &b, &page) == DB_HARD_ERROR && page.n == 0, "limit 0");
    b.limit = DB_LIST_LIMIT_MAX + 1;
    CHECK(db_meeting_list(db, tenant, &b, &page) == DB_HARD_ERROR, "limit past max");
    for (int i = 0; i < LIST_N; i++)
        meeting_fini(&all[i]);
}

/* ---- idempotency ---- */

struct idem_arg {
    struct db *other;
    int64_t tenant;
    enum db_status first, second, get_before, put, put_again;
};

static enum db_status
other_lock(struct db *db, void *arg)
{
    struct idem_arg *a = arg;

    return db_idem_lock(db, a->tenant, "req-1");
}

static enum db_status
first_tx(struct db *db, void *arg)
{
    struct idem_arg *a = arg;
    struct db_idem_response resp = {201, "{\"id\":\"x\"}", "/v1/meetings/x", "\"1\""};
    char hash[65];
    struct db_idem_response got;

    a->first = db_idem_lock(db, a->tenant, "req-1");
    /* While this transaction holds the lock, the other connection must not get it. */
    a->second = db_tx_run(a->other, other_lock, a);
    a->get_before = db_idem_get(db, a->tenant, "req-1", hash, &got);
    memset(hash, 'a', 64);
    hash[64] = '\0';
    a->put = db_idem_put(db, a->tenant, "req-1", hash, &resp);
    a->put_again = db_idem_put(db, a->tenant, "req-1", hash, &resp);
    return DB_ONE_RESULT;
}

static void
test_idem(struct db *a, struct db *b, int64_t t1, int64_t t2)
{
    struct idem_arg ia = {b, t1, 0, 0, 0, 0, 0};
    struct db_idem_response got;
    char hash[65];

    CHECK(db_tx_run(a, first_tx, &ia) == DB_ONE_RESULT, "first tx");
    CHECK(ia.first == DB_ONE_RESULT, "first lock %d", ia.first);
    CHECK(ia.second == DB_NO_RESULTS, "second connection got the lock: %d", ia.second);
    CHECK(ia.get_before == DB_NO_RESULTS && ia.put == DB_ONE_RESULT &&
              ia.put_again == DB_NO_RESULTS,
          "get %d put %d put again %d", ia.get_before, ia.put, ia.put_again);
    CHECK(db_tx_run(b, other_lock, &ia) == DB_ONE_RESULT, "lock not released at commit");
    CHECK(db_idem_get(b, t1, "req-1", hash, &got) == DB_ONE_RESULT, "get stored");
    CHECK(got.status == 201 && str_eq(got.body, "{\"id\":\"x\"}") &&
              str_eq(got.location, "/v1/meetings/x") && str_eq(got.etag, "\"1\"") &&
              strspn(hash, "a") == 64,
          "stored response differs");
    db_idem_response_fini(&got);
    CHECK(db_idem_get(b, t2, "req-1", hash, &got) == DB_NO_RESULTS && got.body == NULL,
          "other tenant sees the key");

    struct db_idem_response bare = {200, "{}", NULL, NULL};
    CHECK(db_idem_put(a, t2, "req-1", hash, &bare) == DB_ONE_RESULT, "put without location");
    CHECK(db_idem_get(a, t2, "req-1", hash, &got) == DB_ONE_RESULT && got.location == NULL &&
              got.etag == NULL && got.status == 200,
          "NULL location/etag");
    db_idem_response_fini(&got);
}

/* ---- reminder batches ---- */

static void
test_batch(struct db *db)
{
    static const int three[] = {30, 20, 10};
    struct reminder_key out[DB_DUE_BATCH_MAX];
    struct reminder_keys gone = {0};
    struct meeting m, dead;
    int64_t tenant = 0, start = BASE_MS + 400LL * 86400000; /* later than anything else here */
    size_t n = 99;
    char idbuf[32];

    CHECK(db_tenant_ensure(db, "batcher", &tenant) == DB_ONE_RESULT, "tenant");
    fixture_meeting(&m, "batched", start, three, 3);
    fixture_meeting(&dead, "dead", start, three, 3);
    CHECK(db_meeting_insert(db, tenant, &m, NULL) == DB_ONE_RESULT &&
              db_meeting_insert(db, tenant, &dead, NULL) == DB_ONE_RESULT &&
              db_meeting_delete(db, tenant, dead.id, &gone) == DB_ONE_RESULT,
          "fixtures");
    fixture_sql("UPDATE reminders SET status = 'fired' WHERE id = $1",
                fixture_i64(idbuf, m.reminders[1].id), NULL, NULL);

    /* Pending, live, fire_at > start - 31 min: the 30 and 10 minute reminders, in fire order. */
    int64_t after = start - 31 * MIN_MS;
    CHECK(db_reminder_due_batch(db, NULL, after, 0, INT64_MAX, out, 1, &n) == DB_ONE_RESULT &&
              n == 1 && out[0].reminder_id == m.reminders[0].id &&
              out[0].fire_at_ms == m.reminders[0].fire_at_ms,
          "first batch: n=%zu", n);
    CHECK(db_reminder_due_batch(db, NULL, out[0].fire_at_ms, out[0].reminder_id, INT64_MAX, out, 10,
                                &n) == DB_ONE_RESULT &&
              n == 1 && out[0].reminder_id == m.reminders[2].id,
          "second batch: n=%zu", n);
    CHECK(db_reminder_due_batch(db, NULL, out[0].fire_at_ms, out[0].reminder_id, INT64_MAX, out, 10,
                                &n) == DB_ONE_RESULT &&
              n == 0,
          "third batch not empty: n=%zu", n);
    /* until is inclusive and bounds the walk. */
    CHECK(db_reminder_due_batch(db, NULL, after, 0, m.reminders[0].fire_at_ms, out, 10, &n) ==
                  DB_ONE_RESULT &&
              n == 1,
          "until: n=%zu", n);
    CHECK(db_reminder_due_batch(db, NULL, INT64_MIN, 0, INT64_MAX, out, DB_DUE_BATCH_MAX, &n) ==
                  DB_ONE_RESULT &&
              n >= 2,
          "unbounded walk: n=%zu", n);
    /* Shards: only the owned ones are read; an empty set reads nothing. */
    struct shard_set one, none;
    shard_set_clear(&none);
    shard_set_clear(&one);
    shard_set_add(&one, shard_of(m.reminders[2].id));
    CHECK(db_reminder_due_batch(db, &one, after, 0, INT64_MAX, out, 10, &n) == DB_ONE_RESULT &&
              n == 1 && out[0].reminder_id == m.reminders[2].id,
          "one shard: n=%zu", n);
    CHECK(db_reminder_due_batch(db, &none, INT64_MIN, 0, INT64_MAX, out, 10, &n) == DB_ONE_RESULT &&
              n == 0,
          "no shard: n=%zu", n);
    meeting_fini(&m);
    meeting_fini(&dead);
}

/* Owned shards are read a slice of each at a time and merged up to the earliest slice cut short;
 * paged at any size, the walk is still every owned row once, in (fire_at, id) order. Three shards
 * of 200 rows each, interleaved and tied in time (slices of 64 are cut), and one empty one. */
#define SLICED_ROWS 600
#define SLICED_ID0 9011200 /* a multiple of 256: shard s is SLICED_ID0 + s */

static int
key_order(const void *a, const void *b)
{
    const struct reminder_key *x = a, *y = b;

    if (x->fire_at_ms != y->fire_at_ms)
        return x->fire_at_ms < y->fire_at_ms ? -1 : 1;
    return x->reminder_id < y->reminder_id ? -1 : x->reminder_id > y->reminder_id;
}

/* Pages of size page through the owned shards from far - 1 ms; the count of rows walked. */
static size_t
walk_pages(struct db *db, const struct shard_set *owned, int64_t far, size_t page,
           struct reminder_key *walked)
{
    struct reminder_key out[DB_DUE_BATCH_MAX];
    int64_t at = far - 1, id = 0;
    size_t n = 0, total = 0;

    do {
        if (db_reminder_due_batch(db, owned, at, id, far + 86400000, out, page, &n) !=
            DB_ONE_RESULT)
            return 0;
        for (size_t i = 0; i < n && total < SLICED_ROWS + 1; i++)
            walked[total++] = out[i];
        if (n > 0) {
            at = out[n - 1].fire_at_ms;
            id = out[n - 1].reminder_id;
        }
    } while (n == page && total <= SLICED_ROWS);
    return total;
}

static void
test_shard_slices(struct db *db)
{
    static const int one[] = {10};
    static const size_t pages[] = {1, 7, 100, DB_DUE_BATCH_MAX};
    static struct reminder_key want[SLICED_ROWS], walked[SLICED_ROWS + 1];
    int64_t tenant = 0, far = BASE_MS + 600LL * 86400000; /* after every other test's rows */
    char tid[32], at[32];
    struct shard_set owned;
    struct meeting m;
    size_t n = 0;

    CHECK(db_tenant_ensure(db, "slicer", &tenant) == DB_ONE_RESULT, "tenant");
    fixture_meeting(&m, "sliced", far + 86400000, one, 1);
    CHECK(db_meeting_insert(db, tenant, &m, NULL) == DB_ONE_RESULT, "meeting");
    CHECK(fixture_sql("INSERT INTO reminders (id, meeting_id, tenant_id, minutes_before, fire_at,"
                      " status) OVERRIDING SYSTEM VALUE"
                      " SELECT 9011200 + 256 * k + s, $1::uuid, $2::bigint, 1000 + 3 * k + s - 5,"
                      "  'epoch'::timestamptz + ($3::bigint + CASE s WHEN 5 THEN k"
                      "   WHEN 6 THEN 100 + 2 * k ELSE 150 END) * interval '1 millisecond',"
                      "  'pending' FROM generate_series(0, 199) k, generate_series(5, 7) s",
                      m.id, fixture_i64(tid, tenant), fixture_i64(at, far)) == SLICED_ROWS,
          "sliced rows");
    for (int64_t k = 0; k < 200; k++)
        for (int64_t s = 5; s <= 7; s++)
            want[n++] =
                (struct reminder_key){SLICED_ID0 + 256 * k + s, far + (s == 5   ? k
                                                                       : s == 6 ? 100 + 2 * k
                                                                                : 150)};
    qsort(want, n, sizeof want[0], key_order);
    shard_set_clear(&owned);
    shard_set_add(&owned, 5);
    shard_set_add(&owned, 6);
    shard_set_add(&owned, 7);
    shard_set_add(&owned, 200);
    for (size_t p = 0; p < sizeof pages / sizeof pages[0]; p++) {
        size_t got = walk_pages(db, &owned, far, pages[p], walked);
        size_t same = 0;
        while (same < got && same < SLICED_ROWS && key_order(&walked[same], &want[same]) == 0)
            same++;
        CHECK(got == SLICED_ROWS && same == SLICED_ROWS,
              "pages of %zu: %zu rows walked, the first %zu in order", pages[p], got, same);
    }
    CHECK(fixture_sql("DELETE FROM reminders WHERE id >= 9011200 AND id < 9111200", NULL, NULL,
                      NULL) == SLICED_ROWS,
          "sliced rows removed");
    meeting_fini(&m);
}

/* ---- the fire statement and deleted meetings ---- */

/* A reminder still pending on a deleted meeting (what a DELETE racing a PATCH used to leave, made
 * here by hand) is never fired, whatever the claims and events say; a live one next to it is. */
static void
test_fire_deleted(struct db *db)
{
    static const int one[] = {10};
    struct meeting live, dead;
    struct db_fire_result out = {0};
    /* Due 5 minutes ago by the database's clock, which the fire statement reads. */
    int64_t tenant = 0, start = (int64_t)time(NULL) * 1000 + 5 * MIN_MS;
    char idbuf[32];

    CHECK(db_tenant_ensure(db, "fire-deleted", &tenant) == DB_ONE_RESULT, "tenant");
    fixture_meeting(&live, "live", start, one, 1);
    fixture_meeting(&dead, "dead", start, one, 1);
    CHECK(db_meeting_insert(db, tenant, &live, NULL) == DB_ONE_RESULT &&
              db_meeting_insert(db, tenant, &dead, NULL) == DB_ONE_RESULT,
          "fixtures");
    CHECK(fixture_sql("UPDATE meetings SET deleted_at = now() WHERE id = $1", dead.id, NULL,
                      NULL) == 1,
          "soft-delete without cancelling");
    struct reminder_key k[] = {{dead.reminders[0].id, dead.reminders[0].fire_at_ms},
                               {live.reminders[0].id, live.reminders[0].fire_at_ms}};
    CHECK(db_fire_batch(db, k, 2, 60000, false, NULL, 0, &out) == DB_ONE_RESULT, "fire");
    CHECK(out.n == 1 && out.item[0].reminder_id == live.reminders[0].id,
          "only the live meeting's reminder fired: n=%zu", out.n);
    CHECK(fixture_sql("SELECT count(*) FROM reminders WHERE id = $1 AND status = 'pending'",
                      fixture_i64(idbuf, dead.reminders[0].id), NULL, NULL) == 1,
          "the deleted meeting's reminder was not fired");
    db_fire_result_fini(&out);
    meeting_fini(&live);
    meeting_fini(&dead);
}

/* ---- errors kept on the handle ---- */

/* A statement the server refuses leaves its class and SQLSTATE on the handle (db.c logs nothing),
 * and the next failure replaces them. */
static void
test_errors(struct db *db)
{
    struct meeting m;
    int64_t tenant = 0;

    CHECK(db_tenant_ensure(db, "errors", &tenant) == DB_ONE_RESULT, "tenant");
    fixture_meeting(&m, "", BASE_MS, NULL, 0); /* an empty title violates a CHECK constraint */
    CHECK(db_meeting_insert(db, tenant, &m, NULL) == DB_HARD_ERROR, "empty title inserted");
    CHECK(db_err(db) == DB_HARD_ERROR && strstr(db_errmsg(db), "23514") != NULL &&
              strchr(db_errmsg(db), '\n') == NULL,
          "error on the handle: %d \"%s\"", db_err(db), db_errmsg(db));
    meeting_fini(&m);
}

/* ---- the transaction runner and reconnecting ---- */

struct tx_arg {
    int calls;
    int soft_until; /* return SOFT for calls below this */
    int64_t tenant;
};

static enum db_status
flaky(struct db *db, void *arg)
{
    struct tx_arg *a = arg;
    int64_t id;

    a->calls++;
    if (db_tenant_ensure(db, "rolled-back", &id) != DB_ONE_RESULT)
        return DB_HARD_ERROR;
    return a->calls <= a->soft_until ? DB_SOFT_ERROR : DB_ONE_RESULT;
}

static enum db_status
hard_fail(struct db *db, void *arg)
{
    int64_t id;

    (void)arg;
    db_tenant_ensure(db, "never-committed", &id);
    return DB_HARD_ERROR;
}

/* A failed statement whose error fn ignores: COMMIT then rolls back, which must not pass. */
static enum db_status
swallow(struct db *db, void *arg)
{
    struct meeting m;
    int64_t id;

    (void)arg;
    db_tenant_ensure(db, "swallowed", &id);
    fixture_meeting(&m, "", BASE_MS, NULL, 0); /* empty title violates a CHECK */
    db_meeting_insert(db, id, &m, NULL);
    meeting_fini(&m);
    return DB_ONE_RESULT;
}

/* A server that turned read-only while a session was open (the old primary of a failover, still
 * up) refuses writes with 25006: a soft error after which the handle reconnects, which with a
 * multi-host URL finds the new primary. Here the session, then the database, is read-only. */
static void
test_read_only(struct db *db)
{
    static const char set_db[] = "DO $$BEGIN EXECUTE format('ALTER DATABASE %I SET "
                                 "default_transaction_read_only = on', current_database()); END$$";
    static const char reset_db[] = "DO $$BEGIN EXECUTE format('ALTER DATABASE %I RESET "
                                   "default_transaction_read_only', current_database()); END$$";
    int64_t id = 0;

    CHECK(db_exec_simple(db, "SET default_transaction_read_only = on") == DB_ONE_RESULT,
          "session made read-only: %s", db_errmsg(db));
    CHECK(db_tenant_ensure(db, "read-only-then-not", &id) == DB_SOFT_ERROR &&
              strstr(db_errmsg(db), "25006") != NULL,
          "a write on a read-only session: %d %s", db_err(db), db_errmsg(db));
    CHECK(db_tenant_ensure(db, "read-only-then-not", &id) == DB_ONE_RESULT && id > 0,
          "the next statement is not on a new session: %s", db_errmsg(db));

    /* Every new session read-only too: the ping says so (after trying a new one). */
    fixture_sql(set_db, NULL, NULL, NULL);
    CHECK(db_exec_simple(db, "SET default_transaction_read_only = on") == DB_ONE_RESULT,
          "session made read-only: %s", db_errmsg(db));
    CHECK(db_ping(db) == DB_PING_READ_ONLY && strstr(db_errmsg(db), "read-only") != NULL,
          "ping on a read-only server: %s", db_errmsg(db));
    fixture_sql(reset_db, NULL, NULL, NULL);
    CHECK(db_ping(db) == DB_PING_OK, "ping once the server takes writes: %s", db_errmsg(db));
}

static void
test_tx(struct db *db, struct db *other)
{
    struct tx_arg a = {0, 2, 0};
    char pid[32];

    CHECK(db_tx_run(db, flaky, &a) == DB_ONE_RESULT && a.calls == 3, "soft retried: calls=%d",
          a.calls);
    a = (struct tx_arg){0, 100, 0};
    CHECK(db_tx_run(db, flaky, &a) == DB_SOFT_ERROR && a.calls == 1 + DB_TX_RETRIES_MAX,
          "retries not bounded: calls=%d", a.calls);
    CHECK(db_err(db) == DB_SOFT_ERROR, "the soft error is not on the handle: %d %s", db_err(db),
          db_errmsg(db));
    CHECK(db_tx_run(db, hard_fail, NULL) == DB_HARD_ERROR, "hard error passed");
    CHECK(db_tx_run(db, swallow, NULL) == DB_HARD_ERROR, "swallowed error committed");
    CHECK(db_err(db) == DB_HARD_ERROR && strstr(db_errmsg(db), "rolled back") != NULL,
          "the swallowed error is not on the handle: %d %s", db_err(db), db_errmsg(db));
    CHECK(fixture_sql("SELECT count(*) FROM tenants WHERE name IN ('never-committed', 'swallowed')",
                      NULL, NULL, NULL) == 0,
          "rolled-back work is visible");
    CHECK(db_ping(db) == DB_PING_OK, "ping");

    /* Kill the backend: the next use reconnects and prepared statements are prepared again. */
    PGresult *res = PQexec(fixture_raw, "SELECT pid FROM pg_stat_activity WHERE application_name = "
                                        "'tocsin' AND datname = current_database() AND pid <> "
                                        "pg_backend_pid() ORDER BY backend_start LIMIT 1");
    snprintf(pid, sizeof(pid), "%s",
             PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 ? PQgetvalue(res, 0, 0)
                                                                           : "0");
    PQclear(res);
    CHECK(fixture_sql("SELECT pg_terminate_backend($1::int)::int", pid, NULL, NULL) == 1,
          "terminate backend %s", pid);
    usleep(100000);
    int64_t id = 0;
    enum db_status st = db_tenant_ensure(db, "acme", &id);
    if (st == DB_SOFT_ERROR) /* the handle that was killed learns it on this call */
        st = db_tenant_ensure(db, "acme", &id);
    CHECK(st == DB_ONE_RESULT && id > 0, "statement after reconnect: %d", st);
    CHECK(db_ping(db) == DB_PING_OK && db_ping(other) == DB_PING_OK, "ping after reconnect");
    test_read_only(db);
}

/* ---- generic plans ---- */

struct plan_seen {
    char mode[32];
    long long generic; /* runs of the meeting insert with its generic plan, on this session */
};

/* What the handle's own session says: its plan_cache_mode and pg_prepared_statements' count. */
static enum db_status
plan_read(struct db *db, struct plan_seen *out)
{
    char name[32];
    const char *params[] = {name};
    PGresult *res;

    snprintf(name, sizeof name, "tocsin_%d", (int)STMT_MEETING_INSERT);
    enum db_status st = db_exec(db, DB_STMT_UNPREPARED,
                                "SELECT current_setting('plan_cache_mode'), coalesce((SELECT"
                                " generic_plans FROM pg_prepared_statements WHERE name = $1), 0)",
                                1, params, &res);
    if (st != DB_ONE_RESULT)
        return st;
    snprintf(out->mode, sizeof out->mode, "%s", PQgetvalue(res, 0, 0));
    out->generic = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
    PQclear(res);
    return DB_ONE_RESULT;
}

struct generic_tx {
    struct meeting *m;
    int64_t tenant;
    struct plan_seen after;
};

static enum db_status
insert_then_read(struct db *db, void *arg)
{
    struct generic_tx *g = arg;
    enum db_status st = db_meeting_insert(db, g->tenant, g->m, NULL);

    return st != DB_ONE_RESULT ? st : plan_read(db, &g->after);
}

/* db_meeting_insert runs with a generic plan (db_exec_generic) and leaves the session planning
 * each run, in autocommit and inside a transaction, after a failed insert too. */
static void
test_generic(struct db *db, int64_t t1)
{
    static const int minutes[] = {15, 5};
    struct meeting m, again;
    struct plan_seen before = {0}, after = {0};
    struct generic_tx g = {&again, t1, {{0}, 0}};

    CHECK(plan_read(db, &before) == DB_ONE_RESULT, "read plans: %s", db_errmsg(db));
    fixture_meeting(&m, "generic", BASE_MS + 5 * 86400000, minutes, 2);
    CHECK(db_meeting_insert(db, t1, &m, NULL) == DB_ONE_RESULT && m.reminders[0].id > 0 &&
              m.reminders[1].id > 0,
          "insert: %s", db_errmsg(db));
    CHECK(plan_read(db, &after) == DB_ONE_RESULT, "read plans: %s", db_errmsg(db));
    CHECK(strcmp(after.mode, "force_custom_plan") == 0, "autocommit left mode %s", after.mode);
    CHECK(after.generic == before.generic + 1, "generic runs %lld after %lld", after.generic,
          before.generic);
    CHECK(fixture_sql("SELECT count(*) FROM reminders WHERE meeting_id = $1", m.id, NULL, NULL) ==
              2,
          "the insert did not commit its reminders");

    CHECK(db_meeting_insert(db, t1, &m, NULL) == DB_HARD_ERROR, "a second insert of one id passed");
    CHECK(plan_read(db, &after) == DB_ONE_RESULT && strcmp(after.mode, "force_custom_plan") == 0,
          "after a failed insert: %s %s", after.mode, db_errmsg(db));

    fixture_meeting(&again, "generic in a transaction", BASE_MS + 6 * 86400000, minutes, 2);
    CHECK(db_tx_run(db, insert_then_read, &g) == DB_ONE_RESULT, "tx: %s", db_errmsg(db));
    CHECK(strcmp(g.after.mode, "force_custom_plan") == 0, "the transaction went on with mode %s",
          g.after.mode);
    CHECK(fixture_sql("SELECT count(*) FROM meetings WHERE id = $1", again.id, NULL, NULL) == 1,
          "the transaction's insert is not there");
    meeting_fini(&m);
    meeting_fini(&again);
}

/* ---- session settings ---- */

/* current_setting(name) on the handle's own session, into out. */
static enum db_status
setting_read(struct db *db, const char *name, char *out, size_t len)
{
    const char *params[] = {name};
    PGresult *res;
    enum db_status st =
        db_exec(db, DB_STMT_UNPREPARED, "SELECT current_setting($1)", 1, params, &res);

    if (st != DB_ONE_RESULT)
        return st;
    snprintf(out, len, "%s", PQgetvalue(res, 0, 0));
    PQclear(res);
    return DB_ONE_RESULT;
}

/* Both kinds of session run without JIT, a session made again after its backend was killed too
 * (test_tx ran on db). */
static void
test_session_jit(const char *url, struct db *db)
{
    char err[DB_ERR_MAX], jit[16] = "", in_order_jit[16] = "", seqscan[16] = "";
    struct db *in_order = db_open_in_order(url, err, sizeof err);

    CHECK(setting_read(db, "jit", jit, sizeof jit) == DB_ONE_RESULT && strcmp(jit, "off") == 0,
          "jit on a reconnected session: '%s' %s", jit, db_errmsg(db));
    CHECK(in_order != NULL, "db_open_in_order: %s", err);
    if (in_order == NULL)
        return;
    CHECK(setting_read(in_order, "jit", in_order_jit, sizeof in_order_jit) == DB_ONE_RESULT &&
              strcmp(in_order_jit, "off") == 0,
          "jit on an in-order session: '%s' %s", in_order_jit, db_errmsg(in_order));
    CHECK(setting_read(in_order, "enable_seqscan", seqscan, sizeof seqscan) == DB_ONE_RESULT &&
              strcmp(seqscan, "off") == 0,
          "the in-order session's own settings: enable_seqscan '%s'", seqscan);
    db_close(in_order);
}

/* ---- setup ---- */

/* ---- membership ---- */

struct seen {
    int n;
    char ids[4][DB_MEMBER_ID_MAX + 1];
};

static void
see_member(void *arg, const char *instance_id)
{
    struct seen *s = arg;

    if (s->n < 4)
        snprintf(s->ids[s->n], sizeof s->ids[0], "%s", instance_id);
    s->n++;
}

/* The replicas a heartbeat of self on db sees, with a TTL far longer than the test. */
static struct seen
beat(struct db *db, const char *self)
{
    struct seen s = {0};

    CHECK(db_members_beat(db, self, MEMBER_TTL_MS, see_member, &s) == DB_ONE_RESULT, "beat: %s",
          db_errmsg(db));
    return s;
}

/* A heartbeat names its backend (migrations/015): a replica whose connection closed (killed) is
 * not live any more however young its heartbeat, so its shards move at the next beat. */
static void
test_member_backend(const char *url, struct db *db)
{
    char err[DB_ERR_MAX];
    struct db *other = db_open(url, err, sizeof err);

    CHECK(other != NULL, "connect: %s", err);
    if (other == NULL)
        return;
    struct seen s = beat(other, "m-a");
    s = beat(db, "m-b");
    CHECK(s.n == 2 && strcmp(s.ids[0], "m-a") == 0 && strcmp(s.ids[1], "m-b") == 0,
          "both live: %d seen", s.n);
    db_close(other);
    CHECK(fixture_sql_reaches_zero("SELECT count(*) FROM pg_stat_activity a JOIN replicas r"
                                   " ON a.pid = r.backend_pid WHERE r.instance_id = 'm-a'",
                                   NULL),
          "the closed connection's backend did not exit");
    s = beat(db, "m-b");
    CHECK(s.n == 1 && strcmp(s.ids[0], "m-b") == 0,
          "a replica whose backend is gone is not live: %d seen", s.n);
    CHECK(fixture_sql("SELECT count(*) FROM replicas WHERE instance_id = 'm-a'"
                      " AND heartbeat_at > now() - interval '30 seconds'",
                      NULL, NULL, NULL) == 1,
          "its heartbeat is young");
    CHECK(db_members_leave(db, "m-a") == DB_ONE_RESULT &&
              db_members_leave(db, "m-b") == DB_ONE_RESULT,
          "leave");
}

/* One TCP option of fd, or -1. */
static int
sockopt(int fd, int level, int name)
{
    int v = -1;
    socklen_t len = sizeof v;

    return getsockopt(fd, level, name, &v, &len) == 0 ? v : -1;
}

/* Every connection has keepalives and a user timeout on its socket, each overridden by the URL
 * when it names one. */
static void
test_tcp_options(const char *url)
{
    char err[DB_ERR_MAX], own[1200];
    struct db *db = db_open(url, err, sizeof err);
    int fd = db_socket(db);

    CHECK(fd >= 0, "connect: %s", err);
    if (fd >= 0) {
        CHECK(sockopt(fd, SOL_SOCKET, SO_KEEPALIVE) == 1, "keepalive off");
        CHECK(sockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE) == DB_KEEPALIVE_IDLE_S, "idle %d",
              sockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE));
        CHECK(sockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL) == DB_KEEPALIVE_INTERVAL_S, "interval %d",
              sockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL));
        CHECK(sockopt(fd, IPPROTO_TCP, TCP_KEEPCNT) == DB_KEEPALIVE_COUNT, "count %d",
              sockopt(fd, IPPROTO_TCP, TCP_KEEPCNT));
        CHECK(sockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT) == DB_TCP_USER_TIMEOUT_MS,
              "user timeout %d", sockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT));
    }
    db_close(db);
    /* A URI takes query parameters, a key=value string more pairs. */
    bool uri = strncmp(url, "postgres", 8) == 0;
    snprintf(own, sizeof own, "%s%skeepalives_idle=7%stcp_user_timeout=0", url,
             !uri               ? " "
             : strchr(url, '?') ? "&"
                                : "?",
             uri ? "&" : " ");
    db = db_open(own, err, sizeof err);
    fd = db_socket(db);
    CHECK(fd >= 0, "connect with the URL's own settings: %s", err);
    if (fd >= 0)
        CHECK(sockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE) == 7 &&
                  sockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT) == 0 &&
                  sockopt(fd, IPPROTO_TCP, TCP_KEEPCNT) == DB_KEEPALIVE_COUNT,
              "the URL's settings not taken: idle %d, user timeout %d",
              sockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE), sockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT));
    db_close(db);
}

static void
run(const char *url)
{
    char err[DB_ERR_MAX];
    int64_t t1 = 0, t2 = 0;
    struct db *a = db_open(url, err, sizeof(err));
    struct db *b = a ? db_open(url, err, sizeof(err)) : NULL;

    if (a == NULL || b == NULL) {
        CHECK(0, "cannot connect to the test database: %s", err);
        goto out;
    }
    CHECK(db_open("postgresql://127.0.0.1:1/none", err, sizeof(err)) == NULL && err[0] != '\0',
          "open of a closed port succeeded");
    test_migrate(a);
    test_keys(a, &t1, &t2);
    test_insert_get(a, t1, t2);
    test_update_delete(a, t1, t2);
    test_list(a, t1);
    test_idem(a, b, t1, t2);
    test_batch(a);
    test_shard_slices(a);
    test_fire_deleted(a);
    test_errors(a);
    test_tx(a, b);
    test_generic(a, t1);
    test_session_jit(url, a);
    test_member_backend(url, a);
    test_tcp_options(url);
out:
    db_close(a);
    db_close(b);
}

int
main(void)
{
    return fixture_main("itest_db", run);
}
