/* db_webhook.c -- the statements of db_webhook.h: a tenant's webhooks. */
#include "db_webhook.h"

#include <stdlib.h>
#include <string.h>

#include "db_internal.h"

/* clang-format off */
static const char insert_sql[] =
    "INSERT INTO webhooks (id, tenant_id, url, description, secret)"
    " SELECT $1::uuid, $2::bigint, $3, $4, $5"
    " WHERE (SELECT count(*) FROM webhooks WHERE tenant_id = $2::bigint AND deleted_at IS NULL) < $6"
    " RETURNING " DB_MS("created_at");
/* Each health figure a walk of delivery_attempts_webhook (migrations/020) within one webhook
 * and outcome: the hour's counts, the latest of each, the open breaker's fifth latest failure. */
#define ATTEMPTS_OF(outcome)                                                                      \
    " FROM delivery_attempts a WHERE a.webhook_id = w.id AND a.outcome = '" outcome "'"
#define LATEST(outcome) "(SELECT max(a.at)" ATTEMPTS_OF(outcome) ")"
#define WEBHOOK_COLUMNS                                                                           \
    "w.id, w.url, w.description, " DB_MS("w.created_at") ", coalesce(" DB_MS("w.disabled_at")  \
    ", 0), (SELECT count(*)" ATTEMPTS_OF("delivered") " AND a.at > now() - interval '1 hour'),"  \
    " (SELECT count(*)" ATTEMPTS_OF("failed") " AND a.at > now() - interval '1 hour'),"          \
    " coalesce(" DB_MS(LATEST("delivered")) ", 0), coalesce(" DB_MS(LATEST("failed")) ", 0),"    \
    " (SELECT a.error" ATTEMPTS_OF("failed") " ORDER BY a.at DESC LIMIT 1),"                     \
    " coalesce((SELECT a.at" ATTEMPTS_OF("failed") " ORDER BY a.at DESC OFFSET ("                 \
    DB_WEBHOOK_OPEN_FAILURES_TEXT " - 1) LIMIT 1) > coalesce(" LATEST("delivered") ", '-infinity')" \
    " AND " LATEST("failed") " > now() - interval '" DB_WEBHOOK_OPEN_MS_TEXT " milliseconds',"   \
    " false)"
static const char list_sql[] =
    "SELECT " WEBHOOK_COLUMNS " FROM webhooks w"
    " WHERE w.tenant_id = $1::bigint AND w.deleted_at IS NULL ORDER BY w.created_at, w.id";
static const char get_sql[] =
    "SELECT " WEBHOOK_COLUMNS " FROM webhooks w"
    " WHERE w.id = $1::uuid AND w.tenant_id = $2::bigint AND w.deleted_at IS NULL";
static const char update_sql[] =
    "UPDATE webhooks w SET url = coalesce($3, url),"
    "  description = CASE WHEN $4::bool THEN $5 ELSE description END,"
    "  disabled_at = CASE $6::int WHEN 1 THEN coalesce(disabled_at, now()) WHEN 0 THEN NULL"
    "   ELSE disabled_at END"
    " WHERE w.id = $1::uuid AND w.tenant_id = $2::bigint AND w.deleted_at IS NULL"
    " RETURNING " WEBHOOK_COLUMNS;
static const char delete_sql[] =
    "UPDATE webhooks SET deleted_at = now()"
    " WHERE id = $1::uuid AND tenant_id = $2::bigint AND deleted_at IS NULL";
static const char rotate_sql[] =
    "UPDATE webhooks SET previous_secret = secret, secret = $3,"
    "  previous_until = now() + $4::bigint * interval '1 second'"
    " WHERE id = $1::uuid AND tenant_id = $2::bigint AND deleted_at IS NULL"
    " RETURNING " DB_MS("previous_until");
/* The candidates are the live, enabled webhooks whose latest failure is after their latest
 * success (two index probes each along delivery_attempts_webhook); of them, those whose first
 * failure after that success is older than $1 seconds. */
static const char disable_sql[] =
    "WITH f AS (SELECT w.id, w.tenant_id, (SELECT min(a.at)" ATTEMPTS_OF("failed")
    "   AND a.at > coalesce(" LATEST("delivered") ", '-infinity')) AS since"
    "  FROM webhooks w WHERE w.deleted_at IS NULL AND w.disabled_at IS NULL"
    "  AND " LATEST("failed") " > coalesce(" LATEST("delivered") ", '-infinity')),"
    " d AS (UPDATE webhooks w SET disabled_at = now() FROM (SELECT id, since FROM f"
    "   WHERE since < now() - $1::bigint * interval '1 second' ORDER BY since LIMIT $2::int) x"
    "  WHERE w.id = x.id AND w.disabled_at IS NULL RETURNING w.id, w.tenant_id, x.since)"
    " SELECT id, tenant_id, " DB_MS("since") " FROM d";
/* clang-format on */

struct insert_tx {
    int64_t tenant_id;
    struct db_webhook *w;
};

/* The count in insert_sql runs after the tenant lock, on a snapshot that sees every webhook a
 * concurrent insert of the same tenant committed (without the lock, 40 parallel inserts at 90
 * made 102). */
static enum db_status
insert_tx_run(struct db *db, void *arg)
{
    struct insert_tx *t = arg;
    struct db_webhook *w = t->w;
    char tenant[DB_I64_BUF], cap[DB_I64_BUF];
    const char *params[] = {w->id,     db_i64(tenant, t->tenant_id),        w->url, w->description,
                            w->secret, db_i64(cap, WEBHOOKS_PER_TENANT_MAX)};
    enum db_status st = db_tenant_lock(db, t->tenant_id);

    if (st != DB_ONE_RESULT)
        return st == DB_NO_RESULTS ? DB_HARD_ERROR : st;
    return db_exec_i64(db, STMT_WEBHOOK_INSERT, insert_sql, 6, params, &w->created_at_ms);
}

