/* db_signing_key.c -- the statements of db_signing_key.h. */
#include "db_signing_key.h"

#include <stdio.h>
#include <string.h>

#include "db_internal.h"
#include "strbuf.h"

/* clang-format off */
static const char count_sql[] =
    "SELECT count(*) FROM signing_keys WHERE tenant_id = $1::bigint AND revoked_at IS NULL";
static const char insert_sql[] =
    "INSERT INTO signing_keys (id, tenant_id, secret) VALUES ($1, $2::bigint, $3)"
    " RETURNING " DB_MS("created_at");
static const char list_sql[] =
    "SELECT id, " DB_MS("created_at") " FROM signing_keys"
    " WHERE tenant_id = $1::bigint AND revoked_at IS NULL ORDER BY created_at, id";
static const char revoke_sql[] =
    "UPDATE signing_keys SET revoked_at = now()"
    " WHERE id = $1 AND tenant_id = $2::bigint AND revoked_at IS NULL";
static const char get_sql[] =
    "SELECT id, secret, tenant_id, " DB_MS("created_at") " FROM signing_keys"
    " WHERE id = $1 AND revoked_at IS NULL";
static const char newest_sql[] =
    "SELECT id, secret, tenant_id, " DB_MS("created_at") " FROM signing_keys"
    " WHERE tenant_id = $1::bigint AND revoked_at IS NULL ORDER BY created_at DESC, id LIMIT 1";
/* The ids travel as one comma-separated text: a key id is [A-Za-z0-9_-], so no quoting, and no
 * element can read as an array literal's NULL. */
static const char live_sql[] =
    "SELECT id FROM signing_keys"
    " WHERE id = ANY (string_to_array($1, ',')) AND revoked_at IS NULL";
/* clang-format on */

static enum db_status
insert_tx(struct db *db, void *arg)
{
    struct db_signing_key *k = arg;
    char tenant[DB_I64_BUF];
    const char *p1[] = {db_i64(tenant, k->tenant_id)};
    const char *p3[] = {k->id, tenant, k->secret};
    int64_t live = 0;
    enum db_status st;

    /* NO_RESULTS here means "at the limit": a tenant that is not there is not that. */
    if ((st = db_tenant_lock(db, k->tenant_id)) != DB_ONE_RESULT)
        return st == DB_NO_RESULTS ? DB_HARD_ERROR : st;
    if ((st = db_exec_i64(db, STMT_SIGNING_KEY_COUNT, count_sql, 1, p1, &live)) != DB_ONE_RESULT)
        return st;
    if (live >= SIGNING_KEYS_LIVE_MAX)
        return DB_NO_RESULTS;
    st = db_exec_i64(db, STMT_SIGNING_KEY_INSERT, insert_sql, 3, p3, &k->created_at_ms);
    return st == DB_NO_RESULTS ? DB_HARD_ERROR : st; /* INSERT ... RETURNING returns its row */
}

enum db_status
db_signing_key_insert(struct db *db, struct db_signing_key *k)
{
    return db_tx_run(db, insert_tx, k);
}

enum db_status
db_signing_key_list(struct db *db, int64_t tenant_id, db_signing_key_row_fn fn, void *arg)
{
    char tenant[DB_I64_BUF];
    const char *params[] = {db_i64(tenant, tenant_id)};
    PGresult *res;
    enum db_status st = db_exec(db, STMT_SIGNING_KEY_LIST, list_sql, 1, params, &res);

    if (st != DB_ONE_RESULT)
        return st;
    for (int row = 0; row < PQntuples(res); row++) {
        struct db_signing_key k = {.tenant_id = tenant_id,
                                   .created_at_ms = db_get_i64(res, row, 1)};
        snprintf(k.id, sizeof k.id, "%s", PQgetvalue(res, row, 0));
        fn(arg, &k);
    }
    PQclear(res);
    return DB_ONE_RESULT;
}

enum db_status
db_signing_key_revoke(struct db *db, int64_t tenant_id, const char *id)
{
    char tenant[DB_I64_BUF];
    const char *params[] = {id, db_i64(tenant, tenant_id)};
    return db_exec_one_row(db, STMT_SIGNING_KEY_REVOKE, revoke_sql, 2, params);
}

static enum db_status
read_one(PGresult *res, struct db_signing_key *k)
{
    if (PQntuples(res) != 1) {
        PQclear(res);
        return DB_NO_RESULTS;
    }
    snprintf(k->id, sizeof k->id, "%s", PQgetvalue(res, 0, 0));
    snprintf(k->secret, sizeof k->secret, "%s", PQgetvalue(res, 0, 1));
    k->tenant_id = db_get_i64(res, 0, 2);
    k->created_at_ms = db_get_i64(res, 0, 3);
    PQclear(res);
    return DB_ONE_RESULT;
}

enum db_status
db_signing_key_get(struct db *db, const char *id, struct db_signing_key *k)
{
    const char *params[] = {id};
    PGresult *res;
    enum db_status st = db_exec(db, STMT_SIGNING_KEY_GET, get_sql, 1, params, &res);

    return st == DB_ONE_RESULT ? read_one(res, k) : st;
}

enum db_status
db_signing_key_newest(struct db *db, int64_t tenant_id, struct db_signing_key *k)
{
    char tenant[DB_I64_BUF];
    const char *params[] = {db_i64(tenant, tenant_id)};
    PGresult *res;
    enum db_status st = db_exec(db, STMT_SIGNING_KEY_NEWEST, newest_sql, 1, params, &res);

    return st == DB_ONE_RESULT ? read_one(res, k) : st;
}

enum db_status
db_signing_key_live(struct db *db, const char *const *ids, size_t n, bool *live)
{
    struct strbuf list = {0};
    PGresult *res;

    for (size_t i = 0; i < n; i++) {
        strbuf_puts(&list, i > 0 ? "," : "");
        strbuf_puts(&list, ids[i]);
    }
    if (list.bad) {
        strbuf_fini(&list);
        return db_oom(db, "signing keys");
    }
    const char *params[] = {n > 0 ? list.p : ""};
    enum db_status st = db_exec(db, STMT_SIGNING_KEY_LIVE, live_sql, 1, params, &res);
    strbuf_fini(&list);
    if (st != DB_ONE_RESULT)
        return st;
    for (size_t i = 0; i < n; i++) {
        live[i] = false;
        for (int row = 0; row < PQntuples(res) && !live[i]; row++)
            live[i] = strcmp(PQgetvalue(res, row, 0), ids[i]) == 0;
    }
    PQclear(res);
    return DB_ONE_RESULT;
}
