/* db_sched.c -- the due-reminder read of db_sched.h. The same walk as db_reminder_pending_batch
 * (db_reminder.c) along the partial index reminders_pending_fire, with its own larger page so the
 * scheduler loads a burst of simultaneous reminders in few round trips. No join: deleting a
 * meeting cancels its pending reminders in the same statement, and a join lets stale statistics
 * (a table that grew fast since its last ANALYZE) pick a plan quadratic in the pending count. */
#include "db_sched.h"

#include "db_internal.h"

/* clang-format off */
static const char due_sql[] =
    "SELECT r.id, " DB_MS("r.fire_at") " FROM reminders r"
    " WHERE r.status = 'pending'"
    " AND (r.fire_at, r.id) > (" DB_TS("$1") ", $2::bigint) AND r.fire_at <= " DB_TS("$3")
    " ORDER BY r.fire_at, r.id LIMIT $4::int";
/* clang-format on */

enum db_status
db_reminder_due_batch(struct db *db, int64_t after_fire_at_ms, int64_t after_id, int64_t until_ms,
                      struct reminder_key *out, size_t max, size_t *n_out)
{
    char after[DB_I64_BUF], id[DB_I64_BUF], until[DB_I64_BUF], limit[DB_I64_BUF];
    PGresult *res;

    *n_out = 0;
    if (max > DB_DUE_BATCH_MAX)
        max = DB_DUE_BATCH_MAX;
    const char *params[] = {db_ms(after, after_fire_at_ms), db_i64(id, after_id),
                            db_ms(until, until_ms), db_i64(limit, (int64_t)max)};
    enum db_status st = db_exec(db, STMT_REMINDER_DUE_BATCH, due_sql, 4, params, &res);
    if (st != DB_ONE_RESULT)
        return st;
    int rows = PQntuples(res);
    for (int row = 0; row < rows && (size_t)row < max; row++) {
        out[row].reminder_id = db_get_i64(res, row, 0);
        out[row].fire_at_ms = db_get_i64(res, row, 1);
        *n_out = (size_t)row + 1;
    }
    PQclear(res);
    return DB_ONE_RESULT;
}
