/* db_series.c -- the statements of db_series.h. Rows travel as parallel arrays in text form
 * (only digits, '-', hex and the literals t/f come from data, so nothing needs quoting) and are
 * unnested on the server: a window of a series, or a reconciler batch of series, is one
 * statement. */
#include "db_series.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_meeting_sql.h"
#include "shard.h"
#include "strbuf.h"

#define KEYS_INITIAL 16

/* clang-format off */

static const char put_sql[] =
    "INSERT INTO series AS s (meeting_id, tenant_id, rrule, exdates, rdates, reminder_minutes,"
    "                         reminder_channels, shard, covered_to, extend_after, last_start,"
    "                         count_until, count_until_version)"
    " VALUES ($1::uuid, $2::bigint, $3,"
    "  ARRAY(SELECT " DB_TS("x") " FROM unnest($4::bigint[]) AS x ORDER BY x),"
    "  ARRAY(SELECT " DB_TS("x") " FROM unnest($5::bigint[]) AS x ORDER BY x),"
    "  $6::int[], $7::smallint[], get_byte(uuid_send($1::uuid), 0), " DB_TS("$8") ","
    "  " DB_TS("$9") ", " DB_TS("$10") ", " DB_TS("$11") ", $12::bigint)"
    " ON CONFLICT (meeting_id) DO UPDATE SET rrule = excluded.rrule, exdates = excluded.exdates,"
    "  rdates = excluded.rdates, reminder_minutes = excluded.reminder_minutes,"
    "  reminder_channels = excluded.reminder_channels, covered_to = excluded.covered_to,"
    "  extend_after = excluded.extend_after, last_start = excluded.last_start,"
    "  count_until = excluded.count_until, count_until_version = excluded.count_until_version";

static const char drop_sql[] =
    "WITH s AS (DELETE FROM series WHERE meeting_id = $1::uuid)"
    " DELETE FROM occurrence_overrides WHERE meeting_id = $1::uuid";

/* $3..$8: original start, minutes_before, fire_at, start, channels, cancelled per row; $9: lo;
 * $10: reconcile. Every CTE sees the rows as they were before the statement (o), which is what
 * the gone keys need. A row may be written once per statement: rows has no repeats, and the
 * deleted rows (d) are exactly those not in it. */
static const char sync_sql[] =
    "WITH w AS (SELECT * FROM unnest($3::bigint[], $4::int[], $5::bigint[], $6::bigint[],"
    "                                $7::smallint[], $8::bool[]) AS w(os, mb, fa, sa, ch, cx)),"
    " o AS (SELECT r.id, r.original_start, r.minutes_before AS mb, r.fire_at, r.status"
    "       FROM reminders r WHERE r.meeting_id = $1::uuid AND r.original_start IS NOT NULL"
    "       AND r.participant IS NULL"
    "       AND (r.original_start >= " DB_TS("$9") " OR r.starts_at >= " DB_TS("$9") ")),"
    " d AS (DELETE FROM reminders r USING o WHERE $10::bool AND r.id = o.id"
    "       AND o.status IN ('pending', 'cancelled') AND NOT EXISTS (SELECT 1 FROM w"
    "        WHERE " DB_TS("w.os") " = o.original_start AND w.mb = o.mb)"
    "       RETURNING r.id),"
    " dx AS (DELETE FROM outbox x USING d WHERE x.reminder_id = d.id),"
    " up AS (INSERT INTO reminders AS r (meeting_id, tenant_id, minutes_before, fire_at, status,"
    "                                    channels, original_start, starts_at)"
    "       SELECT $1::uuid, $2::bigint, w.mb, " DB_TS("w.fa") ","
    "        CASE WHEN w.cx THEN 'cancelled' ELSE 'pending' END, w.ch, " DB_TS("w.os") ","
    "        " DB_TS("w.sa") " FROM w"
    "       ON CONFLICT (meeting_id, original_start, minutes_before)"
    "        WHERE original_start IS NOT NULL AND participant IS NULL DO UPDATE SET"
    "        status = CASE WHEN r.fire_at <> excluded.fire_at OR r.status IN ('pending', 'cancelled')"
    "                 THEN excluded.status ELSE r.status END,"
    "        fired_at = CASE WHEN r.fire_at <> excluded.fire_at THEN NULL ELSE r.fired_at END,"
    "        fire_at = excluded.fire_at, starts_at = excluded.starts_at, channels = excluded.channels"
    "       WHERE r.fire_at <> excluded.fire_at OR r.starts_at IS DISTINCT FROM excluded.starts_at"
    "        OR r.channels <> excluded.channels"
    "        OR (r.status IN ('pending', 'cancelled') AND r.status <> excluded.status)"
    "       RETURNING r.id, r.fire_at, r.status)"
    " SELECT 'g', o.id, " DB_MS("o.fire_at") " FROM o WHERE o.status = 'pending'"
    "  AND (o.id IN (SELECT id FROM d)"
    "       OR o.id IN (SELECT u.id FROM up u WHERE u.fire_at <> o.fire_at OR u.status <> 'pending'))"
    " UNION ALL SELECT 'f', u.id, " DB_MS("u.fire_at") " FROM up u WHERE u.status = 'pending'";

