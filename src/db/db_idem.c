/* db_idem.c -- Idempotency-Key support for POST /v1/meetings. Inside one db_tx_run the handler
 * takes the (tenant, key) lock, looks for a stored response, and otherwise inserts the meeting and
 * stores its response, so a replay sees either nothing in flight or the finished answer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_internal.h"
#include "strbuf.h"

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

/* ---- the batch forms (POST /v1/meetings/batch): one statement for all the keys ---- */

/* Runs sql with $1 the tenant and $2 keys[0..n) as a text[] (numbered from 1 by WITH
 * ORDINALITY in the first result column); *res as db_exec leaves it. */
static enum db_status
exec_keys(struct db *db, enum db_stmt id, const char *sql, int64_t tenant_id,
          const char *const *keys, size_t n, PGresult **res)
{
    struct strbuf b = {0};
    char tenant[DB_I64_BUF];
    enum db_status st;

    *res = NULL;
    for (size_t i = 0; i < n; i++)
        db_array_text(&b, keys[i]);
    const char *params[] = {db_i64(tenant, tenant_id), db_array_end(&b)};
    if (params[1] == NULL)
        st = db_oom(db, "idempotency keys");
    else
        st = db_exec(db, id, sql, 2, params, res);
    strbuf_fini(&b);
    return st;
}

/* The item a result row is about: its ordinal less one, or n for none of them. */
static size_t
row_item(const PGresult *res, int row, size_t n)
{
    int64_t o = db_get_i64(res, row, 0);
    return o >= 1 && (size_t)o <= n ? (size_t)(o - 1) : n;
}

enum db_status
db_idem_get_many(struct db *db, int64_t tenant_id, const char *const *keys, size_t n,
                 struct db_idem_hit *hits)
{
    static const char sql[] =
        "SELECT u.o, k.request_hash, k.status, coalesce(k.location, '')"
        " FROM unnest($2::text[]) WITH ORDINALITY AS u(key, o)"
        " JOIN idempotency_keys k ON k.tenant_id = $1::bigint AND k.key = u.key";
    PGresult *res;

    memset(hits, 0, n * sizeof *hits);
    enum db_status st = exec_keys(db, STMT_IDEM_GET_MANY, sql, tenant_id, keys, n, &res);
    if (st != DB_ONE_RESULT)
        return st;
    for (int row = 0; row < PQntuples(res); row++) {
        size_t i = row_item(res, row, n);
        if (i == n)
            continue;
        hits[i].found = true;
        snprintf(hits[i].request_hash, sizeof hits[i].request_hash, "%s", PQgetvalue(res, row, 1));
        hits[i].status = (int)db_get_i64(res, row, 2);
        snprintf(hits[i].location, sizeof hits[i].location, "%s", PQgetvalue(res, row, 3));
    }
    PQclear(res);
    return DB_ONE_RESULT;
}

/* The lock of db_idem_lock, key by key, in the order given. */
enum db_status
db_idem_lock_many(struct db *db, int64_t tenant_id, const char *const *keys, size_t n, bool *locked)
{
    static const char sql[] =
        "SELECT u.o, pg_try_advisory_xact_lock(hashtextextended($1::bigint || ':' || u.key, 0))"
        " FROM unnest($2::text[]) WITH ORDINALITY AS u(key, o) ORDER BY u.o";
    PGresult *res;

    memset(locked, 0, n * sizeof *locked);
    enum db_status st = exec_keys(db, STMT_IDEM_LOCK_MANY, sql, tenant_id, keys, n, &res);
    if (st != DB_ONE_RESULT)
        return st;
    for (int row = 0; row < PQntuples(res); row++) {
        size_t i = row_item(res, row, n);
        if (i < n)
            locked[i] = PQgetvalue(res, row, 1)[0] == 't';
    }
    PQclear(res);
    return DB_ONE_RESULT;
}

enum db_status
db_idem_put_many(struct db *db, int64_t tenant_id, const char *const *keys,
                 const char *const *hashes, const struct db_idem_response *resps, size_t n)
{
    static const char sql[] =
        "INSERT INTO idempotency_keys (tenant_id, key, request_hash, status, body, location, etag)"
        " SELECT $1::bigint, k, h, s, b, l, e"
        " FROM unnest($2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::text[])"
        "      AS u(k, h, s, b, l, e)"
        " ON CONFLICT DO NOTHING";
    struct strbuf a[6] = {0};
    char tenant[DB_I64_BUF];
    const char *params[7] = {db_i64(tenant, tenant_id)};
    enum db_status st = DB_ONE_RESULT;

    for (size_t i = 0; i < n; i++) {
        db_array_text(&a[0], keys[i]);
        db_array_text(&a[1], hashes[i]);
        db_array_add(&a[2], "%d", resps[i].status);
        db_array_text(&a[3], resps[i].body ? resps[i].body : "");
        db_array_text(&a[4], resps[i].location);
        db_array_text(&a[5], resps[i].etag);
    }
    for (int i = 0; i < 6; i++)
        if ((params[i + 1] = db_array_end(&a[i])) == NULL)
            st = DB_HARD_ERROR;
    if (st != DB_ONE_RESULT) {
        st = db_oom(db, "idempotency responses");
    } else {
        PGresult *res;
        if ((st = db_exec(db, STMT_IDEM_PUT_MANY, sql, 7, params, &res)) == DB_ONE_RESULT)
            PQclear(res);
    }
    for (int i = 0; i < 6; i++)
        strbuf_fini(&a[i]);
    return st;
}
