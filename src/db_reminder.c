/* db_reminder.c -- reads for the Redis mirror's repair: pending reminders of live meetings, walked
 * in (fire_at, id) order in bounded batches along the partial index reminders_pending_fire. */
#include "db_internal.h"

/* The status filter matches the partial index. No join with meetings: deleting a meeting cancels
 * its pending reminders in the same statement, and a join lets stale statistics pick a plan
 * quadratic in the number of pending reminders. */
/* clang-format off */
static const char batch_sql[] =
    "SELECT r.id, " DB_MS("r.fire_at") " FROM reminders r"
    " WHERE r.status = 'pending'"
    " AND (r.fire_at, r.id) > (" DB_TS("$1") ", $2::bigint) AND r.fire_at <= " DB_TS("$3")
    " ORDER BY r.fire_at, r.id LIMIT $4::int";
/* clang-format on */

/* max above DB_REMINDER_BATCH_MAX is clamped to it; ONE_RESULT whenever the query ran, also for
 * an empty batch (*n_out == 0). INT64_MIN as after_fire_at_ms means "from the start". */
enum db_status
db_reminder_pending_batch(struct db *db, int64_t after_fire_at_ms, int64_t after_id,
                          int64_t until_ms, struct reminder_key *out, size_t max, size_t *n_out)
{
    char after[DB_I64_BUF], id[DB_I64_BUF], until[DB_I64_BUF], limit[DB_I64_BUF];
    PGresult *res;

    *n_out = 0;
    if (max > DB_REMINDER_BATCH_MAX)
        max = DB_REMINDER_BATCH_MAX;
    const char *params[] = {db_ms(after, after_fire_at_ms), db_i64(id, after_id),
                            db_ms(until, until_ms), db_i64(limit, (int64_t)max)};
    enum db_status st = db_exec(db, STMT_REMINDER_PENDING_BATCH, batch_sql, 4, params, &res);
    if (st != DB_ONE_RESULT)
        return st;
    for (int row = 0; row < PQntuples(res) && (size_t)row < max; row++) {
        out[row].reminder_id = db_get_i64(res, row, 0);
        out[row].fire_at_ms = db_get_i64(res, row, 1);
        *n_out = (size_t)row + 1;
    }
    PQclear(res);
    return DB_ONE_RESULT;
}
