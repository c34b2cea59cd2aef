/* db_meeting.c -- writing meetings and their reminders, and reading back the rows every meeting
 * read selects (db_meeting_fill; the reads are db_meeting_get.c's and db_meeting_list.c's). Each
 * function is one statement, so it is atomic even in autocommit: data-modifying CTEs write the
 * meeting and its reminders together, and reads bring the reminders along as one aggregated
 * column. tenant_id scopes every statement, so another tenant's meeting is simply not found. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_internal.h"
#include "db_meeting_sql.h"

/* Text of a PostgreSQL array literal of up to MEETING_REMINDERS_MAX numbers or status names. */
#define ARRAY_BUF (MEETING_REMINDERS_MAX * DB_I64_BUF + 3)
#define STATUS_NAME_MAX 16

/* The statements read better laid out as SQL than as clang-format would wrap them. */
/* clang-format off */

/* $3..$11: the writable fields and the version, in the order of meeting_params(). */
#define MEETING_WRITE_PARAMS \
    "$3, $4, " DB_TS("$5") ", " DB_TS("$6") ", $7, $8, $9::json, $10::json, $11::bigint"

/* One round trip: the CTE inserts the meeting, the outer INSERT its reminders from the arrays
 * $14..$17 and $19 (minutes_before, fire_at_ms, status, fired_at_ms with 0 = never, channels).
 * $18: organizer. Each row also says whether a participant the meeting lists has own reminders
 * (the same on every row), which spares the create the planning statement (db_own.c) when none
 * has: planned anew at every call, it cost single creates three quarters of their rate. */
static const char insert_sql[] =
    "WITH m AS ("
    "  INSERT INTO meetings (id, tenant_id, title, description, starts_at, ends_at, time_zone,"
    "                        location, participants, metadata, version, created_at, updated_at,"
    "                        organizer_id)"
    "  VALUES ($1::uuid, $2::bigint, " MEETING_WRITE_PARAMS ", " DB_TS("$12") ", " DB_TS("$13") ","
    "          $18)"
    "  RETURNING id, tenant_id, participant_ids)"
    " INSERT INTO reminders (meeting_id, tenant_id, minutes_before, fire_at, status, fired_at,"
    "                        channels)"
    " SELECT m.id, m.tenant_id, r.mb, " DB_TS("r.fa") ", r.st, " DB_TS("nullif(r.fd, 0)") ", r.ch"
    " FROM m, unnest($14::int[], $15::bigint[], $16::text[], $17::bigint[], $19::smallint[])"
    "         AS r(mb, fa, st, fd, ch)"
    " RETURNING id, minutes_before, EXISTS (SELECT 1 FROM m JOIN participant_prefs pp"
    "  ON pp.tenant_id = m.tenant_id AND pp.participant = ANY (m.participant_ids)"
    "  WHERE pp.own_minutes IS NOT NULL)";

/* Reconciles the reminders by minutes_before in the same statement. Every CTE sees the rows as
 * they were before the statement (o), which is what the gone keys need: the old fire time of a
 * pending reminder that was moved (u, fire time changed) or removed (d). A reminder whose fire
 * time stays keeps its status; one whose channels alone change is updated in the same UPDATE (a
 * row may be updated once per statement). Result rows: kind 'm' once when the meeting exists, 'g'
 * per gone key, 'r' per resulting reminder. $13/$14/$15: minutes_before[], fire_at_ms[],
 * channels[]. */
