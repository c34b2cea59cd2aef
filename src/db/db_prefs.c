/* db_prefs.c -- the statements of db_prefs.h. A participant is known to a tenant when they have
 * preferences or a live meeting lists them (along meetings_participant_ids, migrations/004). */
#include "db_prefs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_internal.h"
#include "db_own.h"

/* clang-format off */
#define KNOWN(t, p)                                                                                \
    "(EXISTS (SELECT 1 FROM participant_prefs x WHERE x.tenant_id = " t " AND x.participant = " p \
    ") OR EXISTS (SELECT 1 FROM meetings m WHERE m.tenant_id = " t " AND m.deleted_at IS NULL"     \
    " AND m.participant_ids @> ARRAY[" p "]))"

/* $1 tenant, $2 participant, $3 whether they must be known. */
static const char get_sql[] =
    "SELECT coalesce(p.email, true), coalesce(p.push, true), p.quiet_zone,"
    " coalesce(p.quiet_start, -1), coalesce(p.quiet_end, -1),"
    " NOT $3::bool OR " KNOWN("$1::bigint", "$2::text") ","
    " (SELECT string_agg(o.mb || ',' || o.ch, ';' ORDER BY o.mb DESC)"
    "  FROM unnest(p.own_minutes, p.own_channels) AS o(mb, ch)), p.own_minutes IS NOT NULL"
    " FROM (SELECT 1) one LEFT JOIN participant_prefs p"
    "  ON p.tenant_id = $1::bigint AND p.participant = $2::text";

/* $4 email, $5 push, $6..$8 the quiet hours (all NULL: none), $9 and $10 the own reminders'
 * minutes_before and channels (NULL: none set). */
static const char put_sql[] =
    "WITH c AS (SELECT NOT $3::bool OR " KNOWN("$1::bigint", "$2::text") " AS known,"
    "  $6::text IS NULL OR tocsin_zone_ok($6::text) AS zone_ok),"
    " i AS (INSERT INTO participant_prefs AS p (tenant_id, participant, email, push, quiet_zone,"
    "  quiet_start, quiet_end, own_minutes, own_channels)"
    "  SELECT $1::bigint, $2::text, $4::bool, $5::bool, $6::text, $7::smallint, $8::smallint,"
    "   $9::int[], $10::smallint[]"
    "  FROM c WHERE c.known AND c.zone_ok"
    "  ON CONFLICT (tenant_id, participant) DO UPDATE SET email = excluded.email,"
    "   push = excluded.push, quiet_zone = excluded.quiet_zone,"
    "   quiet_start = excluded.quiet_start, quiet_end = excluded.quiet_end,"
    "   own_minutes = excluded.own_minutes, own_channels = excluded.own_channels, updated_at = now()"
    "  RETURNING 1)"
    " SELECT c.known, c.zone_ok, (SELECT count(*) FROM i) FROM c";

/* $1 tenant, $2 participant. */
static const char email_off_sql[] =
    "INSERT INTO participant_prefs (tenant_id, participant, email)"
    " SELECT t.id, $2::text, false FROM tenants t WHERE t.id = $1::bigint"
    " ON CONFLICT (tenant_id, participant) DO UPDATE SET email = false, updated_at = now()";
/* clang-format on */

static bool
flag(const PGresult *res, int col)
{
    return PQgetvalue(res, 0, col)[0] == 't';
}

/* The own reminders as "minutes,channels;..." (by minutes_before descending; empty: none at all)
 * into p. */
static void
own_parse(const char *s, struct prefs *p)
{
    p->has_own = true;
    p->n_own = 0;
    while (*s != '\0' && p->n_own < PREFS_OWN_REMINDERS_MAX) {
        struct reminder *r = &p->own[p->n_own++];
        char *end;
        r->minutes_before = (int)strtol(s, &end, 10);
        r->channels = *end == ',' ? (unsigned)strtoul(end + 1, &end, 10) : 0;
        s = *end == ';' ? end + 1 : end;
    }
}

/* The own reminders' two array literals (both NULL when none are set). */
struct own_arrays {
    char minutes[PREFS_OWN_REMINDERS_MAX * DB_I64_BUF + 2];
    char channels[PREFS_OWN_REMINDERS_MAX * DB_I64_BUF + 2];
};

