/* db_idem.c -- Idempotency-Key support for POST /v1/meetings. Inside one db_tx_run the handler
 * takes the (tenant, key) lock, looks for a stored response, and otherwise inserts the meeting and
 * stores its response, so a replay sees either nothing in flight or the finished answer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_internal.h"

void
db_idem_response_fini(struct db_idem_response *r)
{
    if (r == NULL)
        return;
    free(r->body);
    free(r->location);
    free(r->etag);
    memset(r, 0, sizeof(*r));
}

/* A transaction-scoped lock: outside db_tx_run it would be released as soon as it is taken. The
 * 64-bit hash of "tenant:key" can collide; a collision only makes an unrelated request get a 409
 * (retry later) while the other's transaction runs, and never mixes up stored responses. */
enum db_status
db_idem_lock(struct db *db, int64_t tenant_id, const char *key)
{
    static const char sql[] =
        "SELECT pg_try_advisory_xact_lock(hashtextextended($1::bigint || ':' || $2, 0))";
    char tenant[DB_I64_BUF];
    const char *params[] = {db_i64(tenant, tenant_id), key};
    PGresult *res;
    enum db_status st = db_exec(db, STMT_IDEM_LOCK, sql, 2, params, &res);

    if (st != DB_ONE_RESULT)
        return st;
    st = PQntuples(res) == 1 && PQgetvalue(res, 0, 0)[0] == 't' ? DB_ONE_RESULT : DB_NO_RESULTS;
    PQclear(res);
    return st;
}

/* On ONE_RESULT resp owns copies (free with db_idem_response_fini); on anything else resp is
 * left zeroed. */
enum db_status
db_idem_get(struct db *db, int64_t tenant_id, const char *key,
            char request_hash[DB_REQUEST_HASH_LEN + 1], struct db_idem_response *resp)
{
    static const char sql[] = "SELECT request_hash, status, body, location, etag"
                              " FROM idempotency_keys WHERE tenant_id = $1::bigint AND key = $2";
    char tenant[DB_I64_BUF];
    const char *params[] = {db_i64(tenant, tenant_id), key};
    PGresult *res;

    memset(resp, 0, sizeof(*resp));
    enum db_status st = db_exec(db, STMT_IDEM_GET, sql, 2, params, &res);
    if (st != DB_ONE_RESULT)
        return st;
    st = DB_NO_RESULTS;
    if (PQntuples(res) == 1) {
        snprintf(request_hash, DB_REQUEST_HASH_LEN + 1, "%s", PQgetvalue(res, 0, 0));
        resp->status = (int)db_get_i64(res, 0, 1);
        resp->body = db_get_str(res, 0, 2);
        resp->location = db_get_str(res, 0, 3);
        resp->etag = db_get_str(res, 0, 4);
        st = DB_ONE_RESULT;
        if (resp->body == NULL || (resp->location == NULL && !PQgetisnull(res, 0, 3)) ||
            (resp->etag == NULL && !PQgetisnull(res, 0, 4))) {
            db_set_err(db, "idempotency response: out of memory");
            db_idem_response_fini(resp);
            st = DB_HARD_ERROR;
        }
    }
    PQclear(res);
    return st;
}

/* NO_RESULTS when a response for (tenant, key) is already stored: under db_idem_lock that
 * cannot happen, so the caller may treat it as a conflict. */
enum db_status
db_idem_put(struct db *db, int64_t tenant_id, const char *key,
            const char request_hash[DB_REQUEST_HASH_LEN + 1], const struct db_idem_response *resp)
{
    static const char sql[] =
        "INSERT INTO idempotency_keys (tenant_id, key, request_hash, status, body, location, etag)"
        " VALUES ($1::bigint, $2, $3, $4::int, $5, $6, $7) ON CONFLICT DO NOTHING";
    char tenant[DB_I64_BUF], status[DB_I64_BUF];
    const char *params[] = {
        db_i64(tenant, tenant_id),
        key,
        request_hash,
        db_i64(status, resp->status),
        resp->body ? resp->body : "",
        resp->location,
        resp->etag,
    };
    return db_exec_one_row(db, STMT_IDEM_PUT, sql, 7, params);
}
