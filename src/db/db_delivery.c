/* db_delivery.c -- the statements of db_delivery.h. The search walks outbox_tenant_status
 * (migrations/020) from the newest row of the tenant down, one status's range at a time, and
 * stops at the page's limit: each branch of search_sql below is such a walk, the ones without a
 * status merged by id. q's matching meetings are read once per search through
 * meetings_title_trgm (a hashed subplan), so each row walked costs a hash probe and at most two
 * ILIKEs on its own columns. */
#include "db_delivery.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_internal.h"

/* clang-format off */
#define SEARCH_COLUMNS                                                                             \
    "o.id, o.reminder_id, " DB_MS("o.fire_at") " AS fire_ms, o.webhook_id, o.status, o.attempts," \
    " coalesce(o.last_status, 0) AS last_status, o.last_error, "                                   \
    DB_MS("o.next_attempt_at") " AS next_ms, coalesce(" DB_MS("o.delivered_at") ", 0) AS done_ms," \
    " o.meeting_id, o.channel, o.recipient"
/* $1 tenant, $3 channel, $4 webhook, $5 meeting, $6 from, $7 to (ms), $8 q as an ILIKE pattern,
 * $9 the cursor's id, $10 the rows wanted. NULL leaves a filter out. */
#define SEARCH_FILTERS                                                                             \
    " o.tenant_id = $1::bigint AND o.id < $9::bigint"                                              \
    " AND ($3::text IS NULL OR o.channel = $3::text)"                                              \
    " AND ($4::uuid IS NULL OR o.webhook_id = $4::uuid)"                                           \
    " AND ($5::uuid IS NULL OR o.meeting_id = $5::uuid)"                                           \
    " AND ($6::bigint IS NULL OR o.fire_at >= " DB_TS("$6") ")"                                    \
    " AND ($7::bigint IS NULL OR o.fire_at < " DB_TS("$7") ")"                                     \
    " AND ($8::text IS NULL OR o.recipient ILIKE $8::text OR o.last_error ILIKE $8::text"          \
    "      OR o.meeting_id IN (SELECT m.id FROM meetings m WHERE m.tenant_id = $1::bigint"         \
    "                          AND m.title ILIKE $8::text))"
#define SEARCH_BRANCH(status)                                                                      \
    "(SELECT " SEARCH_COLUMNS " FROM outbox o WHERE " status " AND" SEARCH_FILTERS                 \
    " ORDER BY o.id DESC LIMIT $10::int)"
/* $2 the status, or NULL for all of them: the branches whose condition on $2 is false are
 * one-time filters, never run. */
static const char search_sql[] =
    "SELECT s.*, m.title FROM ("
    SEARCH_BRANCH("$2::text IS NOT NULL AND o.status = $2::text")
    " UNION ALL " SEARCH_BRANCH("$2::text IS NULL AND o.status = 'pending'")
    " UNION ALL " SEARCH_BRANCH("$2::text IS NULL AND o.status = 'delivered'")
    " UNION ALL " SEARCH_BRANCH("$2::text IS NULL AND o.status = 'failed'")
    " ORDER BY id DESC LIMIT $10::int) s"
    " LEFT JOIN meetings m ON m.id = s.meeting_id"
    " ORDER BY s.id DESC";
/* One row per kept attempt (or one with NULL attempt columns when none was made yet). */
static const char get_sql[] =
    "SELECT " SEARCH_COLUMNS ", m.title, a.n, " DB_MS("a.at") ", a.outcome,"
    "  coalesce(a.http_status, 0), a.duration_ms, a.error, a.instance"
    " FROM outbox o LEFT JOIN meetings m ON m.id = o.meeting_id"
    " LEFT JOIN LATERAL (SELECT * FROM delivery_attempts x WHERE x.outbox_id = o.id"
    "  ORDER BY x.n DESC LIMIT " DB_OUTBOX_ATTEMPTS_KEPT_TEXT ") a ON true"
    " WHERE o.id = $2::bigint AND o.tenant_id = $1::bigint"
    " ORDER BY a.n";
/* A retry: due at once, unleased, its delivered_at cleared; the row's lock taken first, so that
 * the status read is the one the update saw. */
static const char retry_sql[] =
    "WITH t AS (SELECT id, status, channel FROM outbox"
    "  WHERE id = $2::bigint AND tenant_id = $1::bigint FOR UPDATE),"
    " u AS (UPDATE outbox o SET status = 'pending', next_attempt_at = now(), lease_owner = NULL,"
    "  delivered_at = NULL FROM t WHERE o.id = t.id AND t.status <> 'pending'"
    "  AND t.channel <> 'stream' RETURNING o.id)"
    " SELECT t.status, (SELECT count(*) FROM u) FROM t";
/* Due from now a microsecond apart in fire order, so the claim (which walks outbox_pending_due
 * by next_attempt_at) sends them in that order. The failed rows are found along
 * outbox_tenant_status. */
static const char recover_sql[] =
    "WITH w AS (SELECT id, disabled_at IS NOT NULL AS off FROM webhooks WHERE id = $2::uuid"
    "  AND tenant_id = $1::bigint AND deleted_at IS NULL),"
    " c AS (SELECT o.id, o.fire_at FROM outbox o WHERE o.tenant_id = $1::bigint"
    "  AND o.status = 'failed' AND o.webhook_id = (SELECT id FROM w WHERE NOT off)"
    "  AND o.fire_at >= " DB_TS("$3") " ORDER BY o.fire_at, o.id LIMIT $4::int"
    "  FOR UPDATE SKIP LOCKED),"
    " r AS (SELECT id, row_number() OVER (ORDER BY fire_at, id) AS k FROM c),"
    " u AS (UPDATE outbox o SET status = 'pending', lease_owner = NULL,"
    "  next_attempt_at = now() + r.k * interval '1 microsecond'"
    "  FROM r WHERE o.id = r.id AND o.status = 'failed' RETURNING 1)"
    " SELECT (SELECT count(*) FROM w), (SELECT count(*) FROM u), (SELECT bool_or(off) FROM w)";