static const char update_sql[] =
    "WITH m AS ("
    "  UPDATE meetings SET title = $3, description = $4, starts_at = " DB_TS("$5") ","
    "         ends_at = " DB_TS("$6") ", time_zone = $7, location = $8, participants = $9::json,"
    "         metadata = $10::json, version = $11::bigint, updated_at = " DB_TS("$12")
    "  WHERE id = $1::uuid AND tenant_id = $2::bigint AND deleted_at IS NULL"
    "  RETURNING id, tenant_id),"
    " w AS (SELECT * FROM unnest($13::int[], $14::bigint[], $15::smallint[]) AS w(mb, fa, ch)),"
    " o AS (SELECT r.id, r.minutes_before AS mb, r.fire_at, r.status, r.fired_at, r.channels"
    "       FROM reminders r JOIN m ON r.meeting_id = m.id WHERE r.original_start IS NULL"
    "       AND r.participant IS NULL),"
    " d AS (DELETE FROM reminders r USING m"
    "       WHERE r.meeting_id = m.id AND r.original_start IS NULL AND r.participant IS NULL"
    "       AND r.minutes_before <> ALL ($13::int[]) RETURNING r.id),"
    " dx AS (DELETE FROM outbox x USING d WHERE x.reminder_id = d.id),"
    " u AS (UPDATE reminders r SET fire_at = " DB_TS("w.fa") ","
    "         status = CASE WHEN r.fire_at <> " DB_TS("w.fa") " THEN 'pending' ELSE r.status END,"
    "         fired_at = CASE WHEN r.fire_at <> " DB_TS("w.fa") " THEN NULL ELSE r.fired_at END,"
    "         channels = w.ch"
    "       FROM m, w WHERE r.meeting_id = m.id AND r.original_start IS NULL"
    "       AND r.participant IS NULL AND r.minutes_before = w.mb"
    "       AND (r.fire_at <> " DB_TS("w.fa") " OR r.channels <> w.ch)"
    "       RETURNING r.id, r.minutes_before AS mb, r.fire_at, r.status, r.fired_at, r.channels),"
    " i AS (INSERT INTO reminders (meeting_id, tenant_id, minutes_before, fire_at, status, channels)"
    "       SELECT m.id, m.tenant_id, w.mb, " DB_TS("w.fa") ", 'pending', w.ch FROM m, w"
    "       WHERE NOT EXISTS (SELECT 1 FROM o WHERE o.mb = w.mb)"
    "       RETURNING id, minutes_before AS mb, fire_at, channels)"
    " SELECT 'm'::text, 0::bigint, 0::int, 0::bigint, ''::text, 0::bigint, 0::smallint FROM m"
    " UNION ALL SELECT 'g', o.id, o.mb, " DB_MS("o.fire_at") ", o.status, 0, o.channels FROM o"
    "   WHERE o.status = 'pending' AND (o.id IN (SELECT id FROM d) OR o.id IN"
    "         (SELECT u.id FROM u WHERE u.fire_at <> o.fire_at))"
    " UNION ALL SELECT 'r', o.id, o.mb, " DB_MS("o.fire_at") ", o.status,"
    "                  coalesce(" DB_MS("o.fired_at") ", 0), o.channels"
    "   FROM o JOIN w ON w.mb = o.mb AND o.fire_at = " DB_TS("w.fa") " AND o.channels = w.ch"
    " UNION ALL SELECT 'r', u.id, u.mb, " DB_MS("u.fire_at") ", u.status,"
    "                  coalesce(" DB_MS("u.fired_at") ", 0), u.channels FROM u"
    " UNION ALL SELECT 'r', i.id, i.mb, " DB_MS("i.fire_at") ", 'pending', 0, i.channels FROM i";

/* Delete is two statements in one transaction. The first takes the meeting's row lock; when it
 * had to wait for a PUT/PATCH holding that lock, the second starts after that writer committed and
 * so, in READ COMMITTED, on a snapshot that sees the reminders it inserted. (One statement did
 * both with the snapshot taken before the wait, and left those reminders pending on a deleted
 * meeting.) Writers of reminders lock the meeting first, so none can add one after the first. */
static const char delete_sql[] =
    "UPDATE meetings SET deleted_at = now()"
    " WHERE id = $1::uuid AND tenant_id = $2::bigint AND deleted_at IS NULL RETURNING id";
/* Result rows: one per cancelled pending reminder (of every occurrence of a series), with its
 * key, soonest first. The reminders that fired and are still to be delivered (a retry waiting,
 * a row not leased yet) are recorded failed: the meeting they remind of is gone. A row a worker
 * has out or queued is that worker's: a failure it records later does not count (it holds no
 * lease on the row any more), an answer that it was delivered does. */
