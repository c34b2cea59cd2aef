/* db_delivery.c -- the statements of db_delivery.h. The search walks outbox_tenant_status
 * (migrations/020) from the newest row of the tenant down, one status's range at a time, and
 * stops at the page's limit: each branch of search_sql below is such a walk, the ones without a
 * status merged by id. q's matching meetings are read once per search through
 * meetings_title_trgm (a hashed subplan), so each row walked costs a hash probe and at most two
 * ILIKEs on its own columns. */
#include "db_delivery.h"

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
/* clang-format on */

_Static_assert(DB_DELIVERY_Q_MAX < 1024, "the pattern's buffer below");

/* q as the ILIKE pattern of a substring: '%' around it, '\', '%' and '_' escaped. */
static void
like_pattern(const char *q, char out[2 * DB_DELIVERY_Q_MAX + 3])
{
    size_t n = 0;

    out[n++] = '%';
    for (size_t i = 0; q[i] != '\0' && i < DB_DELIVERY_Q_MAX; i++) {
        if (q[i] == '\\' || q[i] == '%' || q[i] == '_')
            out[n++] = '\\';
        out[n++] = q[i];
    }
    out[n++] = '%';
    out[n] = '\0';
}

enum db_status
db_delivery_search(struct db *db, int64_t tenant_id, const struct db_delivery_query *query,
                   db_delivery_row_fn fn, void *arg, bool *more)
{
    char tenant[DB_I64_BUF], from[DB_I64_BUF], to[DB_I64_BUF], before[DB_I64_BUF],
        limit[DB_I64_BUF], pattern[2 * DB_DELIVERY_Q_MAX + 3];
    PGresult *res;

    *more = false;
    if (query->q != NULL)
        like_pattern(query->q, pattern);
    const char *params[] = {
        db_i64(tenant, tenant_id),
        query->status,
        query->channel,
        query->webhook_id,
        query->meeting_id,
        query->from_ms != INT64_MIN ? db_ms(from, query->from_ms) : NULL,
        query->to_ms != INT64_MAX ? db_ms(to, query->to_ms) : NULL,
        query->q != NULL ? pattern : NULL,
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
