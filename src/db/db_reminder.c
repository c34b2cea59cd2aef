/* db_reminder.c -- the one read of pending occurrences that the scheduler, the reconciler's sweep
 * and its short repair pass share: keyset pages in (fire_at, id) order up to a time, of all
 * shards or of the shards this replica owns; and the walk of one shard that the full repair pass
 * takes shard by shard. */
#include "db_internal.h"
#include "shard.h"

/* The status filter matches the partial index reminders_pending_shard ((id % 256), fire_at, id),
 * the only index of pending reminders by time (migrations/016). A reader reads a slice of each of
 * its shards along it, in order, and merges them (a replica alone reads all 256): one scan of an
 * index by (fire_at, id) filtered by shard read every replica's rows to keep its own, so rows read
 * per fired reminder grew with the replica count (177,176 rows through that index against 10,005
 * through the primary key at 6 replicas here). No join with meetings: deleting a meeting cancels
 * its pending reminders in the same statement, and a join lets stale statistics (a table that grew
 * fast since its last ANALYZE) pick a plan quadratic in the pending count.
 *
 * A slice is $6 rows, about twice a shard's part of the page, so a page reads about twice what it
 * returns, not every owned row in the window (slices of a whole page each read 22 s of PostgreSQL
 * time in a burst of 50,000 against 3.5 s). Where a slice was cut short (its $6-th row, the "cut")
 * the merge is only complete up to the earliest cut: the page ends there, and its third column says
 * so. The slice's lower bound is a row comparison led by the shard, walked in order
 * (db_exec_in_order), and the same bound on fire_at alone, where the scan starts: for the index's
 * first column the btree starts from the shard's equality and not the row comparison, so with the
 * row comparison alone each slice stepped over every pending entry of its shard before the position
 * (an empty slice at the horizon's end, as the reconciler's short pass reads, 2,320 index pages for
 * 86 shards with 1,000,000 pending, 13.7 ms a read, against 258 pages and 0.3 ms). The upper bound
 * is a plain condition on fire_at, which after the shard's equality ends the scan at the window's
 * end (PostgreSQL 15 ends a scan on a row comparison's first column only: bounded by (shard,
 * fire_at), a slice whose window held few rows read on to the end of its shard's pending range,
 * 2,333 index pages for 86 shards with 1,000,000 pending, 23 ms a read, against 258 pages and 0.4
 * ms). That plain bound let the planner take reminders_pending_fire while it existed, and a generic
 * plan made on an empty table did, for good: a burst of 50,000 then spent 153 s of PostgreSQL time
 * in due reads. */
/* clang-format off */
#define SHARD_OF_R "(r.id % " SHARD_COUNT_SQL ")"
static const char due_shards_sql[] =
    "WITH x AS MATERIALIZED (SELECT y.* FROM unnest($5::int[]) AS s(shard)"
    "  CROSS JOIN LATERAL (SELECT r.id, r.fire_at,"
    "   row_number() OVER (ORDER BY " SHARD_OF_R ", r.fire_at, r.id) AS k FROM reminders r"
    "   WHERE r.status = 'pending' AND " SHARD_OF_R " = s.shard"
    "   AND (" SHARD_OF_R ", r.fire_at, r.id) > (s.shard, " DB_TS("$1") ", $2::bigint)"
    "   AND r.fire_at >= " DB_TS("$1") " AND r.fire_at <= " DB_TS("$3")
    "   ORDER BY " SHARD_OF_R ", r.fire_at, r.id LIMIT $6::int) y),"
    " cut AS (SELECT x.fire_at, x.id FROM x WHERE x.k = $6::int ORDER BY x.fire_at, x.id LIMIT 1)"
    " SELECT x.id, " DB_MS("x.fire_at") ", EXISTS (SELECT FROM cut) FROM x"
    " WHERE NOT EXISTS (SELECT FROM cut WHERE (x.fire_at, x.id) > (cut.fire_at, cut.id))"
    " ORDER BY x.fire_at, x.id LIMIT $4::int";
/* One shard's part of reminders_pending_shard, walked in order from a keyset position. */
static const char shard_walk_sql[] =
    "SELECT r.id, " DB_MS("r.fire_at") " FROM reminders r"
    " WHERE r.status = 'pending' AND " SHARD_OF_R " = $1::int"
    " AND (" SHARD_OF_R ", r.fire_at, r.id) > ($1::int, " DB_TS("$2") ", $3::bigint)"
    " AND r.fire_at >= " DB_TS("$2") " AND r.fire_at <= " DB_TS("$4")
    " ORDER BY " SHARD_OF_R ", r.fire_at, r.id LIMIT $5::int";
