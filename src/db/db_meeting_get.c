/* db_meeting_get.c -- reading meetings by id: one meeting as GET /v1/meetings/{id} shows it (and
 * locked for a read-modify-write), and the batched read a delivery worker makes of the meetings
 * of the reminders it leased, each as the notification shows it. tenant_id scopes the first; the
 * second takes the ids its rows name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_internal.h"
#include "db_meeting_sql.h"
#include "strbuf.h"

/* clang-format off */

#define GET_SQL \
    "SELECT " MEETING_COLUMNS " FROM meetings m" \
    " WHERE m.id = $1::uuid AND m.tenant_id = $2::bigint AND m.deleted_at IS NULL"
static const char get_sql[] = GET_SQL;
/* Locks the meeting row only: the reminders come from a subquery. Writers of a meeting's
 * reminders lock the meeting first (update, delete), so this serializes them. */
static const char get_lock_sql[] = GET_SQL " FOR UPDATE OF m";

/* A single meeting as MEETING_COLUMNS reads it; a series' occurrence as that occurrence
 * (MEETING_FOR_COLUMNS, MEETING_FOR_JOINS). Each row of the batch probes the keys it names: LIMIT
 * 1 keeps every LATERAL subquery from being flattened into a join, which the planner hashed over
 * the whole meetings table when a batch of 256 met a table of 50,000 (176 ms a call instead of a
 * few). The series is probed once per row and decides the rest: a single meeting skips the
 * occurrence probe (its test on s runs before the scan) and the series' columns, a fifth of the
 * blocks it cost (9 to 7 here). Those probes are its plan whatever the batch, so it runs the
 * connection's generic plan with sequential and bitmap scans off (db_exec_in_order): planned at
 * each run it took 1.0 ms, more than reading the one or two meetings a delivery of reminders due
 * one by one needs (0.2 ms). */
static const char get_many_for_sql[] =
    "SELECT " MEETING_FOR_COLUMNS ", p.k"
    " FROM unnest($1::uuid[], $2::bigint[]) WITH ORDINALITY AS p(mid, rid, k)"
    MEETING_FOR_JOINS("CROSS JOIN LATERAL", "p.mid", "p.rid", "true", "");

/* clang-format on */

enum db_status
db_meeting_get(struct db *db, int64_t tenant_id, const char *id, struct meeting *m, bool for_update)
{
    char tenant[DB_I64_BUF];
    const char *params[] = {id, db_i64(tenant, tenant_id)};
    PGresult *res;

    /* Text that is not a UUID cannot name a meeting; the server would only answer a cast error. */
    if (!meeting_id_valid(id))
        return DB_NO_RESULTS;
    enum db_status st =
        for_update ? db_exec(db, STMT_MEETING_GET_FOR_UPDATE, get_lock_sql, 2, params, &res)
                   : db_exec(db, STMT_MEETING_GET, get_sql, 2, params, &res);
    if (st != DB_ONE_RESULT)
        return st;
    st = DB_NO_RESULTS;
    if (PQntuples(res) == 1) {
        st = DB_ONE_RESULT;
        if (db_meeting_fill(res, 0, m) != 0) {
            db_set_err(db, "meeting %s: cannot read the row (out of memory or malformed)", id);
            meeting_fini(m);
            st = DB_HARD_ERROR;
        }
    }
    PQclear(res);
    return st;
}

/* Numbers the distinct (ids[i], rids[i]) pairs in order of first appearance: at[i] is the
 * number of pair i, first[j] the first i of number j. The number of distinct pairs, or 0 when
 * out of memory (n > 0). An open-addressed table of twice n slots (n <= DB_GET_MANY_MAX). */