enum db_status
db_webhook_insert(struct db *db, int64_t tenant_id, struct db_webhook *w)
{
    struct insert_tx t = {tenant_id, w};
    return db_tx_run(db, insert_tx_run, &t);
}

static void
copy_id(char out[MEETING_ID_LEN + 1], const PGresult *res, int row, int col)
{
    strncpy(out, PQgetvalue(res, row, col), MEETING_ID_LEN);
    out[MEETING_ID_LEN] = '\0';
}

/* Calls fn for each row of res (WEBHOOK_COLUMNS), then frees res; ONE_RESULT, or NO_RESULTS
 * when there is none and none_is_empty is false. */
static enum db_status
each_row(PGresult *res, bool none_is_empty, db_webhook_row_fn fn, void *arg)
{
    enum db_status st = none_is_empty || PQntuples(res) > 0 ? DB_ONE_RESULT : DB_NO_RESULTS;

    for (int row = 0; row < PQntuples(res); row++) {
        struct db_webhook w = {
            .url = PQgetvalue(res, row, 1),
            .description = PQgetisnull(res, row, 2) ? NULL : PQgetvalue(res, row, 2),
            .created_at_ms = db_get_i64(res, row, 3),
            .disabled_at_ms = db_get_i64(res, row, 4),
            .ok_1h = db_get_i64(res, row, 5),
            .failed_1h = db_get_i64(res, row, 6),
            .last_success_ms = db_get_i64(res, row, 7),
            .last_failure_ms = db_get_i64(res, row, 8),
            .last_error = PQgetisnull(res, row, 9) ? NULL : PQgetvalue(res, row, 9),
            .open = PQgetvalue(res, row, 10)[0] == 't'};
        copy_id(w.id, res, row, 0);
        fn(arg, &w);
    }
    PQclear(res);
    return st;
}

enum db_status
db_webhook_list(struct db *db, int64_t tenant_id, db_webhook_row_fn fn, void *arg)
{
    char tenant[DB_I64_BUF];
    const char *params[] = {db_i64(tenant, tenant_id)};
    PGresult *res;
    enum db_status st = db_exec(db, STMT_WEBHOOK_LIST, list_sql, 1, params, &res);

    return st == DB_ONE_RESULT ? each_row(res, true, fn, arg) : st;
}

enum db_status
db_webhook_get(struct db *db, int64_t tenant_id, const char *id, db_webhook_row_fn fn, void *arg)
{
    char tenant[DB_I64_BUF];
    const char *params[] = {id, db_i64(tenant, tenant_id)};
    PGresult *res;

    if (!meeting_id_valid(id))
        return DB_NO_RESULTS;
    enum db_status st = db_exec(db, STMT_WEBHOOK_GET, get_sql, 2, params, &res);
    return st == DB_ONE_RESULT ? each_row(res, false, fn, arg) : st;
}

enum db_status
db_webhook_update(struct db *db, int64_t tenant_id, const char *id,
                  const struct db_webhook_change *c, db_webhook_row_fn fn, void *arg)
{
    char tenant[DB_I64_BUF], off[DB_I64_BUF];
    const char *params[] = {id,
                            db_i64(tenant, tenant_id),
                            c->url,
                            c->set_description ? "t" : "f",
                            c->description,
                            db_i64(off, c->disabled)};
    PGresult *res;

    if (!meeting_id_valid(id))
        return DB_NO_RESULTS;
    enum db_status st = db_exec(db, STMT_WEBHOOK_UPDATE, update_sql, 6, params, &res);
    return st == DB_ONE_RESULT ? each_row(res, false, fn, arg) : st;
}

enum db_status
db_webhook_delete(struct db *db, int64_t tenant_id, const char *id)
{
    char tenant[DB_I64_BUF];
    const char *params[] = {id, db_i64(tenant, tenant_id)};

    if (!meeting_id_valid(id))
        return DB_NO_RESULTS;
    return db_exec_one_row(db, STMT_WEBHOOK_DELETE, delete_sql, 2, params);
}

enum db_status
db_webhook_disable_failing(struct db *db, int64_t after_s, db_webhook_disabled_fn fn, void *arg,
                           int64_t *n)
{
    char after[DB_I64_BUF], max[DB_I64_BUF];
    const char *params[] = {db_i64(after, after_s), db_i64(max, DB_WEBHOOK_DISABLE_BATCH)};
    PGresult *res;
    enum db_status st = db_exec(db, STMT_WEBHOOK_DISABLE, disable_sql, 2, params, &res);

    *n = 0;
    if (st != DB_ONE_RESULT)
        return st;
    for (int row = 0; row < PQntuples(res); row++)
        fn(arg, PQgetvalue(res, row, 0), db_get_i64(res, row, 1), db_get_i64(res, row, 2));
    *n = PQntuples(res);
    PQclear(res);
    return DB_ONE_RESULT;
}

enum db_status
db_webhook_rotate(struct db *db, int64_t tenant_id, const char *id, const char *secret,
                  int64_t overlap_s, int64_t *previous_until_ms)
{
    char tenant[DB_I64_BUF], overlap[DB_I64_BUF];
    const char *params[] = {id, db_i64(tenant, tenant_id), secret, db_i64(overlap, overlap_s)};

    if (!meeting_id_valid(id))
        return DB_NO_RESULTS;
    return db_exec_i64(db, STMT_WEBHOOK_ROTATE, rotate_sql, 4, params, previous_until_ms);
}