/* clang-format on */

enum db_status
db_delivery_search(struct db *db, int64_t tenant_id, const struct db_delivery_query *query,
                   db_delivery_row_fn fn, void *arg, bool *more)
{
    char tenant[DB_I64_BUF], from[DB_I64_BUF], to[DB_I64_BUF], before[DB_I64_BUF],
        limit[DB_I64_BUF], pattern[DB_LIKE_BUF];
    PGresult *res;

    *more = false;
    const char *params[] = {
        db_i64(tenant, tenant_id),
        query->status,
        query->channel,
        query->webhook_id,
        query->meeting_id,
        query->from_ms != INT64_MIN ? db_ms(from, query->from_ms) : NULL,
        query->to_ms != INT64_MAX ? db_ms(to, query->to_ms) : NULL,
        query->q != NULL ? db_like_pattern(query->q, pattern) : NULL,
        db_i64(before, query->before_id),
        db_i64(limit, (int64_t)query->limit + 1),
    };
    enum db_status st = db_exec(db, STMT_DELIVERY_SEARCH, search_sql, 10, params, &res);
    if (st != DB_ONE_RESULT)
        return st;
    *more = (size_t)PQntuples(res) > query->limit;
    for (int row = 0; row < PQntuples(res) && (size_t)row < query->limit; row++) {
        struct db_delivery d;
        db_outbox_delivery_row(res, row, &d);
        d.meeting_title = PQgetisnull(res, row, 13) ? NULL : PQgetvalue(res, row, 13);
        fn(arg, &d);
    }
    PQclear(res);
    return DB_ONE_RESULT;
}

enum db_status
db_delivery_get(struct db *db, int64_t tenant_id, int64_t id, db_delivery_row_fn fn,
                db_delivery_attempt_fn afn, void *arg)
{
    char tenant[DB_I64_BUF], key[DB_I64_BUF];
    const char *params[] = {db_i64(tenant, tenant_id), db_i64(key, id)};
    PGresult *res;
    enum db_status st = db_exec(db, STMT_DELIVERY_GET, get_sql, 2, params, &res);

    if (st != DB_ONE_RESULT)
        return st;
    if (PQntuples(res) == 0) {
        PQclear(res);
        return DB_NO_RESULTS;
    }
    struct db_delivery d;
    db_outbox_delivery_row(res, 0, &d);
    d.meeting_title = PQgetisnull(res, 0, 13) ? NULL : PQgetvalue(res, 0, 13);
    fn(arg, &d);
    for (int row = 0; row < PQntuples(res) && !PQgetisnull(res, row, 14); row++) {
        struct db_delivery_attempt a = {
            .n = (int)db_get_i64(res, row, 14),
            .at_ms = db_get_i64(res, row, 15),
            .outcome = PQgetvalue(res, row, 16),
            .http_status = (int)db_get_i64(res, row, 17),
            .duration_ms = db_get_i64(res, row, 18),
            .error = PQgetisnull(res, row, 19) ? NULL : PQgetvalue(res, row, 19),
            .instance = PQgetvalue(res, row, 20),
        };
        afn(arg, &a);
    }
    PQclear(res);
    return DB_ONE_RESULT;
}

enum db_status
db_delivery_retry(struct db *db, int64_t tenant_id, int64_t id, char was[DB_DELIVERY_STATUS_MAX],
                  bool *queued)
{
    char tenant[DB_I64_BUF], key[DB_I64_BUF];
    const char *params[] = {db_i64(tenant, tenant_id), db_i64(key, id)};
    PGresult *res;
    enum db_status st = db_exec(db, STMT_DELIVERY_RETRY, retry_sql, 2, params, &res);

    *queued = false;
    was[0] = '\0';
    if (st != DB_ONE_RESULT)
        return st;
    st = PQntuples(res) == 1 ? DB_ONE_RESULT : DB_NO_RESULTS;
    if (st == DB_ONE_RESULT) {
        snprintf(was, DB_DELIVERY_STATUS_MAX, "%s", PQgetvalue(res, 0, 0));
        *queued = db_get_i64(res, 0, 1) == 1;
    }
    PQclear(res);
    return st;
}

enum db_status
db_delivery_recover(struct db *db, int64_t tenant_id, const char *webhook_id, int64_t since_ms,
                    int64_t *queued, bool *disabled)
{
    char tenant[DB_I64_BUF], since[DB_I64_BUF], max[DB_I64_BUF];
    const char *params[] = {db_i64(tenant, tenant_id), webhook_id, db_ms(since, since_ms),
                            db_i64(max, DB_DELIVERY_RECOVER_MAX)};
    PGresult *res;

    *queued = 0;
    *disabled = false;
    if (!meeting_id_valid(webhook_id))
        return DB_NO_RESULTS;
    enum db_status st = db_exec(db, STMT_DELIVERY_RECOVER, recover_sql, 4, params, &res);
    if (st != DB_ONE_RESULT)
        return st;
    st = PQntuples(res) == 1 && db_get_i64(res, 0, 0) == 1 ? DB_ONE_RESULT : DB_NO_RESULTS;
    *queued = st == DB_ONE_RESULT ? db_get_i64(res, 0, 1) : 0;
    *disabled = st == DB_ONE_RESULT && PQgetvalue(res, 0, 2)[0] == 't';
    PQclear(res);
    return st;
}