/* Series rows of deleted meetings are removed as they come due (DELETE leaves them). The due rows
 * are taken from series_due first and each one's meeting looked up by its key: joined the other
 * way, the planner may read the whole meetings table on every pass of every replica (69 ms and
 * 92,000 buffers a pass with 50,000 single meetings and no series at all, measured here). */
#define DUE_SQL(shards) \
    "WITH due AS MATERIALIZED (SELECT s.meeting_id, s.tenant_id, s.covered_to, s.extend_after" \
    "  FROM series s WHERE s.extend_after <= now()" shards \
    "  ORDER BY s.extend_after LIMIT $1::int)," \
    " d AS MATERIALIZED (SELECT due.*, coalesce((SELECT m.deleted_at IS NOT NULL FROM meetings m" \
    "  WHERE m.id = due.meeting_id), true) AS gone FROM due)," \
    " gone AS (DELETE FROM series s" \
    "  WHERE s.meeting_id = ANY (ARRAY(SELECT meeting_id FROM d WHERE gone)))" \
    " SELECT d.meeting_id, d.tenant_id, " DB_MS("d.covered_to") \
    " FROM d WHERE NOT d.gone ORDER BY d.extend_after"
static const char due_all_sql[] = DUE_SQL("");
static const char due_shards_sql[] = DUE_SQL(" AND s.shard = ANY ($2::int[])");

/* The series as the reconciler needs them: MEETING_COLUMNS' layout, but the reminders are the
 * definitions of the series row (id 0), not their next firings, so that no read of the reminder
 * rows is made: those grow fastest while a batch of series is expanded, and a plan chosen on
 * statistics from before (a bulk import, a fresh deployment) must not scan them per series. */
static const char load_sql[] =
    "SELECT m.id, m.version, " DB_MS("m.created_at") ", " DB_MS("m.updated_at") ", m.title,"
    " m.description, m.time_zone, m.location, " DB_MS("m.starts_at") ", " DB_MS("m.ends_at") ","
    " m.participants, m.metadata,"
    " (SELECT string_agg(concat_ws(',', 0, d.mb, 0, 'pending', 0, d.ch), ';' ORDER BY d.mb DESC)"
    "  FROM unnest(s.reminder_minutes, s.reminder_channels) AS d(mb, ch)),"
    " m.organizer_id, " MEETING_RECURRENCE("m.id")
    " FROM meetings m JOIN series s ON s.meeting_id = m.id"
    " WHERE m.id = ANY ($1::uuid[]) AND " DB_FILTER("m.deleted_at IS NULL");

static const char lock_sql[] =
    "SELECT id, version FROM meetings WHERE id = ANY ($1::uuid[])"
    " AND " DB_FILTER("deleted_at IS NULL")
    " ORDER BY id FOR UPDATE";

static const char extend_rows_sql[] =
    "INSERT INTO reminders (meeting_id, tenant_id, minutes_before, fire_at, status, channels,"
    "                       original_start, starts_at)"
    " SELECT w.mid, w.tid, w.mb, " DB_TS("w.fa") ", CASE WHEN w.cx THEN 'cancelled' ELSE"
    "  'pending' END, w.ch, " DB_TS("w.os") ", " DB_TS("w.sa")
    " FROM unnest($1::uuid[], $2::bigint[], $3::bigint[], $4::int[], $5::bigint[], $6::bigint[],"
    "             $7::smallint[], $8::bool[]) AS w(mid, tid, os, mb, fa, sa, ch, cx)"
    " ON CONFLICT (meeting_id, original_start, minutes_before) WHERE original_start IS NOT NULL"
    "  AND participant IS NULL DO NOTHING";

