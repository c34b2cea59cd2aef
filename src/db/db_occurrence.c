/* db_occurrence.c -- the reminder rows of a series' occurrences, read for the occurrences the
 * occurrences endpoints and expand=true show (series_sync.c writes them: db_series_sync). */
#include <stdlib.h>
#include <string.h>

#include "db_internal.h"
#include "db_series.h"
#include "strbuf.h"

/* clang-format off */

static const char occurrence_reminders_sql[] =
    "SELECT " DB_MS("q.original_start") ", q.id, q.minutes_before, " DB_MS("q.fire_at") ","
    " q.status, coalesce(" DB_MS("q.fired_at") ", 0), q.channels FROM reminders q"
    " WHERE q.meeting_id = $1::uuid AND q.original_start = ANY"
    "  (ARRAY(SELECT " DB_TS("x") " FROM unnest($2::bigint[]) AS x)) AND q.participant IS NULL"
    " ORDER BY q.original_start, q.minutes_before DESC";

/* clang-format on */

void
db_occurrence_reminders_fini(struct db_occurrence_reminders *l)
{
    if (l == NULL)
        return;
    free(l->r);
    memset(l, 0, sizeof *l);
}

enum db_status
db_occurrence_reminders(struct db *db, const char *meeting_id, const int64_t *originals, size_t n,
                        struct db_occurrence_reminders *out)
{
    struct strbuf b = {0};
    PGresult *res;

    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < n; i++)
        db_array_add(&b, "%lld", (long long)originals[i]);
    const char *params[] = {meeting_id, db_array_end(&b)};
    if (params[1] == NULL) {
        strbuf_fini(&b);
        return db_oom(db, "reading occurrences");
    }
    enum db_status st =
        db_exec(db, STMT_OCCURRENCE_REMINDERS, occurrence_reminders_sql, 2, params, &res);
    strbuf_fini(&b);
    if (st != DB_ONE_RESULT)
        return st;
    int rows = PQntuples(res);
    if ((out->r = calloc(rows ? (size_t)rows : 1, sizeof *out->r)) == NULL) {
        PQclear(res);
        return db_oom(db, "reading occurrences");
    }
    for (int row = 0; row < rows; row++) {
        struct db_occurrence_reminder *o = &out->r[out->n];
        o->original_start_ms = db_get_i64(res, row, 0);
        o->r.id = db_get_i64(res, row, 1);
        o->r.minutes_before = (int)db_get_i64(res, row, 2);
        o->r.fire_at_ms = db_get_i64(res, row, 3);
        o->r.fired_at_ms = db_get_i64(res, row, 5);
        o->r.channels = (unsigned)db_get_i64(res, row, 6);
        if (meeting_reminder_status_parse(PQgetvalue(res, row, 4), &o->r.status) == 0)
            out->n++;
    }
    PQclear(res);
    return DB_ONE_RESULT;
}