static size_t
distinct_pairs(const char *const *ids, const int64_t *rids, size_t n, size_t *at, size_t *first)
{
    size_t cap = 2, d = 0;

    while (cap < 2 * n)
        cap *= 2;
    size_t *slot = calloc(cap, sizeof *slot); /* a pair's number + 1; 0 = empty */
    if (slot == NULL)
        return 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t h = 14695981039346656037ULL ^ (uint64_t)rids[i];
        for (const char *c = ids[i]; *c != '\0'; c++)
            h = (h ^ (unsigned char)*c) * 1099511628211ULL; /* FNV-1a */
        size_t s = h & (cap - 1);
        while (slot[s] != 0 && (rids[first[slot[s] - 1]] != rids[i] ||
                                strcmp(ids[first[slot[s] - 1]], ids[i]) != 0))
            s = (s + 1) & (cap - 1);
        if (slot[s] == 0) {
            first[d] = i;
            slot[s] = ++d;
        }
        at[i] = slot[s] - 1;
    }
    free(slot);
    return d;
}

/* Reads the meetings of the pairs first[0..d) into out->m[0..d): one row per distinct pair, so
 * the 500 rows of one reminder to 500 participants parse their meeting once, not 500 times. */
static enum db_status
get_distinct_for(struct db *db, const char *const *ids, const int64_t *rids, const size_t *first,
                 size_t d, struct db_meeting_list *out)
{
    struct strbuf a = {0}, b = {0};
    PGresult *res;
    enum db_status st = DB_ONE_RESULT;

    for (size_t j = 0; j < d; j++) {
        const char *id = ids[first[j]];
        /* Only valid ids go into the literal; an invalid one names no meeting. */
        db_array_add(&a, "%s", meeting_id_valid(id) ? id : "00000000-0000-0000-0000-000000000000");
        db_array_add(&b, "%lld", (long long)rids[first[j]]);
    }
    const char *params[] = {db_array_end(&a), db_array_end(&b)};
    out->m = calloc(d, sizeof *out->m);
    if (params[0] == NULL || params[1] == NULL || out->m == NULL) {
        strbuf_fini(&a);
        strbuf_fini(&b);
        return db_oom(db, "loading meetings");
    }
    for (out->n = 0; out->n < d; out->n++)
        meeting_init(&out->m[out->n]);
    st = db_exec_in_order(db, STMT_MEETING_GET_MANY_FOR, get_many_for_sql, 2, params,
                          DB_PLAN_GENERIC, &res);
    strbuf_fini(&a);
    strbuf_fini(&b);
    if (st != DB_ONE_RESULT)
        return st;
    for (int row = 0; row < PQntuples(res) && st == DB_ONE_RESULT; row++) {
        int64_t k = db_get_i64(res, row, COL_ORIGINAL_START + 1);
        if (k < 1 || (size_t)k > d) {
            db_set_err(db, "loading meetings: a row numbered %lld, outside 1..%zu", (long long)k,
                       d);
            st = DB_HARD_ERROR;
        } else if (db_meeting_fill(res, row, &out->m[k - 1]) != 0) {
            st = db_meeting_unreadable(db, "loading meetings", res, row);
        }
    }
    PQclear(res);
    return st;
}

enum db_status
db_meeting_get_many_for(struct db *db, const char *const *ids, const int64_t *rids, size_t n,
                        struct db_meeting_list *out, size_t *at)
{
    size_t first[DB_GET_MANY_MAX], d;
    enum db_status st;

    memset(out, 0, sizeof *out);
    if (n > DB_GET_MANY_MAX) {
        db_set_err(db, "loading meetings: %zu pairs (allowed 0..%d)", n, DB_GET_MANY_MAX);
        return DB_HARD_ERROR;
    }
    if (n == 0)
        return DB_ONE_RESULT;
    if ((d = distinct_pairs(ids, rids, n, at, first)) == 0)
        return db_oom(db, "loading meetings");
    if ((st = get_distinct_for(db, ids, rids, first, d, out)) != DB_ONE_RESULT)
        db_meeting_list_fini(out);
    return st;
}
