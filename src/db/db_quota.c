/* db_quota.c -- the counts of db_quota.h. */
#include "db_quota.h"

#include "db_internal.h"

/* The partial index meetings_tenant_starts_live (migrations/001) holds exactly these rows: an
 * index-only scan of the tenant's range, stopped at the limit. */
static const char meetings_sql[] =
    "SELECT count(*) FROM (SELECT 1 FROM meetings WHERE tenant_id = $1::bigint"
    " AND deleted_at IS NULL LIMIT $2::bigint) live";

enum db_status
db_quota_meetings(struct db *db, int64_t tenant_id, int64_t limit, int64_t *n)
{
    char tenant[DB_I64_BUF], lim[DB_I64_BUF];
    const char *params[] = {db_i64(tenant, tenant_id), db_i64(lim, limit)};
    enum db_status st = db_exec_i64(db, STMT_QUOTA_MEETINGS, meetings_sql, 2, params, n);

    if (st != DB_NO_RESULTS)
        return st;
    db_note_error(db, "the count of a tenant's meetings answered no row");
    return DB_HARD_ERROR;
}
