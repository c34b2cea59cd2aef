/* db_keys.c -- API keys. Keys are stored as SHA-256 hashes and found by their public prefix; the
 * hash comparison happens here, in constant time, not in SQL. Used by the `tocsin keys` commands
 * and by the authentication step of every request. */
#include <string.h>

#include "crypto.h"
#include "db_internal.h"
#include "hex.h"

#define HASH_LEN CRYPTO_SHA256_LEN

/* NO_RESULTS when the prefix is taken (the caller makes a new key): prefixes are random, so this
 * is rare, and not an error worth logging. */
enum db_status
db_keys_insert(struct db *db, int64_t tenant_id, const char *prefix, const uint8_t hash[32])
{
    static const char sql[] = "INSERT INTO api_keys (tenant_id, prefix, key_hash)"
                              " VALUES ($1, $2, decode($3, 'hex'))"
                              " ON CONFLICT (prefix) DO NOTHING";
    char tid[DB_I64_BUF], hex[HEX_ENCODED_LEN(HASH_LEN) + 1];

    hex_encode(hash, HASH_LEN, hex);
    const char *params[] = {db_i64(tid, tenant_id), prefix, hex};
    return db_exec_one_row(db, STMT_KEY_INSERT, sql, 3, params);
}

enum db_status
db_keys_lookup(struct db *db, const char *prefix, const uint8_t hash[32], int64_t *tenant_id)
{
    static const char sql[] = "SELECT tenant_id, encode(key_hash, 'hex') FROM api_keys"
                              " WHERE prefix = $1 AND revoked_at IS NULL";
    const char *params[] = {prefix};
    uint8_t stored[HASH_LEN];
    size_t n_stored;
    PGresult *res;
    enum db_status st = db_exec(db, STMT_KEY_LOOKUP, sql, 1, params, &res);

    if (st != DB_ONE_RESULT)
        return st;
    st = DB_NO_RESULTS;
    if (PQntuples(res) == 1 &&
        hex_decode(PQgetvalue(res, 0, 1), (size_t)PQgetlength(res, 0, 1), stored, HASH_LEN,
                   &n_stored) == 0 &&
        n_stored == HASH_LEN && crypto_memeq(stored, hash, HASH_LEN)) {
        *tenant_id = db_get_i64(res, 0, 0);
        st = DB_ONE_RESULT;
    }
    PQclear(res);
    return st;
}

/* ONE_RESULT when the query ran, even with no keys at all. */
enum db_status
db_keys_list(struct db *db, db_keys_row_fn fn, void *arg)
{
    /* clang-format off */
    static const char sql[] =
        "SELECT k.prefix, t.name, " DB_MS("k.created_at") ", " DB_MS("k.revoked_at")
        " FROM api_keys k JOIN tenants t ON t.id = k.tenant_id ORDER BY k.created_at, k.id";
    /* clang-format on */
    PGresult *res;
    enum db_status st = db_exec(db, STMT_KEY_LIST, sql, 0, NULL, &res);

    if (st != DB_ONE_RESULT)
        return st;
    for (int row = 0; row < PQntuples(res); row++)
        fn(arg, PQgetvalue(res, row, 0), PQgetvalue(res, row, 1), db_get_i64(res, row, 2),
           db_get_i64(res, row, 3));
    PQclear(res);
    return DB_ONE_RESULT;
}

/* An empty prefix would match every key; it matches none instead. */
enum db_status
db_keys_revoke(struct db *db, const char *prefix, int *n_revoked)
{
    static const char sql[] = "UPDATE api_keys SET revoked_at = now()"
                              " WHERE revoked_at IS NULL AND starts_with(prefix, $1)";
    const char *params[] = {prefix};
    PGresult *res;

    *n_revoked = 0;
    if (prefix[0] == '\0')
        return DB_NO_RESULTS;
    enum db_status st = db_exec(db, STMT_KEY_REVOKE, sql, 1, params, &res);
    if (st != DB_ONE_RESULT)
        return st;
    *n_revoked = (int)db_affected(res);
    PQclear(res);
    return *n_revoked > 0 ? DB_ONE_RESULT : DB_NO_RESULTS;
}
