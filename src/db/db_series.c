/* db_series.c -- the statements of db_series.h. Rows travel as parallel arrays in text form
 * (only digits, '-', hex and the literals t/f come from data, so nothing needs quoting) and are
 * unnested on the server: a window of a series, or a reconciler batch of series, is one
 * statement. */
#include "db_series.h"

#include <stdarg.h>
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
    "                         reminder_channels, shard, covered_to, extend_after, last_start)"
    " VALUES ($1::uuid, $2::bigint, $3,"
    "  ARRAY(SELECT " DB_TS("x") " FROM unnest($4::bigint[]) AS x ORDER BY x),"
    "  ARRAY(SELECT " DB_TS("x") " FROM unnest($5::bigint[]) AS x ORDER BY x),"
    "  $6::int[], $7::smallint[], get_byte(uuid_send($1::uuid), 0), " DB_TS("$8") ","
    "  " DB_TS("$9") ", " DB_TS("$10") ")"
    " ON CONFLICT (meeting_id) DO UPDATE SET rrule = excluded.rrule, exdates = excluded.exdates,"
    "  rdates = excluded.rdates, reminder_minutes = excluded.reminder_minutes,"
    "  reminder_channels = excluded.reminder_channels, covered_to = excluded.covered_to,"
    "  extend_after = excluded.extend_after, last_start = excluded.last_start";

static const char touch_sql[] =
    "UPDATE meetings SET version = version + 1, updated_at = " DB_TS("$3")
    " WHERE id = $1::uuid AND tenant_id = $2::bigint AND deleted_at IS NULL";

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
    "        WHERE original_start IS NOT NULL DO UPDATE SET"
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
    " DO NOTHING";

static const char extend_windows_sql[] =
    "UPDATE series s SET covered_to = " DB_TS("w.ct") ", extend_after = " DB_TS("w.ea")
    " FROM unnest($1::uuid[], $2::bigint[], $3::bigint[]) AS w(mid, ct, ea)"
    " WHERE s.meeting_id = w.mid";

#define OCCURRENCE_REMINDERS \
    "(SELECT string_agg(concat_ws(',', q.id, q.minutes_before, " DB_MS("q.fire_at") "," \
    "                              q.status, coalesce(" DB_MS("q.fired_at") ", 0), q.channels)," \
    "                    ';' ORDER BY q.minutes_before DESC)" \
    "  FROM reminders q WHERE q.meeting_id = m.id AND q.original_start = r.original_start)"

/* A single meeting as MEETING_COLUMNS reads it; a series' occurrence as that occurrence. Each
 * row of the batch probes the keys it names: LIMIT 1 keeps every LATERAL subquery from being
 * flattened into a join, which the planner hashed over the whole meetings table when a batch
 * of 256 met a table of 50,000 (176 ms a call instead of a few). The series is probed once per
 * row and decides the rest: a single meeting skips the occurrence probe (its test on s runs
 * before the scan) and the series' columns, a fifth of the blocks it cost (9 to 7 here). Those
 * probes are its plan whatever the batch, so it runs the connection's generic plan with
 * sequential and bitmap scans off (db_exec_in_order): planned at each run it took 1.0 ms, more
 * than reading the one or two meetings a delivery of reminders due one by one needs (0.2 ms). */