static const char cancel_sql[] =
    "WITH c AS (UPDATE reminders SET status = 'cancelled'"
    " WHERE meeting_id = $1::uuid AND status = 'pending' RETURNING id, fire_at),"
    " o AS (UPDATE outbox SET status = 'failed', last_error = 'the meeting was deleted',"
    "  lease_owner = NULL"
    "  WHERE reminder_id IN (SELECT id FROM reminders WHERE meeting_id = $1::uuid)"
    "  AND status = 'pending' RETURNING 1)"
    " SELECT id, " DB_MS("fire_at") " FROM c ORDER BY fire_at";

static const char touch_sql[] =
    "UPDATE meetings SET version = version + 1, updated_at = " DB_TS("$3")
    " WHERE id = $1::uuid AND tenant_id = $2::bigint AND deleted_at IS NULL";

/* clang-format on */

/* Parses one "id,minutes_before,fire_at_ms,status,fired_at_ms,channels" item; returns the byte
 * after it. */
static const char *
parse_reminder(const char *s, struct reminder *r)
{
    char status[STATUS_NAME_MAX];
    char *end;
    size_t len;

    r->id = strtoll(s, &end, 10);
    if (*end != ',')
        return NULL;
    r->minutes_before = (int)strtol(end + 1, &end, 10);
    if (*end != ',')
        return NULL;
    r->fire_at_ms = strtoll(end + 1, &end, 10);
    if (*end != ',')
        return NULL;
    s = end + 1;
    len = strcspn(s, ",");
    if (s[len] != ',' || len >= sizeof(status))
        return NULL;
    memcpy(status, s, len);
    status[len] = '\0';
    if (meeting_reminder_status_parse(status, &r->status) != 0)
        return NULL;
    r->fired_at_ms = strtoll(s + len + 1, &end, 10);
    if (*end != ',')
        return NULL;
    long ch = strtol(end + 1, &end, 10);
    if (ch < 1 || ch > CHANNELS_ALL)
        return NULL;
    r->channels = (unsigned)ch;
    return end;
}

static int
parse_reminders(const char *s, struct meeting *m)
{
    m->n_reminders = 0;
    while (*s != '\0') {
        if (m->n_reminders == MEETING_REMINDERS_MAX)
            return -1;
        s = parse_reminder(s, &m->reminders[m->n_reminders++]);
        if (s == NULL || (*s != ';' && *s != '\0'))
            return -1;
        if (*s == ';')
            s++;
    }
    return 0;
}

/* Copies an optional text column; -1 only when a present value could not be copied. */
static int
copy_opt(const PGresult *res, int row, int col, char **out)
{
    *out = db_get_str(res, row, col);
    return *out == NULL && !PQgetisnull(res, row, col) ? -1 : 0;
}

/* "a,b,c" (possibly empty) into at most MEETING_RECURRENCE_DATES_MAX values; the text after it. */
static const char *
parse_dates(const char *s, int64_t *v, size_t *n)
{
    char *end;

    *n = 0;
    while (*s != '\0' && *s != '|') {
        if (*n == MEETING_RECURRENCE_DATES_MAX)
            return NULL;
        v[(*n)++] = strtoll(s, &end, 10);
        if (end == s || (*end != ',' && *end != '|' && *end != '\0'))
            return NULL;
        s = *end == ',' ? end + 1 : end;
    }
    return s;
}

/* MEETING_RECURRENCE's "rrule|exdates|rdates|count_until" into a new m->recurrence. */
static int
parse_recurrence(const char *s, struct meeting *m)
{
    size_t rule_len = strcspn(s, "|");
    struct meeting_recurrence *rec;
    char *end;

    if (s[rule_len] != '|' || (m->recurrence = rec = calloc(1, sizeof *rec)) == NULL ||
        (rec->rrule = strndup(s, rule_len)) == NULL)
        return -1;
    s = parse_dates(s + rule_len + 1, rec->exdates, &rec->n_exdates);
    if (s == NULL || *s != '|')
        return -1;
    s = parse_dates(s + 1, rec->rdates, &rec->n_rdates);
    if (s == NULL || *s != '|')
        return -1;
    if (s[1] == '\0')
        return 0;
    rec->count_until_ms = strtoll(s + 1, &end, 10);
    rec->has_count_until = true;
    return end != s + 1 && *end == '\0' ? 0 : -1;
}