static void
own_arrays(const struct prefs *p, struct own_arrays *a, const char **minutes, const char **channels)
{
    size_t lm = 0, lc = 0;

    *minutes = *channels = NULL;
    if (!p->has_own)
        return;
    a->minutes[lm++] = a->channels[lc++] = '{';
    for (size_t i = 0; i < p->n_own; i++) {
        lm += (size_t)snprintf(a->minutes + lm, sizeof a->minutes - lm, "%s%d", i ? "," : "",
                               p->own[i].minutes_before);
        lc += (size_t)snprintf(a->channels + lc, sizeof a->channels - lc, "%s%u", i ? "," : "",
                               p->own[i].channels);
    }
    snprintf(a->minutes + lm, sizeof a->minutes - lm, "}");
    snprintf(a->channels + lc, sizeof a->channels - lc, "}");
    *minutes = a->minutes;
    *channels = a->channels;
}

enum db_status
db_prefs_get(struct db *db, int64_t tenant_id, const char *participant, bool must_exist,
             struct prefs *out)
{
    char t[DB_I64_BUF];
    const char *v[] = {db_i64(t, tenant_id), participant, must_exist ? "true" : "false"};
    PGresult *res = NULL;

    *out = prefs_default();
    enum db_status st = db_exec(db, STMT_PREFS_GET, get_sql, 3, v, &res);
    if (st != DB_ONE_RESULT)
        return st;
    if (PQntuples(res) != 1 || !flag(res, 5)) {
        PQclear(res);
        return DB_NO_RESULTS;
    }
    if (flag(res, 7))
        own_parse(PQgetvalue(res, 0, 6), out);
    out->email = flag(res, 0);
    out->push = flag(res, 1);
    out->has_quiet = !PQgetisnull(res, 0, 2);
    if (out->has_quiet) {
        snprintf(out->quiet_zone, sizeof out->quiet_zone, "%s", PQgetvalue(res, 0, 2));
        out->quiet_start = (int)db_get_i64(res, 0, 3);
        out->quiet_end = (int)db_get_i64(res, 0, 4);
    }
    PQclear(res);
    return DB_ONE_RESULT;
}

struct put_tx {
    int64_t tenant_id;
    const char *participant;
    bool must_exist;
    const struct prefs *p;
    enum db_prefs_refusal *refused;
    struct db_series_keys *gone, *fresh;
};

/* The row, then (when it was written) the participant's own reminders planned from it. */
static enum db_status
put_tx_run(struct db *db, void *arg)
{
    struct put_tx *x = arg;
    const struct prefs *p = x->p;
    char t[DB_I64_BUF], qs[DB_I64_BUF], qe[DB_I64_BUF];
    struct own_arrays oa;
    const char *v[10] = {db_i64(t, x->tenant_id),
                         x->participant,
                         x->must_exist ? "true" : "false",
                         p->email ? "true" : "false",
                         p->push ? "true" : "false",
                         p->has_quiet ? p->quiet_zone : NULL,
                         p->has_quiet ? db_i64(qs, p->quiet_start) : NULL,
                         p->has_quiet ? db_i64(qe, p->quiet_end) : NULL};
    PGresult *res = NULL;

    own_arrays(p, &oa, &v[8], &v[9]);
    *x->refused = DB_PREFS_OK;
    x->gone->n = x->fresh->n = 0;
    enum db_status st = db_exec(db, STMT_PREFS_PUT, put_sql, 10, v, &res);
    if (st != DB_ONE_RESULT)
        return st;
    if (PQntuples(res) != 1) {
        PQclear(res);
        db_set_err(db, "preferences put answered no row");
        return DB_HARD_ERROR;
    }
    if (!flag(res, 0))
        *x->refused = DB_PREFS_UNKNOWN_PARTICIPANT;
    else if (!flag(res, 1))
        *x->refused = DB_PREFS_UNKNOWN_ZONE;
    PQclear(res);
    if (*x->refused != DB_PREFS_OK)
        return DB_ONE_RESULT;
    return db_own_plan_participant(db, x->tenant_id, x->participant, x->gone, x->fresh);
}

enum db_status
db_prefs_put(struct db *db, int64_t tenant_id, const char *participant, bool must_exist,
             const struct prefs *p, enum db_prefs_refusal *refused, struct db_series_keys *gone,
             struct db_series_keys *fresh)
{
    struct put_tx x = {tenant_id, participant, must_exist, p, refused, gone, fresh};

    return db_tx_run(db, put_tx_run, &x);
}

enum db_status
db_prefs_email_off(struct db *db, int64_t tenant_id, const char *participant)
{
    char t[DB_I64_BUF];
    const char *v[] = {db_i64(t, tenant_id), participant};

    return db_exec_one_row(db, STMT_PREFS_EMAIL_OFF, email_off_sql, 2, v);
}