static const char get_many_for_sql[] =
    "SELECT m.id, m.version, " DB_MS("m.created_at") ", " DB_MS("m.updated_at") ","
    " coalesce(ov.title, m.title), m.description, m.time_zone, m.location,"
    " CASE WHEN r.id IS NULL THEN " DB_MS("m.starts_at") " ELSE " DB_MS("r.starts_at") " END,"
    " CASE WHEN r.id IS NULL THEN " DB_MS("m.ends_at")
    "  WHEN ov.ends_at IS NOT NULL THEN " DB_MS("ov.ends_at")
    "  ELSE " DB_MS("r.starts_at + (m.ends_at - m.starts_at)") " END,"
    " m.participants, m.metadata,"
    " CASE WHEN r.id IS NOT NULL THEN " OCCURRENCE_REMINDERS
    "  WHEN s.meeting_id IS NULL THEN " MEETING_SINGLE_REMINDERS("m.id")
    "  ELSE " MEETING_SERIES_REMINDERS("m.id") " END,"
    " m.organizer_id, CASE WHEN s.meeting_id IS NOT NULL THEN " MEETING_RECURRENCE("m.id") " END,"
    " " DB_MS("r.original_start") ", p.k"
    " FROM unnest($1::uuid[], $2::bigint[]) WITH ORDINALITY AS p(mid, rid, k)"
    " CROSS JOIN LATERAL (SELECT * FROM meetings m WHERE m.id = p.mid"
    "  AND " DB_FILTER("m.deleted_at IS NULL") " LIMIT 1) m"
    " LEFT JOIN LATERAL (SELECT s.meeting_id FROM series s WHERE s.meeting_id = m.id LIMIT 1) s"
    "  ON true"
    " LEFT JOIN LATERAL (SELECT * FROM reminders r WHERE s.meeting_id IS NOT NULL AND r.id = p.rid"
    "  AND r.meeting_id = m.id AND r.original_start IS NOT NULL LIMIT 1) r ON true"
    " LEFT JOIN LATERAL (SELECT * FROM occurrence_overrides ov WHERE ov.meeting_id = m.id"
    "  AND ov.original_start = r.original_start LIMIT 1) ov ON true";

static const char occurrence_reminders_sql[] =
    "SELECT " DB_MS("q.original_start") ", q.id, q.minutes_before, " DB_MS("q.fire_at") ","
    " q.status, coalesce(" DB_MS("q.fired_at") ", 0), q.channels FROM reminders q"
    " WHERE q.meeting_id = $1::uuid AND q.original_start = ANY"
    "  (ARRAY(SELECT " DB_TS("x") " FROM unnest($2::bigint[]) AS x))"
    " ORDER BY q.original_start, q.minutes_before DESC";

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

static enum db_status append_rows(struct db *db, PGresult *res, struct db_meeting_list *out);

/* ---- text arrays ---------------------------------------------------------------------------- */

static void __attribute__((format(printf, 2, 3))) tb_item(struct strbuf *b, const char *fmt, ...)
{
    char item[MEETING_ID_LEN + DB_I64_BUF];
    va_list ap;

    va_start(ap, fmt);
    int n = vsnprintf(item, sizeof item, fmt, ap);
    va_end(ap);
    if (b->len == 0)
        strbuf_put(b, "{", 1);
    else
        strbuf_put(b, ",", 1);
    strbuf_put(b, item, (size_t)n);
}

/* Closes the array; "{}" when no item was added. NULL when out of memory. */
static const char *
tb_done(struct strbuf *b)
{
    if (b->len == 0)
        strbuf_put(b, "{", 1);
    strbuf_put(b, "}", 1);
    return b->bad ? NULL : b->p;
}

static void
tb_free(struct strbuf *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        strbuf_fini(&b[i]);
}

/* The db layer logs nothing (db.h): these keep the failure on the handle, as db_exec keeps
 * PostgreSQL's, for the caller to report. */
static enum db_status
oom(struct db *db, const char *what)
{
    db_set_err(db, "%s: out of memory", what);
    return DB_HARD_ERROR;
}

/* db_meeting_fill cannot tell running out of memory from a value it cannot parse: both named. */
static enum db_status
unreadable(struct db *db, const char *what, const PGresult *res, int row)
{
    db_set_err(db, "%s: cannot read the row of meeting %s (out of memory or malformed)", what,
               PQgetvalue(res, row, COL_ID));
    return DB_HARD_ERROR;
}

/* ---- keys ----------------------------------------------------------------------------------- */

void
db_key_list_fini(struct db_key_list *l)
{
    if (l == NULL)
        return;
    free(l->k);
    memset(l, 0, sizeof *l);
}