int
db_meeting_fill(const PGresult *res, int row, struct meeting *m)
{
    snprintf(m->id, sizeof(m->id), "%s", PQgetvalue(res, row, COL_ID));
    m->version = db_get_i64(res, row, COL_VERSION);
    m->created_at_ms = db_get_i64(res, row, COL_CREATED);
    m->updated_at_ms = db_get_i64(res, row, COL_UPDATED);
    m->starts_at_ms = db_get_i64(res, row, COL_STARTS);
    m->has_ends_at = !PQgetisnull(res, row, COL_ENDS);
    m->ends_at_ms = db_get_i64(res, row, COL_ENDS);
    if (copy_opt(res, row, COL_TITLE, &m->title) != 0 ||
        copy_opt(res, row, COL_DESCRIPTION, &m->description) != 0 ||
        copy_opt(res, row, COL_TIME_ZONE, &m->time_zone) != 0 ||
        copy_opt(res, row, COL_LOCATION, &m->location) != 0 ||
        copy_opt(res, row, COL_PARTICIPANTS, &m->participants_json) != 0 ||
        copy_opt(res, row, COL_METADATA, &m->metadata_json) != 0 ||
        copy_opt(res, row, COL_ORGANIZER, &m->organizer_id) != 0)
        return -1;
    if (!PQgetisnull(res, row, COL_RECURRENCE) &&
        parse_recurrence(PQgetvalue(res, row, COL_RECURRENCE), m) != 0)
        return -1;
    if (PQnfields(res) > COL_ORIGINAL_START && !PQgetisnull(res, row, COL_ORIGINAL_START)) {
        m->is_occurrence = true;
        m->original_start_ms = db_get_i64(res, row, COL_ORIGINAL_START);
    }
    return parse_reminders(PQgetvalue(res, row, COL_REMINDERS), m);
}

enum db_status
db_meeting_unreadable(struct db *db, const char *what, const PGresult *res, int row)
{
    db_set_err(db, "%s: cannot read the row of meeting %s (out of memory or malformed)", what,
               PQgetvalue(res, row, COL_ID));
    return DB_HARD_ERROR;
}

/* "{a,b,c}" from n int64 values. */
static const char *
array_i64(char buf[ARRAY_BUF], const int64_t *v, size_t n)
{
    size_t len = 0;

    buf[len++] = '{';
    for (size_t i = 0; i < n; i++)
        len +=
            (size_t)snprintf(buf + len, ARRAY_BUF - len, "%s%lld", i ? "," : "", (long long)v[i]);
    snprintf(buf + len, ARRAY_BUF - len, "}");
    return buf;
}

/* The reminder columns of m as array literals, for unnest() on the server. */
struct reminder_arrays {
    char minutes[ARRAY_BUF], fire_at[ARRAY_BUF], status[ARRAY_BUF], fired_at[ARRAY_BUF];
    char channels[ARRAY_BUF];
};

static void
reminder_arrays(const struct meeting *m, struct reminder_arrays *a)
{
    int64_t minutes[MEETING_REMINDERS_MAX], fire[MEETING_REMINDERS_MAX];
    int64_t fired[MEETING_REMINDERS_MAX], channels[MEETING_REMINDERS_MAX];
    size_t len = 0;
    /* A series has no reminder rows of its own: its reminders are definitions kept with the
     * series (db_series.c), and its occurrences' rows are series_sync.c's. */
    size_t n = m->recurrence != NULL ? 0 : m->n_reminders;

    a->status[len++] = '{';
    for (size_t i = 0; i < n; i++) {
        const struct reminder *r = &m->reminders[i];
        minutes[i] = r->minutes_before;
        fire[i] = r->fire_at_ms;
        fired[i] = r->fired_at_ms;
        channels[i] = r->channels != 0 ? r->channels : CHANNELS_DEFAULT; /* 0: not set by caller */
        len += (size_t)snprintf(a->status + len, sizeof(a->status) - len, "%s%s", i ? "," : "",
                                meeting_reminder_status_name(r->status));
    }
    snprintf(a->status + len, sizeof(a->status) - len, "}");
    array_i64(a->minutes, minutes, n);
    array_i64(a->fire_at, fire, n);
    array_i64(a->fired_at, fired, n);
    array_i64(a->channels, channels, n);
}

