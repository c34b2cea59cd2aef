/* browser_tokens.c -- POST /v1/browser-tokens {"sub","scope","ttl_s"?,"mtg"?}: a tenant's backend
 * gets a browser token for one participant without writing JWT code (docs/design.md section 7). The
 * token is signed with the tenant's newest live signing key, made on first use when the tenant
 * has none (it then shows in GET /v1/signing-keys and can be revoked like any other). */
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>

#include "db_signing_key.h"
#include "handler.h"
#include "http_routes.h"
#include "jwt.h"
#include "timefmt.h"

_Static_assert(CODEC_TOKEN_MTG_MAX == JWT_MTG_MAX, "a request's mtg fits a token");
_Static_assert(CODEC_TOKEN_TTL_MAX_S <= JWT_LIFETIME_MAX, "a requested lifetime is mintable");

/* The key to sign with: the newest live one, or a new one. */
static enum db_status
newest_key(struct db *db, int64_t tenant_id, struct db_signing_key *k)
{
    enum db_status st = db_signing_key_newest(db, tenant_id, k);

    if (st != DB_NO_RESULTS)
        return st;
    st = handler_signing_key_create(db, tenant_id, k);
    /* NO_RESULTS: a concurrent request made the tenant's keys meanwhile; use the newest. */
    return st == DB_NO_RESULTS ? db_signing_key_newest(db, tenant_id, k) : st;
}

static int
mint(struct request *rq, const struct codec_token_request *req, unsigned scopes)
{
    struct db_signing_key k;
    struct jwt_claims c = {.scopes = scopes, .n_mtg = req->n_mtg};
    char expires[TIMEFMT_BUF];
    struct db *db = http_request_db(rq);

    if (db == NULL || newest_key(db, rq->tenant_id, &k) != DB_ONE_RESULT)
        return http_reply_problem(rq, API_E_DB_UNAVAILABLE, NULL);
    snprintf(c.sub, sizeof c.sub, "%s", req->sub);
    memcpy(c.mtg, req->mtg, req->n_mtg * sizeof req->mtg[0]);
    c.iat = timefmt_now_ms() / 1000;
    c.exp = c.iat + req->ttl_s;
    char *token = jwt_mint(k.secret, strlen(k.secret), k.id, rq->cfg->token_audience, &c);
    if (token == NULL)
        return http_reply_problem(rq, API_E_INTERNAL, NULL);
    json_t *v = json_pack("{s:s, s:s, s:s}", "token", token, "expires_at",
                          timefmt_format(c.exp * 1000, expires), "kid", k.id);
    free(token);
    return http_reply_json(rq, MHD_HTTP_CREATED, v, NULL);
}

int
handle_browser_tokens_post(struct request *rq)
{
    struct codec_token_request req;
    struct codec_errors errs = {0};
    unsigned scopes = 0;
    json_t *doc;
    int ret;

    if ((doc = handler_json_body(rq, &ret)) == NULL)
        return ret;
    if (codec_token_request_decode(doc, &req, &errs) != API_E_NONE) {
        ret = http_reply_validation(rq, &errs);
    } else if (jwt_scopes_parse(req.scope, strlen(req.scope), &scopes) != 0) {
        snprintf(errs.e[0].field, sizeof errs.e[0].field, "scope");
        snprintf(errs.e[0].message, sizeof errs.e[0].message,
                 "must be space-separated names among meetings:read meetings:write "
                 "notifications push");
        errs.n = 1;
        ret = http_reply_validation(rq, &errs);
    } else {
        ret = mint(rq, &req, scopes);
    }
    codec_token_request_fini(&req);
    json_decref(doc);
    return ret;
}