static int
key_add(struct db_key_list *l, int64_t id, int64_t fire_at_ms)
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

/* ---- the series row ----------------------------------------------------------------------- */

enum db_status
db_series_put(struct db *db, int64_t tenant_id, const struct meeting *m, int64_t last_start,
              int64_t covered_to, int64_t extend_after)
{
    const struct meeting_recurrence *rec = m->recurrence;
    struct strbuf a[4] = {{0}};
    char tenant[DB_I64_BUF], covered[DB_I64_BUF], extend[DB_I64_BUF], last[DB_I64_BUF];
    PGresult *res;

    for (size_t i = 0; i < rec->n_exdates; i++)
        tb_item(&a[0], "%lld", (long long)rec->exdates[i]);
    for (size_t i = 0; i < rec->n_rdates; i++)
        tb_item(&a[1], "%lld", (long long)rec->rdates[i]);
    for (size_t i = 0; i < m->n_reminders; i++) {
        tb_item(&a[2], "%d", m->reminders[i].minutes_before);
        tb_item(&a[3], "%u",
                m->reminders[i].channels ? m->reminders[i].channels : (unsigned)CHANNELS_DEFAULT);
    }
    const char *params[] = {m->id,
                            db_i64(tenant, tenant_id),
                            rec->rrule,
                            tb_done(&a[0]),
                            tb_done(&a[1]),
                            tb_done(&a[2]),
                            tb_done(&a[3]),
                            db_ms(covered, covered_to),
                            db_ms(extend, extend_after),
                            last_start == INT64_MAX ? NULL : db_ms(last, last_start)};
    enum db_status st = DB_HARD_ERROR;
    if (params[3] == NULL || params[4] == NULL || params[5] == NULL || params[6] == NULL)
        st = oom(db, "writing a series");
    else if ((st = db_exec(db, STMT_SERIES_PUT, put_sql, 10, params, &res)) == DB_ONE_RESULT)
        PQclear(res);
    tb_free(a, 4);
    return st;
}

enum db_status
db_meeting_touch(struct db *db, int64_t tenant_id, const char *id, int64_t updated_at_ms)
{
    char tenant[DB_I64_BUF], at[DB_I64_BUF];
    const char *params[] = {id, db_i64(tenant, tenant_id), db_ms(at, updated_at_ms)};

    return db_exec_one_row(db, STMT_MEETING_TOUCH, touch_sql, 3, params);
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
        tb_item(&a[0], "%lld", (long long)r->original_start_ms);
        tb_item(&a[1], "%d", r->minutes_before);
        tb_item(&a[2], "%lld", (long long)r->fire_at_ms);
        tb_item(&a[3], "%lld", (long long)r->starts_at_ms);
        tb_item(&a[4], "%u", r->channels);
        tb_item(&a[5], "%s", r->cancelled ? "t" : "f");
    }
}

enum db_status
db_series_sync(struct db *db, int64_t tenant_id, const char *meeting_id,
               const struct series_rows *rows, int64_t lo, bool reconcile, struct db_key_list *gone,
               struct db_key_list *fresh)
{
    struct strbuf a[6] = {{0}};
    char tenant[DB_I64_BUF], low[DB_I64_BUF];
    PGresult *res;
    enum db_status st;

    row_arrays(rows, a);
    const char *params[] = {meeting_id,     db_i64(tenant, tenant_id),
                            tb_done(&a[0]), tb_done(&a[1]),
                            tb_done(&a[2]), tb_done(&a[3]),
                            tb_done(&a[4]), tb_done(&a[5]),
                            db_ms(low, lo), reconcile ? "true" : "false"};
    bool bad = false;
    for (int i = 2; i < 8; i++)
        bad |= params[i] == NULL;
    if (bad) {
        tb_free(a, 6);
        return oom(db, "writing occurrences");
    }
    st = db_exec(db, STMT_SERIES_SYNC, sync_sql, 10, params, &res);
    tb_free(a, 6);
    if (st != DB_ONE_RESULT)
        return st;
    for (int row = 0; row < PQntuples(res) && st == DB_ONE_RESULT; row++) {
        struct db_key_list *l = PQgetvalue(res, row, 0)[0] == 'g' ? gone : fresh;
        if (key_add(l, db_get_i64(res, row, 1), db_get_i64(res, row, 2)) != 0)
            st = oom(db, "occurrence keys");
    }
    PQclear(res);
    return st;
}

