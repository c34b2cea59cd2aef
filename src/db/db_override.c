/* db_override.c -- the overrides of a series' occurrences (migrations/008's occurrence_overrides):
 * listed for the series a read shows, written by an occurrence PATCH, deleted when the rule no
 * longer has the occurrence they override (series_sync.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_internal.h"
#include "db_series.h"
#include "strbuf.h"

/* clang-format off */

static const char override_list_sql[] =
    "SELECT o.meeting_id, " DB_MS("o.original_start") ", " DB_MS("o.starts_at") ","
    " " DB_MS("o.ends_at") ", o.title, o.cancelled FROM occurrence_overrides o"
    " WHERE o.meeting_id = ANY ($1::uuid[]) ORDER BY o.meeting_id, o.original_start";

static const char override_put_sql[] =
    "INSERT INTO occurrence_overrides (meeting_id, original_start, starts_at, ends_at, title,"
    "                                  cancelled, updated_at)"
    " VALUES ($1::uuid, " DB_TS("$2") ", " DB_TS("$3") ", " DB_TS("$4") ", $5, $6::bool, now())"
    " ON CONFLICT (meeting_id, original_start) DO UPDATE SET starts_at = excluded.starts_at,"
    "  ends_at = excluded.ends_at, title = excluded.title, cancelled = excluded.cancelled,"
    "  updated_at = now()";

static const char override_delete_sql[] =
    "DELETE FROM occurrence_overrides WHERE meeting_id = $1::uuid"
    " AND original_start = ANY (ARRAY(SELECT " DB_TS("x") " FROM unnest($2::bigint[]) AS x))";

/* clang-format on */

void
db_override_list_fini(struct db_override_list *l)
{
    if (l == NULL)
        return;
    for (size_t i = 0; i < l->n; i++)
        series_override_fini(&l->o[i].ov);
    free(l->o);
    memset(l, 0, sizeof *l);
}

enum db_status
db_override_list(struct db *db, const char *const *ids, size_t n, struct db_override_list *out)
{
    PGresult *res;

    memset(out, 0, sizeof *out);
    enum db_status st =
        db_exec_ids(db, STMT_OVERRIDE_LIST, override_list_sql, ids, n, "listing overrides", &res);
    if (st != DB_ONE_RESULT)
        return st;
    int rows = PQntuples(res);
    out->o = calloc(rows ? (size_t)rows : 1, sizeof *out->o);
    if (out->o == NULL) {
        PQclear(res);
        return db_oom(db, "listing overrides");
    }
    for (int row = 0; row < rows; row++) {
        struct db_override *o = &out->o[out->n++];
        snprintf(o->meeting_id, sizeof o->meeting_id, "%s", PQgetvalue(res, row, 0));
        o->ov.original_start_ms = db_get_i64(res, row, 1);
        o->ov.has_starts_at = !PQgetisnull(res, row, 2);
        o->ov.starts_at_ms = db_get_i64(res, row, 2);
        o->ov.has_ends_at = !PQgetisnull(res, row, 3);
        o->ov.ends_at_ms = db_get_i64(res, row, 3);
        o->ov.title = db_get_str(res, row, 4);
        o->ov.cancelled = PQgetvalue(res, row, 5)[0] == 't';
        if (o->ov.title == NULL && !PQgetisnull(res, row, 4))
            st = DB_HARD_ERROR;
    }
    PQclear(res);
    if (st != DB_ONE_RESULT) {
        db_override_list_fini(out);
        return db_oom(db, "listing overrides");
    }
    return st;
}

enum db_status
db_override_put(struct db *db, const char *meeting_id, const struct series_override *ov)
{
    char orig[DB_I64_BUF], starts[DB_I64_BUF], ends[DB_I64_BUF];
    PGresult *res;

    if (!ov->has_starts_at && !ov->has_ends_at && ov->title == NULL && !ov->cancelled)
        return db_override_delete(db, meeting_id, &ov->original_start_ms, 1);
    const char *params[] = {meeting_id,
                            db_ms(orig, ov->original_start_ms),
                            ov->has_starts_at ? db_ms(starts, ov->starts_at_ms) : NULL,
                            ov->has_ends_at ? db_ms(ends, ov->ends_at_ms) : NULL,
                            ov->title,
                            ov->cancelled ? "true" : "false"};
    enum db_status st = db_exec(db, STMT_OVERRIDE_PUT, override_put_sql, 6, params, &res);
    if (st == DB_ONE_RESULT)
        PQclear(res);
    return st;
}

enum db_status
db_override_delete(struct db *db, const char *meeting_id, const int64_t *originals, size_t n)
{
    struct strbuf b = {0};
    PGresult *res;

    for (size_t i = 0; i < n; i++)
        db_array_add(&b, "%lld", (long long)originals[i]);
    const char *params[] = {meeting_id, db_array_end(&b)};
    if (params[1] == NULL) {
        strbuf_fini(&b);
        return db_oom(db, "deleting overrides");
    }
    enum db_status st = db_exec(db, STMT_OVERRIDE_DELETE, override_delete_sql, 2, params, &res);
    strbuf_fini(&b);
    if (st == DB_ONE_RESULT)
        PQclear(res);
    return st;
}