/* clang-format on */

#define DUE_SLICE_MIN 64 /* rows of one shard a read takes at least */

/* The (id, fire_at) pairs of res's first two columns into out, max at most. Returns how many. */
static size_t
take_keys(const PGresult *res, struct reminder_key *out, size_t max)
{
    size_t n = 0;

    for (int row = 0; row < PQntuples(res) && n < max; row++, n++) {
        out[n].reminder_id = db_get_i64(res, row, 0);
        out[n].fire_at_ms = db_get_i64(res, row, 1);
    }
    return n;
}

/* One read of up to max rows from (at, id) into out, of the shards in shards; *cut: the read
 * ended at a slice's cut, so more rows may follow even when it returned fewer than max. */
static enum db_status
due_read(struct db *db, const struct shard_set *shards, int64_t at, int64_t id, int64_t until_ms,
         struct reminder_key *out, size_t max, size_t slice, size_t *n_out, bool *cut)
{
    char after[DB_I64_BUF], after_id[DB_I64_BUF], until[DB_I64_BUF], limit[DB_I64_BUF];
    char per_shard[DB_I64_BUF], set[SHARD_SET_TEXT_MAX];
    PGresult *res;

    const char *params[] = {db_ms(after, at),
                            db_i64(after_id, id),
                            db_ms(until, until_ms),
                            db_i64(limit, (int64_t)max),
                            shard_set_text(shards, set),
                            db_i64(per_shard, (int64_t)slice)};
    enum db_status st = db_exec_in_order(db, STMT_REMINDER_DUE_SHARDS, due_shards_sql, 6, params,
                                         DB_PLAN_GENERIC, &res);
    *n_out = 0;
    *cut = false;
    if (st != DB_ONE_RESULT)
        return st;
    *n_out = take_keys(res, out, max);
    *cut = *n_out > 0 && PQgetvalue(res, (int)*n_out - 1, 2)[0] == 't';
    PQclear(res);
    return DB_ONE_RESULT;
}

enum db_status
db_reminder_shard_batch(struct db *db, unsigned shard, int64_t after_fire_at_ms, int64_t after_id,
                        int64_t until_ms, struct reminder_key *out, size_t max, size_t *n_out)
{
    char s[DB_I64_BUF], after[DB_I64_BUF], after_id_s[DB_I64_BUF], until[DB_I64_BUF];
    char limit[DB_I64_BUF];
    PGresult *res;

    *n_out = 0;
    if (max > DB_DUE_BATCH_MAX)
        max = DB_DUE_BATCH_MAX;
    const char *params[] = {db_i64(s, shard % SHARD_COUNT), db_ms(after, after_fire_at_ms),
                            db_i64(after_id_s, after_id), db_ms(until, until_ms),
                            db_i64(limit, (int64_t)max)};
    enum db_status st = db_exec_in_order(db, STMT_REMINDER_SHARD_WALK, shard_walk_sql, 5, params,
                                         DB_PLAN_GENERIC, &res);
    if (st != DB_ONE_RESULT)
        return st;
    *n_out = take_keys(res, out, max);
    PQclear(res);
    return DB_ONE_RESULT;
}

enum db_status
db_reminder_due_batch(struct db *db, const struct shard_set *shards, int64_t after_fire_at_ms,
                      int64_t after_id, int64_t until_ms, struct reminder_key *out, size_t max,
                      size_t *n_out)
{
    struct shard_set all;
    size_t owned = shards == NULL ? SHARD_COUNT : shard_set_count(shards), got = 0, n, slice;
    bool cut = true;

    *n_out = 0;
    if (owned == 0)
        return DB_ONE_RESULT; /* owns nothing: nothing to read */
    if (shards == NULL) {
        shard_set_fill(&all);
        shards = &all;
    }
    if (max > DB_DUE_BATCH_MAX)
        max = DB_DUE_BATCH_MAX;
    slice = 2 * max / owned + 1;
    slice = slice < DUE_SLICE_MIN ? DUE_SLICE_MIN : slice > max ? max : slice;
    /* A read that ends at a cut returns at least one slice: the page fills in a few reads. */
    while (got < max && cut) {
        enum db_status st = due_read(db, shards, after_fire_at_ms, after_id, until_ms, out + got,
                                     max - got, slice, &n, &cut);
        if (st != DB_ONE_RESULT)
            return st;
        if (n == 0)
            break;
        got += n;
        after_fire_at_ms = out[got - 1].fire_at_ms;
        after_id = out[got - 1].reminder_id;
    }
    *n_out = got;
    return DB_ONE_RESULT;
}
