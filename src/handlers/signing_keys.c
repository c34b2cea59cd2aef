/* signing_keys.c -- POST/GET/DELETE /v1/signing-keys: the HS256 keys a tenant's backend signs
 * browser tokens with (docs/design.md section 7). The secret is made here and shown once; two live
 * keys at most, so that a new one can be rolled out before the old one is revoked. The key id is
 * the tokens' kid. */
#include <microhttpd.h>
#include <stdio.h>
#include <string.h>

#include "b64.h"
#include "crypto.h"
#include "db_signing_key.h"
#include "handler.h"
#include "http_routes.h"
#include "timefmt.h"

#define KEY_ID_RANDOM 12     /* bytes: 16 base64url characters after "sk_" */
#define KEY_SECRET_RANDOM 32 /* bytes: 43 base64url characters after "tsk_" */
#define LOCATION_MAX 96

_Static_assert(3 + B64URL_ENCODED_LEN(KEY_ID_RANDOM) <= SIGNING_KEY_ID_MAX, "id fits");
_Static_assert(4 + B64URL_ENCODED_LEN(KEY_SECRET_RANDOM) <= SIGNING_KEY_SECRET_MAX, "secret fits");

int
handler_signing_key_create(struct db *db, int64_t tenant_id, struct db_signing_key *k)
{
    uint8_t id[KEY_ID_RANDOM], secret[KEY_SECRET_RANDOM];

    memset(k, 0, sizeof *k);
    if (crypto_random_bytes(id, sizeof id) != 0 ||
        crypto_random_bytes(secret, sizeof secret) != 0) {
        db_note_error(db, "signing key: no random bytes");
        return DB_HARD_ERROR;
    }
    memcpy(k->id, "sk_", 3);
    k->id[3 + b64url_encode(id, sizeof id, k->id + 3)] = '\0';
    memcpy(k->secret, "tsk_", 4);
    k->secret[4 + b64url_encode(secret, sizeof secret, k->secret + 4)] = '\0';
    k->tenant_id = tenant_id;
    return db_signing_key_insert(db, k);
}

static json_t *
encode(const struct db_signing_key *k, bool with_secret)
{
    char created[TIMEFMT_BUF];
    json_t *v = json_pack("{s:s, s:s}", "id", k->id, "created_at",
                          timefmt_format(k->created_at_ms, created));

    if (v != NULL && with_secret)
        json_object_set_new(v, "secret", json_string(k->secret));
    return v;
}

int
handle_signing_keys_post(struct request *rq)
{
    struct db_signing_key k;
    char location[LOCATION_MAX];
    struct db *db;
    int ret;

    if (handler_no_query(rq, &ret) != 0)
        return ret;
    if (rq->body_len > 0 && (rq->body_len != 2 || memcmp(rq->body, "{}", 2) != 0)) {
        /* A validation problem always names its fields (the contract): here the whole body. */
        struct codec_errors errs = {.n = 1};
        snprintf(errs.e[0].message, sizeof errs.e[0].message,
                 "this endpoint takes no body (or {})");
        return http_reply_validation(rq, &errs);
    }
    if ((db = handler_db(rq, &ret)) == NULL)
        return ret;
    enum db_status st = handler_signing_key_create(db, rq->tenant_id, &k);
    if (st != DB_ONE_RESULT)
        return handler_db_failure(rq, st, API_E_SIGNING_KEY_LIMIT,
                                  "revoke one of the two live keys first");
    snprintf(location, sizeof location, "/v1/signing-keys/%s", k.id);
    struct http_reply_meta meta = {NULL, location, NULL, NULL};
    return http_reply_json(rq, MHD_HTTP_CREATED, encode(&k, true), &meta);
}

static void
add_row(void *arg, const struct db_signing_key *k)
{
    json_array_append_new(arg, encode(k, false));
}

int
handle_signing_keys_list(struct request *rq)
{
    struct db *db;
    json_t *items;
    int ret;

    if ((db = handler_db_no_query(rq, &ret)) == NULL)
        return ret;
    items = json_array();
    return handler_reply_items(rq, db_signing_key_list(db, rq->tenant_id, add_row, items), items);
}

int
handle_signing_key_delete(struct request *rq)
{
    struct db *db;
    int ret;

    if ((db = handler_db_no_query(rq, &ret)) == NULL)
        return ret;
    return handler_reply_deleted(rq, db_signing_key_revoke(db, rq->tenant_id, rq->match.args[0]),
                                 API_E_SIGNING_KEY_NOT_FOUND);
}
