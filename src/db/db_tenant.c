/* db_tenant.c -- tenants: created (or found) by name when a key is issued, and locked while a
 * request checks one of the tenant's limits by counting its rows. */
#include "db_internal.h"

/* Inserts the tenant or finds it. The no-op DO UPDATE makes RETURNING give the id either way. */
enum db_status
db_tenant_ensure(struct db *db, const char *name, int64_t *tenant_id)
{
    static const char sql[] = "INSERT INTO tenants (name) VALUES ($1)"
                              " ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name"
                              " RETURNING id";
    const char *params[] = {name};

    return db_exec_i64(db, STMT_TENANT_ENSURE, sql, 1, params, tenant_id);
}

/* FOR NO KEY UPDATE conflicts with itself only: rows that reference the tenant (their foreign
 * key takes KEY SHARE) are inserted as before while the lock is held. */
enum db_status
db_tenant_lock(struct db *db, int64_t tenant_id)
{
    static const char sql[] = "SELECT 1 FROM tenants WHERE id = $1::bigint FOR NO KEY UPDATE";
    char tid[DB_I64_BUF];
    const char *params[] = {db_i64(tid, tenant_id)};
    PGresult *res;
    enum db_status st = db_exec(db, STMT_TENANT_LOCK, sql, 1, params, &res);

    if (st != DB_ONE_RESULT)
        return st;
    st = PQntuples(res) == 1 ? DB_ONE_RESULT : DB_NO_RESULTS;
    PQclear(res);
    return st;
}
