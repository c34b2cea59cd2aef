/* db_stream.c -- the statements of db_stream.h. The hub's reads of every event walk the primary
 * key (tenant_id, seq); one reader's events are found by the audience index (migrations/017). */
#include "db_stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_internal.h"
#include "db_stream_sql.h"
#include "strbuf.h"

/* clang-format off */
static const char heads_sql[] =
    "SELECT t.id, coalesce(h.seq, 0), coalesce(h.purged_through, 0)"
    " FROM unnest($1::bigint[]) AS t(id) LEFT JOIN stream_heads h ON h.tenant_id = t.id";

#define EVENT_COLUMNS \
    "e.seq, e.reminder_id, " DB_MS("e.fire_at") ", " DB_MS("e.fired_at") ", e.meeting_id," \
    " array_to_json(e.audience)::text, e.kind, e.data"
#define NO_MARKS "-1, -1" /* the hub's reads: no reader, no marks */

/* Every event in a seq range, along the primary key: the hub's reads of new events (for all of a
 * tenant's streams) and of a ring's backfill. */
static const char events_sql[] =
    "SELECT " EVENT_COLUMNS ", " NO_MARKS " FROM stream_events e"
    " WHERE e.tenant_id = $1::bigint AND e.seq > $2::bigint AND e.seq <= $3::bigint"
    " ORDER BY e.seq LIMIT $4::int";

static const char events_for_sql[] =
    "SELECT " EVENT_COLUMNS ", " MARK_COLUMNS " FROM stream_events e" MARKS_JOIN("$4")
    " WHERE" READER_WHERE("$4", "$6") READER_FILTERS("$7", "$8", "$9")
    " AND e.seq > $2::bigint AND e.seq <= $3::bigint"
    " ORDER BY e.seq + 0 LIMIT $5::int";

static const char latest_sql[] =
    "SELECT * FROM (SELECT " EVENT_COLUMNS ", " MARK_COLUMNS " FROM stream_events e" MARKS_JOIN("$2")
    "  WHERE" READER_WHERE("$2", "$4") READER_FILTERS("$5", "$6", "$7")
    "  ORDER BY e.seq + 0 DESC LIMIT $3::int) x ORDER BY 1";
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
        ev->kind =
            db_get_i64(res, row, 6) == DB_STREAM_INBOX ? DB_STREAM_INBOX : DB_STREAM_REMINDER;
        ev->data = NULL;
        ev->read_at_ms = db_get_i64(res, row, 8);
        ev->archived_at_ms = db_get_i64(res, row, 9);
        if ((ev->audience_json = db_get_str(res, row, 5)) == NULL ||
            (ev->kind == DB_STREAM_INBOX && (ev->data = db_get_str(res, row, 7)) == NULL)) {
            (*n)++; /* freed by the caller's db_stream_event_fini, as the rows before it */
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

/* A filter as a bool parameter: NULL takes either. */
static const char *
filter_param(enum db_inbox_filter f)
{
    switch (f) {
    case DB_INBOX_ANY:
        return NULL;
    case DB_INBOX_NO:
        return "false";
    case DB_INBOX_YES:
        return "true";
    }
    return NULL;
}

const char *
db_stream_mtg_param(struct strbuf *b, const struct db_stream_reader *who, bool *oom)
{
    const char *ids[DB_STREAM_MTG_MAX];

    *oom = false;
    if (who->n_mtg == 0)
        return NULL;
    size_t n = who->n_mtg < DB_STREAM_MTG_MAX ? who->n_mtg : DB_STREAM_MTG_MAX;

    for (size_t i = 0; i < n; i++)
        ids[i] = who->mtg[i];
    const char *arr = db_array_ids(b, ids, n);
    *oom = arr == NULL;
    return arr;
}

enum db_status
db_stream_events(struct db *db, int64_t tenant_id, int64_t after, int64_t until,
                 const struct db_stream_reader *who, size_t max, struct db_stream_event *out,
                 size_t *n)
{
    char t[DB_I64_BUF], a[DB_I64_BUF], u[DB_I64_BUF], lim[DB_I64_BUF];
    struct strbuf b = {0};
    bool oom;

    if (who == NULL) {
        const char *params[] = {db_i64(t, tenant_id), db_i64(a, after), db_i64(u, until),
                                db_i64(lim, (int64_t)max)};
        return exec_events(db, STMT_STREAM_EVENTS, events_sql, 4, params, max, out, n);
    }
    const char *params[] = {db_i64(t, tenant_id),
                            db_i64(a, after),
                            db_i64(u, until),
                            who->sub,
                            db_i64(lim, (int64_t)max),
                            db_stream_mtg_param(&b, who, &oom),
                            who->items_only ? "0" : NULL,
                            filter_param(who->unread),
                            filter_param(who->archived)};
    enum db_status st =
        oom ? db_oom(db, "stream events")
            : exec_events(db, STMT_STREAM_EVENTS_FOR, events_for_sql, 9, params, max, out, n);
    strbuf_fini(&b);
    return st;
}

enum db_status
db_stream_latest(struct db *db, int64_t tenant_id, const struct db_stream_reader *who, size_t max,
                 struct db_stream_event *out, size_t *n)
{
    char t[DB_I64_BUF], lim[DB_I64_BUF];
    struct strbuf b = {0};
    bool oom;

    const char *params[] = {db_i64(t, tenant_id),         who->sub,
                            db_i64(lim, (int64_t)max),    db_stream_mtg_param(&b, who, &oom),
                            who->items_only ? "0" : NULL, filter_param(who->unread),
                            filter_param(who->archived)};
    enum db_status st =
        oom ? db_oom(db, "stream latest")
            : exec_events(db, STMT_STREAM_LATEST, latest_sql, 7, params, max, out, n);
    strbuf_fini(&b);
    return st;
}

void
db_stream_event_fini(struct db_stream_event *ev)
{
    if (ev == NULL)
        return;
    free(ev->audience_json);
    free(ev->data);
    ev->audience_json = NULL;
    ev->data = NULL;
}
