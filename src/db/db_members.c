/* db_members.c -- the statements of db_members.h. One statement per heartbeat: the upsert, the
 * cleanup of long-gone rows and the read of the live ones (the writing CTE's row is not visible to
 * the read in the same statement, hence the UNION with what it returned). On a direct connection
 * ($4) a heartbeat names its backend (migrations/015), and a replica whose backend is gone is not
 * live however young its heartbeat: a killed replica's shards move at the next beat. */
#include "db_members.h"

#include "db_internal.h"

/* clang-format off */
static const char beat_sql[] =
    "WITH me AS ("
    "  INSERT INTO replicas (instance_id, heartbeat_at, backend_pid, backend_start)"
    "  VALUES ($1, now(), " DB_BACKEND_PID("$4") ", " DB_BACKEND_START("$4") ")"
    "  ON CONFLICT (instance_id) DO UPDATE SET heartbeat_at = now(),"
    "   backend_pid = excluded.backend_pid, backend_start = excluded.backend_start"
    "  RETURNING instance_id),"
    " old AS (DELETE FROM replicas WHERE heartbeat_at < now() - $3::bigint * interval '1 second')"
    " SELECT instance_id FROM replicas"
    "  WHERE heartbeat_at >= now() - $2::bigint * interval '1 millisecond' AND instance_id <> $1"
    "   AND NOT tocsin_backend_gone(backend_pid, backend_start)"
    " UNION SELECT instance_id FROM me ORDER BY 1";
static const char leave_sql[] = "DELETE FROM replicas WHERE instance_id = $1";
/* clang-format on */

enum db_status
db_members_beat(struct db *db, const char *instance_id, int64_t ttl_ms, db_members_fn fn, void *arg)
{
    char ttl[DB_I64_BUF], forget[DB_I64_BUF];
    const char *params[] = {instance_id, db_i64(ttl, ttl_ms), db_i64(forget, DB_MEMBER_FORGET_S),
                            db_tracks_backend()};
    PGresult *res;
    enum db_status st = db_exec(db, STMT_MEMBER_BEAT, beat_sql, 4, params, &res);

    if (st != DB_ONE_RESULT)
        return st;
    for (int row = 0; row < PQntuples(res); row++)
        fn(arg, PQgetvalue(res, row, 0));
    PQclear(res);
    return DB_ONE_RESULT;
}

enum db_status
db_members_leave(struct db *db, const char *instance_id)
{
    const char *params[] = {instance_id};
    PGresult *res;
    enum db_status st = db_exec(db, STMT_MEMBER_LEAVE, leave_sql, 1, params, &res);

    if (st == DB_ONE_RESULT)
        PQclear(res);
    return st;
}
