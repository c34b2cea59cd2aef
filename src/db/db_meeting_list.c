/* db_meeting_list.c -- lists of meetings: a page of GET /v1/meetings in start order, and the
 * meetings a calendar range may show with expand=true (its single meetings and every series that
 * may have an occurrence in it). tenant_id scopes every statement. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_internal.h"
#include "db_meeting_sql.h"

/* clang-format off */

/* Keyset pagination: the row comparison on (starts_at, id) walks the partial index
 * (tenant_id, starts_at, id). Without a cursor $4/$5 are the smallest position. A browser token
 * sees only meetings it organizes or takes part in ($7, NULL for API keys), and only those among
 * its meeting ids when it names any ($8). $6 the limit, $9 the byte bound (MEETING_PAGE), $10
 * a title's ILIKE pattern or NULL (meetings_title_trgm, migrations/020, can serve it). */
static const char list_sql[] = MEETING_PAGE(
    "SELECT m.id, m.starts_at, " MEETING_TEXT_BYTES("m") " AS b FROM meetings m"
    " WHERE m.tenant_id = $1::bigint AND m.deleted_at IS NULL"
    " AND m.starts_at >= " DB_TS("$2") " AND m.starts_at < " DB_TS("$3")
    " AND (m.starts_at, m.id) > (" DB_TS("$4") ", $5::uuid)"
    " AND ($7::text IS NULL OR m.organizer_id = $7::text OR m.participant_ids @> ARRAY[$7::text])"
    " AND ($8::uuid[] IS NULL OR m.id = ANY ($8::uuid[]))"
    " AND ($10::text IS NULL OR m.title ILIKE $10::text)"
    " ORDER BY m.starts_at, m.id LIMIT $6::int + 1", "$6::int", "$9::bigint");

/* A browser token's viewer and meeting ids ($v, $w), as db_meeting_list's. */
#define VIEWER_FILTER(v, w) \
    " AND (" v "::text IS NULL OR m.organizer_id = " v "::text" \
    "      OR m.participant_ids @> ARRAY[" v "::text])" \
    " AND (" w "::uuid[] IS NULL OR m.id = ANY (" w "::uuid[]))"

/* Keyset on (starts_at, id, original start), the merged order of expand=true; a single meeting's
 * original start is its start ($9 the cursor's). A page within the byte bound $10 (MEETING_PAGE):
 * the singles it holds are limit ($6) at most. */
static const char list_singles_sql[] = MEETING_PAGE(
    "SELECT m.id, m.starts_at, " MEETING_TEXT_BYTES("m") " AS b FROM meetings m"
    " WHERE m.tenant_id = $1::bigint AND m.deleted_at IS NULL"
    " AND m.starts_at >= " DB_TS("$2") " AND m.starts_at < " DB_TS("$3")
    " AND (m.starts_at, m.id, m.starts_at) > (" DB_TS("$4") ", $5::uuid, " DB_TS("$9") ")"
    VIEWER_FILTER("$7", "$8")
    " AND NOT EXISTS (SELECT 1 FROM series sr WHERE sr.meeting_id = m.id)"
    " ORDER BY m.starts_at, m.id LIMIT $6::int + 1", "$6::int", "$10::bigint");

/* $1 tenant, $2/$3 the range, $4 limit, $5/$6 the viewer filter. */
static const char list_series_sql[] =
    "SELECT " MEETING_COLUMNS " FROM meetings m JOIN series sr ON sr.meeting_id = m.id"
    " WHERE m.tenant_id = $1::bigint AND m.deleted_at IS NULL"
    " AND ((m.starts_at < " DB_TS("$3") " AND (sr.last_start IS NULL"
    "       OR sr.last_start >= " DB_TS("$2") "))"
    "  OR EXISTS (SELECT 1 FROM occurrence_overrides o WHERE o.meeting_id = m.id"
    "   AND o.starts_at >= " DB_TS("$2") " AND o.starts_at < " DB_TS("$3") "))"
    VIEWER_FILTER("$5", "$6")
    " ORDER BY m.id LIMIT $4::int";

/* clang-format on */

enum db_status
db_meeting_page_read(struct db *db, const PGresult *res, size_t limit, struct db_meeting_list *out)
{
    size_t rows = (size_t)PQntuples(res);
    struct meeting *m = realloc(out->m, (out->n + rows + 1) * sizeof *m);

    if (m == NULL) {
        db_set_err(db, "listing meetings: out of memory");
        db_meeting_list_fini(out);
        return DB_HARD_ERROR;
    }
    out->m = m;
    /* Rows past the limit are a caller's bug (MEETING_PAGE reads at most limit). */
    out->more = rows > limit || (rows > 0 && db_get_i64(res, 0, COL_CANDIDATES) > (int64_t)rows);
    for (size_t i = 0; i < rows && i < limit; i++) {
        meeting_init(&out->m[out->n]);
        if (db_meeting_fill(res, (int)i, &out->m[out->n++]) != 0) {
            db_set_err(db, "listing meetings: cannot read a row (out of memory or malformed)");
            db_meeting_list_fini(out); /* frees the half-filled one too */
            return DB_HARD_ERROR;
        }
    }
    return DB_ONE_RESULT;
}