static const char extend_windows_sql[] =
    "UPDATE series s SET covered_to = " DB_TS("w.ct") ", extend_after = " DB_TS("w.ea") ","
    "  count_until = coalesce(" DB_TS("w.cu") ", s.count_until),"
    "  count_until_version = CASE WHEN w.cu IS NULL THEN s.count_until_version ELSE w.v END"
    " FROM unnest($1::uuid[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[])"
    "  AS w(mid, ct, ea, cu, v)"
    " WHERE s.meeting_id = w.mid";

/* clang-format on */

/* ---- text arrays ---------------------------------------------------------------------------- */

/* Frees the n arrays of a statement's parameters, built with db_array_add. */
static void
arrays_free(struct strbuf *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        strbuf_fini(&b[i]);
}

/* ---- keys ----------------------------------------------------------------------------------- */

void
db_series_keys_fini(struct db_series_keys *l)
{
    if (l == NULL)
        return;
    free(l->k);
    memset(l, 0, sizeof *l);
}

static int
key_add(struct db_series_keys *l, int64_t id, int64_t fire_at_ms)
{
    if (l == NULL)
        return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : KEYS_INITIAL;
        struct reminder_key *k = realloc(l->k, cap * sizeof *k);
        if (k == NULL)
            return -1;
        l->k = k;
        l->cap = cap;
    }
    l->k[l->n++] = (struct reminder_key){id, fire_at_ms};
    return 0;
}

enum db_status
db_series_keys_take(struct db *db, PGresult *res, struct db_series_keys *gone,
                    struct db_series_keys *fresh, const char *what)
{
    enum db_status st = DB_ONE_RESULT;

    for (int row = 0; row < PQntuples(res) && st == DB_ONE_RESULT; row++) {
        struct db_series_keys *l = PQgetvalue(res, row, 0)[0] == 'g' ? gone : fresh;
        if (key_add(l, db_get_i64(res, row, 1), db_get_i64(res, row, 2)) != 0)
            st = db_oom(db, what);
    }
    PQclear(res);
    return st;
}

/* ---- the series row ----------------------------------------------------------------------- */

enum db_status
db_series_put(struct db *db, int64_t tenant_id, const struct meeting *m, int64_t last_start,
              int64_t covered_to, int64_t extend_after)
{
    const struct meeting_recurrence *rec = m->recurrence;
    struct strbuf a[4] = {{0}};
    char tenant[DB_I64_BUF], covered[DB_I64_BUF], extend[DB_I64_BUF], last[DB_I64_BUF],
        until[DB_I64_BUF], version[DB_I64_BUF];
    PGresult *res;

    for (size_t i = 0; i < rec->n_exdates; i++)
        db_array_add(&a[0], "%lld", (long long)rec->exdates[i]);
    for (size_t i = 0; i < rec->n_rdates; i++)
        db_array_add(&a[1], "%lld", (long long)rec->rdates[i]);
    for (size_t i = 0; i < m->n_reminders; i++) {
        db_array_add(&a[2], "%d", m->reminders[i].minutes_before);
        db_array_add(&a[3], "%u",
                     m->reminders[i].channels ? m->reminders[i].channels
                                              : (unsigned)CHANNELS_DEFAULT);
    }
    const char *params[] = {m->id,
                            db_i64(tenant, tenant_id),
                            rec->rrule,
                            db_array_end(&a[0]),
                            db_array_end(&a[1]),
                            db_array_end(&a[2]),
                            db_array_end(&a[3]),
                            db_ms(covered, covered_to),
                            db_ms(extend, extend_after),
                            last_start == INT64_MAX ? NULL : db_ms(last, last_start),
                            rec->has_count_until ? db_ms(until, rec->count_until_ms) : NULL,
                            rec->has_count_until ? db_i64(version, m->version) : NULL};
    enum db_status st = DB_HARD_ERROR;
    if (params[3] == NULL || params[4] == NULL || params[5] == NULL || params[6] == NULL)
        st = db_oom(db, "writing a series");
    else if ((st = db_exec(db, STMT_SERIES_PUT, put_sql, 12, params, &res)) == DB_ONE_RESULT)
        PQclear(res);
    arrays_free(a, 4);
    return st;
}