/* ---- overrides ------------------------------------------------------------------------------ */

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

/* "{id,...}" of valid meeting ids (hex digits and dashes only). */
static const char *
id_array(struct strbuf *b, const char *const *ids, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (meeting_id_valid(ids[i]))
            tb_item(b, "%s", ids[i]);
    return tb_done(b);
}

/* Runs a statement whose one parameter is the array of the valid ids among ids[0..n). */
static enum db_status
exec_ids(struct db *db, enum db_stmt stmt, const char *sql, const char *const *ids, size_t n,
         const char *what, PGresult **res)
{
    struct strbuf b = {0};
    const char *params[] = {id_array(&b, ids, n)};
    enum db_status st = params[0] == NULL ? oom(db, what) : db_exec(db, stmt, sql, 1, params, res);

    strbuf_fini(&b);
    return st;
}

enum db_status
db_override_list(struct db *db, const char *const *ids, size_t n, struct db_override_list *out)
{
    PGresult *res;

    memset(out, 0, sizeof *out);
    enum db_status st =
        exec_ids(db, STMT_OVERRIDE_LIST, override_list_sql, ids, n, "listing overrides", &res);
    if (st != DB_ONE_RESULT)
        return st;
    int rows = PQntuples(res);
    out->o = calloc(rows ? (size_t)rows : 1, sizeof *out->o);
    if (out->o == NULL) {
        PQclear(res);
        return oom(db, "listing overrides");
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
        return oom(db, "listing overrides");
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
        tb_item(&b, "%lld", (long long)originals[i]);
    const char *params[] = {meeting_id, tb_done(&b)};
    if (params[1] == NULL) {
        strbuf_fini(&b);
        return oom(db, "deleting overrides");
    }
    enum db_status st = db_exec(db, STMT_OVERRIDE_DELETE, override_delete_sql, 2, params, &res);
    strbuf_fini(&b);
    if (st == DB_ONE_RESULT)
        PQclear(res);
    return st;
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
    enum db_status st = exec_ids(db, STMT_SERIES_LOAD, load_sql, ids, n, "loading series", &res);
    if (st != DB_ONE_RESULT)
        return st;
    st = append_rows(db, res, out);
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
        tb_item(&b, "%s", t->ext[i].m->id);
    const char *params[] = {tb_done(&b)};
    if (params[0] == NULL) {
        strbuf_fini(&b);
        return oom(db, "locking series");
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
    struct strbuf rows[8] = {{0}}, win[3] = {{0}};
    PGresult *res;
    enum db_status st;

    *t->written = *t->skipped = 0;
    if (keep == NULL)
        return oom(db, "extending series");
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
            tb_item(&rows[0], "%s", e->m->id);
            tb_item(&rows[1], "%lld", (long long)e->tenant_id);
            tb_item(&rows[2], "%lld", (long long)r->original_start_ms);
            tb_item(&rows[3], "%d", r->minutes_before);
            tb_item(&rows[4], "%lld", (long long)r->fire_at_ms);
            tb_item(&rows[5], "%lld", (long long)r->starts_at_ms);
            tb_item(&rows[6], "%u", r->channels);
            tb_item(&rows[7], "%s", r->cancelled ? "t" : "f");
        }
        tb_item(&win[0], "%s", e->m->id);
        tb_item(&win[1], "%lld", (long long)e->covered_to);
        tb_item(&win[2], "%lld", (long long)e->extend_after);
    }
    const char *rp[8], *wp[3];
    bool bad = false;
    for (int i = 0; i < 8; i++)
        bad |= (rp[i] = tb_done(&rows[i])) == NULL;
    for (int i = 0; i < 3; i++)
        bad |= (wp[i] = tb_done(&win[i])) == NULL;
    if (bad) {
        st = oom(db, "extending series");
        goto done;
    }
    if ((st = db_exec(db, STMT_SERIES_EXTEND_ROWS, extend_rows_sql, 8, rp, &res)) != DB_ONE_RESULT)
        goto done;
    *t->written = (size_t)db_affected(res);
    PQclear(res);
    if ((st = db_exec(db, STMT_SERIES_EXTEND_WINDOWS, extend_windows_sql, 3, wp, &res)) ==
        DB_ONE_RESULT)
        PQclear(res);
done:
    tb_free(rows, 8);
    tb_free(win, 3);
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

/* ---- reads -------------------------------------------------------------------------------- */

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
        tb_item(&a, "%s", meeting_id_valid(id) ? id : "00000000-0000-0000-0000-000000000000");
        tb_item(&b, "%lld", (long long)rids[first[j]]);
    }
    const char *params[] = {tb_done(&a), tb_done(&b)};
    out->m = calloc(d, sizeof *out->m);
    if (params[0] == NULL || params[1] == NULL || out->m == NULL) {
        strbuf_fini(&a);
        strbuf_fini(&b);
        return oom(db, "loading meetings");
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
            st = unreadable(db, "loading meetings", res, row);
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
        return oom(db, "loading meetings");
    if ((st = get_distinct_for(db, ids, rids, first, d, out)) != DB_ONE_RESULT)
        db_meeting_list_fini(out);
    return st;
}

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
        tb_item(&b, "%lld", (long long)originals[i]);
    const char *params[] = {meeting_id, tb_done(&b)};
    if (params[1] == NULL) {
        strbuf_fini(&b);
        return oom(db, "reading occurrences");
    }
    enum db_status st =
        db_exec(db, STMT_OCCURRENCE_REMINDERS, occurrence_reminders_sql, 2, params, &res);
    strbuf_fini(&b);
    if (st != DB_ONE_RESULT)
        return st;
    int rows = PQntuples(res);
    if ((out->r = calloc(rows ? (size_t)rows : 1, sizeof *out->r)) == NULL) {
        PQclear(res);
        return oom(db, "reading occurrences");
    }
    for (int row = 0; row < rows; row++) {
        struct db_occurrence_reminder *o = &out->r[out->n];
        o->original_start_ms = db_get_i64(res, row, 0);
        o->r.id = db_get_i64(res, row, 1);
        o->r.minutes_before = (int)db_get_i64(res, row, 2);
        o->r.fire_at_ms = db_get_i64(res, row, 3);
        o->r.fired_at_ms = db_get_i64(res, row, 5);
        o->r.channels = (unsigned)db_get_i64(res, row, 6);
        if (reminder_status_parse(PQgetvalue(res, row, 4), &o->r.status) == 0)
            out->n++;
    }
    PQclear(res);
    return DB_ONE_RESULT;
}

/* Appends the meetings of res to out (grown by db_meeting_list's own layout). */
static enum db_status
append_rows(struct db *db, PGresult *res, struct db_meeting_list *out)
{
    size_t rows = (size_t)PQntuples(res);
    struct meeting *m = realloc(out->m, (out->n + rows + 1) * sizeof *m);

    if (m == NULL)
        return oom(db, "listing meetings");
    out->m = m;
    for (size_t i = 0; i < rows; i++) {
        meeting_init(&out->m[out->n]);
        if (db_meeting_fill(res, (int)i, &out->m[out->n++]) != 0)
            return unreadable(db, "listing meetings", res, (int)i);
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
            st = append_rows(db, res, out);
        PQclear(res);
    }
    if (st != DB_ONE_RESULT)
        db_meeting_list_fini(out);
    return st;
}
