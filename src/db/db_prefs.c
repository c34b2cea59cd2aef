/* db_prefs.c -- the statements of db_prefs.h. A participant is known to a tenant when they have
 * preferences or a live meeting lists them (along meetings_participant_ids, migrations/004). */
#include "db_prefs.h"

#include <stdio.h>
#include <string.h>

#include "db_internal.h"

/* clang-format off */
#define KNOWN(t, p)                                                                                \
    "(EXISTS (SELECT 1 FROM participant_prefs x WHERE x.tenant_id = " t " AND x.participant = " p \
    ") OR EXISTS (SELECT 1 FROM meetings m WHERE m.tenant_id = " t " AND m.deleted_at IS NULL"     \
    " AND m.participant_ids @> ARRAY[" p "]))"

/* $1 tenant, $2 participant, $3 whether they must be known. */
static const char get_sql[] =
    "SELECT coalesce(p.email, true), coalesce(p.push, true), p.quiet_zone,"
    " coalesce(p.quiet_start, -1), coalesce(p.quiet_end, -1),"
    " NOT $3::bool OR " KNOWN("$1::bigint", "$2::text")
    " FROM (SELECT 1) one LEFT JOIN participant_prefs p"
    "  ON p.tenant_id = $1::bigint AND p.participant = $2::text";

/* $4 email, $5 push, $6..$8 the quiet hours (all NULL: none). */
static const char put_sql[] =
    "WITH c AS (SELECT NOT $3::bool OR " KNOWN("$1::bigint", "$2::text") " AS known,"
    "  $6::text IS NULL OR tocsin_zone_ok($6::text) AS zone_ok),"
    " i AS (INSERT INTO participant_prefs AS p (tenant_id, participant, email, push, quiet_zone,"
    "  quiet_start, quiet_end)"
    "  SELECT $1::bigint, $2::text, $4::bool, $5::bool, $6::text, $7::smallint, $8::smallint"
    "  FROM c WHERE c.known AND c.zone_ok"
    "  ON CONFLICT (tenant_id, participant) DO UPDATE SET email = excluded.email,"
    "   push = excluded.push, quiet_zone = excluded.quiet_zone,"
    "   quiet_start = excluded.quiet_start, quiet_end = excluded.quiet_end, updated_at = now()"
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

enum db_status
db_prefs_put(struct db *db, int64_t tenant_id, const char *participant, bool must_exist,
             const struct prefs *p, enum db_prefs_refusal *refused)
{
    char t[DB_I64_BUF], qs[DB_I64_BUF], qe[DB_I64_BUF];
    const char *v[] = {db_i64(t, tenant_id),
                       participant,
                       must_exist ? "true" : "false",
                       p->email ? "true" : "false",
                       p->push ? "true" : "false",
                       p->has_quiet ? p->quiet_zone : NULL,
                       p->has_quiet ? db_i64(qs, p->quiet_start) : NULL,
                       p->has_quiet ? db_i64(qe, p->quiet_end) : NULL};
    PGresult *res = NULL;

    *refused = DB_PREFS_OK;
    enum db_status st = db_exec(db, STMT_PREFS_PUT, put_sql, 8, v, &res);
    if (st != DB_ONE_RESULT)
        return st;
    if (PQntuples(res) != 1) {
        PQclear(res);
        db_set_err(db, "preferences put answered no row");
        return DB_HARD_ERROR;
    }
    if (!flag(res, 0))
        *refused = DB_PREFS_UNKNOWN_PARTICIPANT;
    else if (!flag(res, 1))
        *refused = DB_PREFS_UNKNOWN_ZONE;
    PQclear(res);
    return DB_ONE_RESULT;
}

enum db_status
db_prefs_email_off(struct db *db, int64_t tenant_id, const char *participant)
{
    char t[DB_I64_BUF];
    const char *v[] = {db_i64(t, tenant_id), participant};

    return db_exec_one_row(db, STMT_PREFS_EMAIL_OFF, email_off_sql, 2, v);
}