enum db_status
db_series_drop(struct db *db, const char *meeting_id)
{
    const char *params[] = {meeting_id};
    PGresult *res;

    enum db_status st = db_exec(db, STMT_SERIES_DROP, drop_sql, 1, params, &res);
    if (st == DB_ONE_RESULT)
        PQclear(res);
    return st;
}

/* ---- occurrence rows ---------------------------------------------------------------------- */

/* The six row arrays of sync_sql ($3..$8) into a[0..5]. */
static void
row_arrays(const struct series_rows *rows, struct strbuf a[6])
{
    for (size_t i = 0; i < rows->n; i++) {
        const struct series_row *r = &rows->r[i];
        db_array_add(&a[0], "%lld", (long long)r->original_start_ms);
        db_array_add(&a[1], "%d", r->minutes_before);
        db_array_add(&a[2], "%lld", (long long)r->fire_at_ms);
        db_array_add(&a[3], "%lld", (long long)r->starts_at_ms);
        db_array_add(&a[4], "%u", r->channels);
        db_array_add(&a[5], "%s", r->cancelled ? "t" : "f");
    }
}

enum db_status
db_series_sync(struct db *db, int64_t tenant_id, const char *meeting_id,
               const struct series_rows *rows, int64_t lo, bool reconcile,
               struct db_series_keys *gone, struct db_series_keys *fresh)
{
    struct strbuf a[6] = {{0}};
    char tenant[DB_I64_BUF], low[DB_I64_BUF];
    PGresult *res;
    enum db_status st;

    row_arrays(rows, a);
    const char *params[] = {
        meeting_id,          db_i64(tenant, tenant_id),   db_array_end(&a[0]), db_array_end(&a[1]),
        db_array_end(&a[2]), db_array_end(&a[3]),         db_array_end(&a[4]), db_array_end(&a[5]),
        db_ms(low, lo),      reconcile ? "true" : "false"};
    bool bad = false;
    for (int i = 2; i < 8; i++)
        bad |= params[i] == NULL;
    if (bad) {
        arrays_free(a, 6);
        return db_oom(db, "writing occurrences");
    }
    st = db_exec(db, STMT_SERIES_SYNC, sync_sql, 10, params, &res);
    arrays_free(a, 6);
    return st != DB_ONE_RESULT ? st : db_series_keys_take(db, res, gone, fresh, "occurrence keys");
}

/* ---- the reconciler's batches -------------------------------------------------------------- */

enum db_status
db_series_due(struct db *db, const struct shard_set *shards, size_t max, struct db_series_due *out,
              size_t *n)
{
    char limit[DB_I64_BUF], set[SHARD_SET_TEXT_MAX];
    bool all = shards == NULL || shard_set_count(shards) == SHARD_COUNT;
    PGresult *res;

    *n = 0;
    if (shards != NULL && shard_set_count(shards) == 0)
        return DB_ONE_RESULT;
    if (max > DB_SERIES_BATCH_MAX)
        max = DB_SERIES_BATCH_MAX;
    const char *params[] = {db_i64(limit, (int64_t)max), all ? NULL : shard_set_text(shards, set)};
    enum db_status st = all ? db_exec(db, STMT_SERIES_DUE_ALL, due_all_sql, 1, params, &res)
                            : db_exec(db, STMT_SERIES_DUE_SHARDS, due_shards_sql, 2, params, &res);
    if (st != DB_ONE_RESULT)
        return st;
    for (int row = 0; row < PQntuples(res) && (size_t)row < max; row++) {
        struct db_series_due *d = &out[(*n)++];
        snprintf(d->id, sizeof d->id, "%s", PQgetvalue(res, row, 0));
        d->tenant_id = db_get_i64(res, row, 1);
        d->covered_to = db_get_i64(res, row, 2);
    }
    PQclear(res);
    return DB_ONE_RESULT;
}

enum db_status
db_series_load(struct db *db, const char *const *ids, size_t n, struct db_meeting_list *out)
{
    PGresult *res;

    memset(out, 0, sizeof *out);
    enum db_status st = db_exec_ids(db, STMT_SERIES_LOAD, load_sql, ids, n, "loading series", &res);
    if (st != DB_ONE_RESULT)
        return st;
    st = db_meeting_list_append(db, res, out);
    PQclear(res);
    if (st != DB_ONE_RESULT)
        db_meeting_list_fini(out);
    return st;
}