static struct reminder *
reminder_by_minutes(struct meeting *m, int minutes_before)
{
    for (size_t i = 0; i < m->n_reminders; i++) {
        if (m->reminders[i].minutes_before == minutes_before)
            return &m->reminders[i];
    }
    return NULL;
}

/* Parameters $1..$11, shared by insert and update: identity, writable fields and version. */
struct meeting_params {
    const char *v[DB_PARAMS_MAX];
    char tenant[DB_I64_BUF], starts[DB_I64_BUF], ends[DB_I64_BUF], version[DB_I64_BUF];
    char created[DB_I64_BUF], updated[DB_I64_BUF];
    struct reminder_arrays arr;
};

static void
meeting_params(struct meeting_params *p, int64_t tenant_id, const struct meeting *m)
{
    p->v[0] = m->id;
    p->v[1] = db_i64(p->tenant, tenant_id);
    p->v[2] = m->title;
    p->v[3] = m->description;
    p->v[4] = db_ms(p->starts, m->starts_at_ms);
    p->v[5] = m->has_ends_at ? db_ms(p->ends, m->ends_at_ms) : NULL;
    p->v[6] = m->time_zone;
    p->v[7] = m->location;
    p->v[8] = m->participants_json ? m->participants_json : "[]";
    p->v[9] = m->metadata_json;
    p->v[10] = db_i64(p->version, m->version);
    reminder_arrays(m, &p->arr);
}

/* One round trip: the CTE inserts the meeting, the outer INSERT its reminders from the arrays. */
enum db_status
db_meeting_insert(struct db *db, int64_t tenant_id, struct meeting *m, bool *own)
{
    struct meeting_params p;
    PGresult *res;

    m->version = 1;
    meeting_params(&p, tenant_id, m);
    p.v[11] = db_ms(p.created, m->created_at_ms);
    p.v[12] = db_ms(p.updated, m->updated_at_ms);
    p.v[13] = p.arr.minutes;
    p.v[14] = p.arr.fire_at;
    p.v[15] = p.arr.status;
    p.v[16] = p.arr.fired_at;
    p.v[17] = m->organizer_id;
    p.v[18] = p.arr.channels;
    enum db_status st = db_exec_generic(db, STMT_MEETING_INSERT, insert_sql, 19, p.v, &res);
    if (st != DB_ONE_RESULT)
        return st;
    if (own != NULL)
        *own = PQntuples(res) > 0 && PQgetvalue(res, 0, 2)[0] == 't';
    for (int row = 0; row < PQntuples(res); row++) {
        struct reminder *r = reminder_by_minutes(m, (int)db_get_i64(res, row, 1));
        if (r != NULL)
            r->id = db_get_i64(res, row, 0);
    }
    PQclear(res);
    return DB_ONE_RESULT;
}

static int
add_gone(struct db *db, struct reminder_keys *gone, int64_t id, int64_t fire_at_ms)
{
    if (gone->n == REMINDER_KEYS_MAX) {
        db_set_err(db, "more than REMINDER_KEYS_MAX gone reminder keys");
        return -1;
    }
    gone->k[gone->n].reminder_id = id;
    gone->k[gone->n].fire_at_ms = fire_at_ms;
    gone->n++;
    return 0;
}

static int
by_minutes_desc(const void *a, const void *b)
{
    const struct reminder *x = a, *y = b;

    return (x->minutes_before < y->minutes_before) - (x->minutes_before > y->minutes_before);
}