void
db_meeting_page_params(const struct db_list_query *q, char limit[DB_I64_BUF],
                       char bytes[DB_I64_BUF])
{
    db_i64(limit, (int64_t)q->limit);
    db_i64(bytes, q->bytes_max > 0 && q->bytes_max <= (size_t)INT64_MAX ? (int64_t)q->bytes_max
                                                                        : INT64_MAX);
}

/* ONE_RESULT whenever the query ran, also for an empty page (out->n == 0): an empty list is an
 * answer, not a miss. q->after_id must be a valid id when q->has_after (the caller decodes the
 * cursor); q->limit outside 1..DB_LIST_LIMIT_MAX is a caller bug (DB_HARD_ERROR). */
enum db_status
db_meeting_list(struct db *db, int64_t tenant_id, const struct db_list_query *q,
                struct db_meeting_list *out)
{
    char tenant[DB_I64_BUF], from[DB_I64_BUF], to[DB_I64_BUF], after[DB_I64_BUF];
    char limit[DB_I64_BUF], bytes[DB_I64_BUF], pattern[DB_LIKE_BUF];
    PGresult *res;

    memset(out, 0, sizeof(*out));
    if (q->limit < 1 || q->limit > DB_LIST_LIMIT_MAX ||
        (q->has_after && !meeting_id_valid(q->after_id))) {
        db_set_err(db, "listing meetings: limit or cursor out of range");
        return DB_HARD_ERROR;
    }
    db_meeting_page_params(q, limit, bytes);
    const char *params[] = {
        db_i64(tenant, tenant_id),
        db_ms(from, q->from_ms),
        db_ms(to, q->to_ms),
        db_ms(after, q->has_after ? q->after_starts_at_ms : INT64_MIN),
        q->has_after ? q->after_id : "00000000-0000-0000-0000-000000000000",
        limit,
        q->viewer,
        q->viewer_meetings,
        bytes,
        q->title_q != NULL ? db_like_pattern(q->title_q, pattern) : NULL,
    };
    enum db_status st = db_exec(db, STMT_MEETING_LIST, list_sql, 10, params, &res);
    if (st != DB_ONE_RESULT)
        return st;
    st = db_meeting_page_read(db, res, q->limit, out);
    PQclear(res);
    return st;
}

void
db_meeting_list_fini(struct db_meeting_list *l)
{
    if (l == NULL)
        return;
    for (size_t i = 0; i < l->n; i++)
        meeting_fini(&l->m[i]);
    free(l->m);
    memset(l, 0, sizeof(*l));
}

enum db_status
db_meeting_list_append(struct db *db, PGresult *res, struct db_meeting_list *out)
{
    size_t rows = (size_t)PQntuples(res);
    struct meeting *m = realloc(out->m, (out->n + rows + 1) * sizeof *m);

    if (m == NULL)
        return db_oom(db, "listing meetings");
    out->m = m;
    for (size_t i = 0; i < rows; i++) {
        meeting_init(&out->m[out->n]);
        if (db_meeting_fill(res, (int)i, &out->m[out->n++]) != 0)
            return db_meeting_unreadable(db, "listing meetings", res, (int)i);
    }
    return DB_ONE_RESULT;
}

enum db_status
db_meeting_list_range(struct db *db, int64_t tenant_id, const struct db_list_query *q,
                      struct db_meeting_list *out, size_t *n_singles)
{
    char tenant[DB_I64_BUF], from[DB_I64_BUF], to[DB_I64_BUF], after[DB_I64_BUF];
    char limit[DB_I64_BUF], orig[DB_I64_BUF], series_max[DB_I64_BUF], bytes[DB_I64_BUF];
    PGresult *res;

    memset(out, 0, sizeof *out);
    *n_singles = 0;
    db_meeting_page_params(q, limit, bytes);
    const char *params[] = {
        db_i64(tenant, tenant_id),
        db_ms(from, q->from_ms),
        db_ms(to, q->to_ms),
        db_ms(after, q->has_after ? q->after_starts_at_ms : INT64_MIN),
        q->has_after && meeting_id_valid(q->after_id) ? q->after_id
                                                      : "00000000-0000-0000-0000-000000000000",
        limit,
        q->viewer,
        q->viewer_meetings,
        db_ms(orig, q->has_after ? q->after_original_ms : INT64_MIN),
        bytes,
    };
    enum db_status st = db_exec(db, STMT_MEETING_LIST_SINGLES, list_singles_sql, 10, params, &res);
    if (st != DB_ONE_RESULT)
        return st;
    st = db_meeting_page_read(db, res, q->limit, out);
    PQclear(res);
    if (st != DB_ONE_RESULT)
        return st;
    *n_singles = out->n;
    const char *sp[] = {params[0], params[1],
                        params[2], db_i64(series_max, DB_EXPAND_SERIES_MAX + 1),
                        q->viewer, q->viewer_meetings};
    if (st == DB_ONE_RESULT && (st = db_exec(db, STMT_MEETING_LIST_SERIES, list_series_sql, 6, sp,
                                             &res)) == DB_ONE_RESULT) {
        if (PQntuples(res) > DB_EXPAND_SERIES_MAX)
            st = DB_NO_RESULTS;
        else
            st = db_meeting_list_append(db, res, out);
        PQclear(res);
    }
    if (st != DB_ONE_RESULT)
        db_meeting_list_fini(out);
    return st;
}