struct extend_tx {
    struct db_series_extension *ext;
    size_t n;
    size_t *written, *skipped;
};

/* Marks in keep[] the extensions whose meeting is live and still at the version read. */
static enum db_status
lock_batch(struct db *db, struct extend_tx *t, bool *keep)
{
    struct strbuf b = {0};
    PGresult *res;

    for (size_t i = 0; i < t->n; i++)
        db_array_add(&b, "%s", t->ext[i].m->id);
    const char *params[] = {db_array_end(&b)};
    if (params[0] == NULL) {
        strbuf_fini(&b);
        return db_oom(db, "locking series");
    }
    enum db_status st = db_exec(db, STMT_SERIES_LOCK, lock_sql, 1, params, &res);
    strbuf_fini(&b);
    if (st != DB_ONE_RESULT)
        return st;
    for (size_t i = 0; i < t->n; i++) {
        keep[i] = false;
        for (int row = 0; row < PQntuples(res); row++)
            if (strcmp(PQgetvalue(res, row, 0), t->ext[i].m->id) == 0)
                keep[i] = db_get_i64(res, row, 1) == t->ext[i].m->version;
    }
    PQclear(res);
    return DB_ONE_RESULT;
}

static enum db_status
extend_tx_run(struct db *db, void *arg)
{
    struct extend_tx *t = arg;
    bool *keep = calloc(t->n ? t->n : 1, sizeof *keep);
    struct strbuf rows[8] = {{0}}, win[5] = {{0}};
    PGresult *res;
    enum db_status st;

    *t->written = *t->skipped = 0;
    if (keep == NULL)
        return db_oom(db, "extending series");
    if ((st = lock_batch(db, t, keep)) != DB_ONE_RESULT)
        goto done;
    for (size_t i = 0; i < t->n; i++) {
        const struct db_series_extension *e = &t->ext[i];
        if (!keep[i]) {
            (*t->skipped)++;
            continue;
        }
        for (size_t k = 0; k < e->rows.n; k++) {
            const struct series_row *r = &e->rows.r[k];
            db_array_add(&rows[0], "%s", e->m->id);
            db_array_add(&rows[1], "%lld", (long long)e->tenant_id);
            db_array_add(&rows[2], "%lld", (long long)r->original_start_ms);
            db_array_add(&rows[3], "%d", r->minutes_before);
            db_array_add(&rows[4], "%lld", (long long)r->fire_at_ms);
            db_array_add(&rows[5], "%lld", (long long)r->starts_at_ms);
            db_array_add(&rows[6], "%u", r->channels);
            db_array_add(&rows[7], "%s", r->cancelled ? "t" : "f");
        }
        db_array_add(&win[0], "%s", e->m->id);
        db_array_add(&win[1], "%lld", (long long)e->covered_to);
        db_array_add(&win[2], "%lld", (long long)e->extend_after);
        if (e->m->recurrence->has_count_until)
            db_array_add(&win[3], "%lld", (long long)e->m->recurrence->count_until_ms);
        else
            db_array_add(&win[3], "NULL");
        db_array_add(&win[4], "%lld", (long long)e->m->version);
    }
    const char *rp[8], *wp[5];
    bool bad = false;
    for (int i = 0; i < 8; i++)
        bad |= (rp[i] = db_array_end(&rows[i])) == NULL;
    for (int i = 0; i < 5; i++)
        bad |= (wp[i] = db_array_end(&win[i])) == NULL;
    if (bad) {
        st = db_oom(db, "extending series");
        goto done;
    }
    if ((st = db_exec(db, STMT_SERIES_EXTEND_ROWS, extend_rows_sql, 8, rp, &res)) != DB_ONE_RESULT)
        goto done;
    *t->written = (size_t)db_affected(res);
    PQclear(res);
    if ((st = db_exec(db, STMT_SERIES_EXTEND_WINDOWS, extend_windows_sql, 5, wp, &res)) ==
        DB_ONE_RESULT)
        PQclear(res);
done:
    arrays_free(rows, 8);
    arrays_free(win, 5);
    free(keep);
    return st;
}

enum db_status
db_series_extend(struct db *db, struct db_series_extension *ext, size_t n, size_t *written,
                 size_t *skipped)
{
    struct extend_tx t = {ext, n, written, skipped};

    *written = *skipped = 0;
    if (n == 0)
        return DB_ONE_RESULT;
    return db_tx_run(db, extend_tx_run, &t);
}