/* Reads the rows of update_sql into m->reminders (sorted) and gone. */
static enum db_status
read_update(struct db *db, const PGresult *res, struct meeting *m, struct reminder_keys *gone)
{
    struct reminder rs[MEETING_REMINDERS_MAX];
    bool found = false;
    size_t n = 0;

    for (int row = 0; row < PQntuples(res); row++) {
        char kind = PQgetvalue(res, row, 0)[0];
        int64_t id = db_get_i64(res, row, 1), fire_at_ms = db_get_i64(res, row, 3);
        if (kind == 'm') {
            found = true;
        } else if (kind == 'g') {
            if (add_gone(db, gone, id, fire_at_ms) != 0)
                return DB_HARD_ERROR;
        } else if (n < MEETING_REMINDERS_MAX &&
                   meeting_reminder_status_parse(PQgetvalue(res, row, 4), &rs[n].status) == 0) {
            rs[n].id = id;
            rs[n].minutes_before = (int)db_get_i64(res, row, 2);
            rs[n].fire_at_ms = fire_at_ms;
            rs[n].fired_at_ms = db_get_i64(res, row, 5);
            rs[n].channels = (unsigned)db_get_i64(res, row, 6);
            n++;
        } else {
            db_set_err(db, "meeting %s: unexpected reminder row after update", m->id);
            return DB_HARD_ERROR;
        }
    }
    if (!found)
        return DB_NO_RESULTS;
    if (m->recurrence != NULL) /* a series keeps its definitions (its single rows are gone) */
        return DB_ONE_RESULT;
    qsort(rs, n, sizeof(rs[0]), by_minutes_desc);
    memcpy(m->reminders, rs, n * sizeof(rs[0]));
    m->n_reminders = n;
    return DB_ONE_RESULT;
}

enum db_status
db_meeting_update(struct db *db, int64_t tenant_id, struct meeting *m, struct reminder_keys *gone)
{
    struct meeting_params p;
    PGresult *res;

    if (!meeting_id_valid(m->id))
        return DB_NO_RESULTS;
    meeting_params(&p, tenant_id, m);
    p.v[11] = db_ms(p.updated, m->updated_at_ms);
    p.v[12] = p.arr.minutes;
    p.v[13] = p.arr.fire_at;
    p.v[14] = p.arr.channels;
    enum db_status st = db_exec(db, STMT_MEETING_UPDATE, update_sql, 15, p.v, &res);
    if (st != DB_ONE_RESULT)
        return st;
    st = read_update(db, res, m, gone);
    PQclear(res);
    return st;
}

struct delete_tx {
    int64_t tenant_id;
    const char *id;
    struct reminder_keys *gone;
    size_t gone_n0; /* gone->n before the first attempt: a retry starts from it again */
};

static enum db_status
delete_tx_run(struct db *db, void *arg)
{
    struct delete_tx *t = arg;
    char tenant[DB_I64_BUF];
    const char *params[] = {t->id, db_i64(tenant, t->tenant_id)};
    PGresult *res;

    t->gone->n = t->gone_n0;
    enum db_status st = db_exec(db, STMT_MEETING_DELETE, delete_sql, 2, params, &res);
    if (st != DB_ONE_RESULT)
        return st;
    st = PQntuples(res) == 1 ? DB_ONE_RESULT : DB_NO_RESULTS;
    PQclear(res);
    if (st != DB_ONE_RESULT)
        return st;
    st = db_exec(db, STMT_MEETING_CANCEL_REMINDERS, cancel_sql, 1, params, &res);
    if (st != DB_ONE_RESULT)
        return st;
    /* A series has a pending row per occurrence in its window: the first REMINDER_KEYS_MAX keys
     * are deleted after the commit, the rest expire into events that find no pending row. */
    for (int row = 0; row < PQntuples(res) && t->gone->n < REMINDER_KEYS_MAX; row++)
        add_gone(db, t->gone, db_get_i64(res, row, 0), db_get_i64(res, row, 1));
    PQclear(res);
    return st;
}

enum db_status
db_meeting_delete_tx(struct db *db, int64_t tenant_id, const char *id, struct reminder_keys *gone)
{
    struct delete_tx t = {tenant_id, id, gone, gone->n};

    if (!meeting_id_valid(id))
        return DB_NO_RESULTS;
    return delete_tx_run(db, &t);
}

enum db_status
db_meeting_delete(struct db *db, int64_t tenant_id, const char *id, struct reminder_keys *gone)
{
    struct delete_tx t = {tenant_id, id, gone, gone->n};

    if (!meeting_id_valid(id))
        return DB_NO_RESULTS;
    return db_tx_run(db, delete_tx_run, &t);
}

enum db_status
db_meeting_touch(struct db *db, int64_t tenant_id, const char *id, int64_t updated_at_ms)
{
    char tenant[DB_I64_BUF], at[DB_I64_BUF];
    const char *params[] = {id, db_i64(tenant, tenant_id), db_ms(at, updated_at_ms)};

    return db_exec_one_row(db, STMT_MEETING_TOUCH, touch_sql, 3, params);
}
