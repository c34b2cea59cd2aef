/* db_reminder.c -- the one read of pending occurrences that the scheduler, the reconciler's sweep
 * and its mirror repair share: keyset pages in (fire_at, id) order up to a time, of all shards or
 * of the shards this replica owns. */
#include "db_internal.h"
#include "shard.h"

/* The status filter matches the partial indexes: reminders_pending_fire (fire_at, id) for all
 * shards, reminders_pending_shard ((id % 256), fire_at, id) for some. An owner reads each of its
 * shards along that index, in order up to the limit, and merges them: one scan of
 * reminders_pending_fire filtered by shard read every replica's rows to keep its own, so rows
 * read per fired reminder grew with the replica count (177,176 rows through that index against
 * 10,005 through the primary key at 6 replicas here). No join with meetings: deleting a meeting
 * cancels its pending reminders in the same statement, and a join lets stale statistics (a table
 * that grew fast since its last ANALYZE) pick a plan quadratic in the pending count. */
/* clang-format off */
#define DUE_WHERE \
    " WHERE r.status = 'pending'" \
    " AND (r.fire_at, r.id) > (" DB_TS("$1") ", $2::bigint) AND r.fire_at <= " DB_TS("$3")
static const char due_all_sql[] =
    "SELECT r.id, " DB_MS("r.fire_at") " FROM reminders r" DUE_WHERE
    " ORDER BY r.fire_at, r.id LIMIT $4::int";
static const char due_shards_sql[] =
    "SELECT x.id, " DB_MS("x.fire_at") " FROM unnest($5::int[]) AS s(shard)"
    " CROSS JOIN LATERAL (SELECT r.id, r.fire_at FROM reminders r" DUE_WHERE
    "  AND (r.id % " SHARD_COUNT_SQL ") = s.shard ORDER BY r.fire_at, r.id LIMIT $4::int) x"
    " ORDER BY x.fire_at, x.id LIMIT $4::int";
/* clang-format on */

enum db_status
db_reminder_due_batch(struct db *db, const struct shard_set *shards, int64_t after_fire_at_ms,
                      int64_t after_id, int64_t until_ms, struct reminder_key *out, size_t max,
                      size_t *n_out)
{
    char after[DB_I64_BUF], id[DB_I64_BUF], until[DB_I64_BUF], limit[DB_I64_BUF];
    char set[SHARD_SET_TEXT_MAX];
    bool all = shards == NULL || shard_set_count(shards) == SHARD_COUNT;
    PGresult *res;

    *n_out = 0;
    if (shards != NULL && shard_set_count(shards) == 0)
        return DB_ONE_RESULT; /* owns nothing: nothing to read */
    if (max > DB_DUE_BATCH_MAX)
        max = DB_DUE_BATCH_MAX;
    const char *params[] = {db_ms(after, after_fire_at_ms), db_i64(id, after_id),
                            db_ms(until, until_ms), db_i64(limit, (int64_t)max),
                            all ? NULL : shard_set_text(shards, set)};
    enum db_status st =
        all ? db_exec(db, STMT_REMINDER_DUE_ALL, due_all_sql, 4, params, &res)
            : db_exec(db, STMT_REMINDER_DUE_SHARDS, due_shards_sql, 5, params, &res);
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
