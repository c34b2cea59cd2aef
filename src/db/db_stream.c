/* db_stream.c -- the statements of db_stream.h. Events are read along the primary key
 * (tenant_id, seq); the audience filter of a participant's reads is applied to that range. */
#include "db_stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_internal.h"

/* clang-format off */
static const char heads_sql[] =
    "SELECT t.id, coalesce(h.seq, 0), coalesce(h.purged_through, 0)"
    " FROM unnest($1::bigint[]) AS t(id) LEFT JOIN stream_heads h ON h.tenant_id = t.id";

#define EVENT_COLUMNS \
    "e.seq, e.reminder_id, " DB_MS("e.fire_at") ", " DB_MS("e.fired_at") ", e.meeting_id," \
    " array_to_json(e.audience)::text"

static const char events_sql[] =
    "SELECT " EVENT_COLUMNS " FROM stream_events e"
    " WHERE e.tenant_id = $1::bigint AND e.seq > $2::bigint AND e.seq <= $3::bigint"
    " AND ($4::text IS NULL OR e.audience @> ARRAY[$4::text])"
    " ORDER BY e.seq LIMIT $5::int";

static const char latest_sql[] =
    "SELECT * FROM (SELECT " EVENT_COLUMNS " FROM stream_events e"
    "  WHERE e.tenant_id = $1::bigint AND e.audience @> ARRAY[$2::text]"
    "  ORDER BY e.seq DESC LIMIT $3::int) x ORDER BY 1";
/* clang-format on */

enum db_status
db_stream_heads(struct db *db, const int64_t *ids, size_t n, struct db_stream_head *out)
{
    PGresult *res;

    if (n == 0 || n > DB_STREAM_HEADS_MAX) {
        db_set_err(db, "stream heads of %zu tenants (allowed 1..%d)", n, DB_STREAM_HEADS_MAX);
        return DB_HARD_ERROR;
    }
    char *arr = db_array_i64(ids, n);
    const char *params[] = {arr};
    if (arr == NULL) {
        db_set_err(db, "out of memory");
        return DB_HARD_ERROR;
    }
    enum db_status st = db_exec(db, STMT_STREAM_HEADS, heads_sql, 1, params, &res);
    free(arr);
    if (st != DB_ONE_RESULT)
        return st;
    for (int row = 0; row < PQntuples(res) && (size_t)row < n; row++) {
        out[row].tenant_id = db_get_i64(res, row, 0);
        out[row].seq = db_get_i64(res, row, 1);
        out[row].purged_through = db_get_i64(res, row, 2);
    }
    st = (size_t)PQntuples(res) == n ? DB_ONE_RESULT : DB_HARD_ERROR;
    if (st != DB_ONE_RESULT)
        db_set_err(db, "stream heads: %d rows for %zu tenants", PQntuples(res), n);
    PQclear(res);
    return st;
}

static enum db_status
read_events(struct db *db, PGresult *res, struct db_stream_event *out, size_t max, size_t *n)
{
    *n = 0;
    for (int row = 0; row < PQntuples(res) && *n < max; row++) {
        struct db_stream_event *ev = &out[*n];

        ev->seq = db_get_i64(res, row, 0);
        ev->reminder_id = db_get_i64(res, row, 1);
        ev->fire_at_ms = db_get_i64(res, row, 2);
        ev->fired_at_ms = db_get_i64(res, row, 3);
        snprintf(ev->meeting_id, sizeof ev->meeting_id, "%s", PQgetvalue(res, row, 4));
        if ((ev->audience_json = db_get_str(res, row, 5)) == NULL) {
            db_set_err(db, "stream events: out of memory");
            return DB_HARD_ERROR;
        }
        (*n)++;
    }
    return DB_ONE_RESULT;
}

/* Runs an events statement of at most max (1..DB_STREAM_EVENTS_MAX) rows into out. */
static enum db_status
exec_events(struct db *db, enum db_stmt id, const char *sql, int nparams, const char *const *params,
            size_t max, struct db_stream_event *out, size_t *n)
{
    PGresult *res;

    *n = 0;
    if (max == 0 || max > DB_STREAM_EVENTS_MAX) {
        db_set_err(db, "stream events: max %zu (allowed 1..%d)", max, DB_STREAM_EVENTS_MAX);
        return DB_HARD_ERROR;
    }
    enum db_status st = db_exec(db, id, sql, nparams, params, &res);
    if (st != DB_ONE_RESULT)
        return st;
    st = read_events(db, res, out, max, n);
    PQclear(res);
    return st;
}

enum db_status
db_stream_events(struct db *db, int64_t tenant_id, int64_t after, int64_t until, const char *sub,
                 size_t max, struct db_stream_event *out, size_t *n)
{
    char t[DB_I64_BUF], a[DB_I64_BUF], u[DB_I64_BUF], lim[DB_I64_BUF];
    const char *params[] = {db_i64(t, tenant_id), db_i64(a, after), db_i64(u, until), sub,
                            db_i64(lim, (int64_t)max)};

    return exec_events(db, STMT_STREAM_EVENTS, events_sql, 5, params, max, out, n);
}

enum db_status
db_stream_latest(struct db *db, int64_t tenant_id, const char *sub, size_t max,
                 struct db_stream_event *out, size_t *n)
{
    char t[DB_I64_BUF], lim[DB_I64_BUF];
    const char *params[] = {db_i64(t, tenant_id), sub, db_i64(lim, (int64_t)max)};

    return exec_events(db, STMT_STREAM_LATEST, latest_sql, 3, params, max, out, n);
}

void
db_stream_event_fini(struct db_stream_event *ev)
{
    if (ev == NULL)
        return;
    free(ev->audience_json);
    ev->audience_json = NULL;
}
