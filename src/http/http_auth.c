/* http_auth.c -- authentication and scopes of http_auth.h. A bearer value with dots is a JWT (API
 * keys have none). The token's kid names a signing key, which names the tenant: no claim ever
 * does. Both kinds of key are looked up in PostgreSQL on the thread's own connection and kept in
 * a small per-thread cache. */
#include "http_auth.h"

#include <string.h>
#include <strings.h>

#include "apikey.h"
#include "crypto.h"
#include "db.h"
#include "db_signing_key.h"
#include "jwt.h"
#include "log.h"
#include "timefmt.h"
#include <microhttpd.h>
#include <stdio.h>

_Static_assert(PRINCIPAL_SUB_MAX >= JWT_SUB_BYTES_MAX, "a token's sub fits a principal");
_Static_assert(PRINCIPAL_MTG_MAX >= JWT_MTG_MAX, "a token's mtg fits a principal");
_Static_assert(SCOPE_MEETINGS_READ == JWT_SCOPE_MEETINGS_READ &&
                   SCOPE_MEETINGS_WRITE == JWT_SCOPE_MEETINGS_WRITE &&
                   SCOPE_NOTIFICATIONS == JWT_SCOPE_NOTIFICATIONS && SCOPE_PUSH == JWT_SCOPE_PUSH,
               "request scopes are the token's scope bits");
_Static_assert(SIGNING_KEY_ID_MAX == JWT_KID_MAX, "a kid names a signing key");

/* ---- API keys ---------------------------------------------------------------------------- */

static int
api_cache_find(struct http_worker *w, const uint8_t hash[32], int64_t *tenant)
{
    int64_t now = timefmt_mono_ms();

    for (size_t i = 0; i < AUTH_CACHE_SLOTS; i++) {
        struct auth_cache_slot *s = &w->auth[i];
        if (s->expires_ms > now && crypto_memeq(s->hash, hash, 32)) {
            *tenant = s->tenant_id;
            return 1;
        }
    }
    return 0;
}

static void
api_cache_put(struct http_worker *w, const uint8_t hash[32], int64_t tenant)
{
    if (w->cfg->auth_cache_ms == 0)
        return;
    struct auth_cache_slot *s = &w->auth[w->auth_next++ % AUTH_CACHE_SLOTS];
    memcpy(s->hash, hash, 32);
    s->tenant_id = tenant;
    s->expires_ms = timefmt_mono_ms() + w->cfg->auth_cache_ms;
}

static enum api_error
api_key(struct request *rq, const char *key, size_t len)
{
    char prefix[APIKEY_PREFIX_LEN + 1];
    uint8_t hash[APIKEY_HASH_LEN];

    if (apikey_parse(key, len, prefix) != 0)
        return API_E_UNAUTHORIZED;
    apikey_hash(key, len, hash);
    if (api_cache_find(rq->w, hash, &rq->tenant_id))
        return API_E_NONE;
    struct db *db = http_request_db(rq);
    if (db == NULL)
        return API_E_DB_UNAVAILABLE;
    switch (db_keys_lookup(db, prefix, hash, &rq->tenant_id)) {
    case DB_HARD_ERROR:
    case DB_SOFT_ERROR:
        return API_E_DB_UNAVAILABLE;
    case DB_NO_RESULTS:
        return API_E_UNAUTHORIZED;
    case DB_ONE_RESULT:
        break;
    }
    api_cache_put(rq->w, hash, rq->tenant_id);
    return API_E_NONE;
}

/* ---- browser tokens ---------------------------------------------------------------------- */

static const struct signing_cache_slot *
key_cache_find(struct http_worker *w, const char *kid)
{
    int64_t now = timefmt_mono_ms();

    for (size_t i = 0; i < SIGNING_CACHE_SLOTS; i++) {
        const struct signing_cache_slot *s = &w->signing[i];
        if (s->expires_ms > now && strcmp(s->kid, kid) == 0)
            return s;
    }
    return NULL;
}

/* The live signing key named kid: from the cache or PostgreSQL. NULL with *e set. */
static const struct signing_cache_slot *
signing_key(struct request *rq, const char *kid, enum api_error *e)
{
    const struct signing_cache_slot *hit = key_cache_find(rq->w, kid);
    struct db_signing_key k;
    struct db *db;

    if (hit != NULL)
        return hit;
    if ((db = http_request_db(rq)) == NULL) {
        *e = API_E_DB_UNAVAILABLE;
        return NULL;
    }
    switch (db_signing_key_get(db, kid, &k)) {
    case DB_HARD_ERROR:
    case DB_SOFT_ERROR:
        *e = API_E_DB_UNAVAILABLE;
        return NULL;
    case DB_NO_RESULTS:
        *e = API_E_INVALID_TOKEN;
        return NULL;
    case DB_ONE_RESULT:
        break;
    }
    struct signing_cache_slot *s = &rq->w->signing[rq->w->signing_next++ % SIGNING_CACHE_SLOTS];
    snprintf(s->kid, sizeof s->kid, "%s", k.id);
    snprintf(s->secret, sizeof s->secret, "%s", k.secret);
    s->tenant_id = k.tenant_id;
    s->expires_ms = timefmt_mono_ms() + rq->w->cfg->auth_cache_ms;
    return s;
}

static void
take_claims(struct request *rq, const struct jwt_claims *c)
{
    rq->who.browser = true;
    rq->who.scopes = c->scopes;
    snprintf(rq->who.sub, sizeof rq->who.sub, "%s", c->sub);
    rq->who.expires_ms = c->exp * 1000;
    rq->who.n_mtg = c->n_mtg;
    memcpy(rq->who.mtg, c->mtg, c->n_mtg * sizeof c->mtg[0]);
}

static enum api_error
browser_token(struct request *rq, const char *tok, size_t len, bool in_url)
{
    char kid[JWT_KID_MAX + 1];
    struct jwt_claims claims;
    enum api_error e = API_E_INVALID_TOKEN;
    enum jwt_error je = jwt_peek_kid(tok, len, kid);
    const struct signing_cache_slot *key = je == JWT_OK ? signing_key(rq, kid, &e) : NULL;

    if (key == NULL) {
        LOG_DEBUG("browser token refused: %s",
                  je == JWT_OK ? "unknown or revoked signing key" : jwt_error_text(je));
        return e;
    }
    struct jwt_policy policy = {rq->cfg->token_audience,
                                in_url ? TOKEN_URL_LIFETIME_MAX_S : TOKEN_LIFETIME_MAX_S,
                                TOKEN_LEEWAY_S};
    je = jwt_verify(tok, len, key->secret, strlen(key->secret), &policy, timefmt_now_ms() / 1000,
                    &claims);
    if (je != JWT_OK) {
        LOG_DEBUG("browser token refused: %s", jwt_error_text(je));
        return API_E_INVALID_TOKEN;
    }
    rq->tenant_id = key->tenant_id;
    take_claims(rq, &claims);
    snprintf(rq->who.kid, sizeof rq->who.kid, "%s", key->kid);
    return API_E_NONE;
}

/* ---- the entry points -------------------------------------------------------------------- */

enum api_error
http_auth_authenticate(struct request *rq)
{
    const char *h = http_request_header(rq, MHD_HTTP_HEADER_AUTHORIZATION);
    bool in_url = false;

    memset(&rq->who, 0, sizeof rq->who);
    if (h == NULL && (rq->match.route->flags & ROUTE_TOKEN_QUERY) &&
        (h = http_request_query(rq, "access_token")) != NULL) {
        in_url = true;
    } else if (h == NULL || strncasecmp(h, "Bearer ", 7) != 0) {
        return API_E_UNAUTHORIZED;
    } else {
        h += 7;
        h += strspn(h, " ");
    }
    size_t len = strlen(h);
    if (memchr(h, '.', len) != NULL)
        return browser_token(rq, h, len, in_url);
    return in_url ? API_E_INVALID_TOKEN : api_key(rq, h, len);
}

enum api_error
http_auth_authorize(const struct request *rq)
{
    unsigned flags = rq->match.route->flags, need = 0;

    if (flags & ROUTE_PUBLIC)
        return API_E_NONE;
    if (!rq->who.browser) /* an API key does everything but what needs a participant */
        return flags & (ROUTE_NOTIFICATIONS | ROUTE_PUSH) && !(flags & ROUTE_KEY_TOO)
                   ? API_E_INSUFFICIENT_SCOPE
                   : API_E_NONE;
    if (flags & ROUTE_API_KEY)
        return API_E_INSUFFICIENT_SCOPE;
    need |= flags & ROUTE_READ ? SCOPE_MEETINGS_READ : 0;
    need |= flags & ROUTE_WRITE ? SCOPE_MEETINGS_WRITE : 0;
    need |= flags & ROUTE_NOTIFICATIONS ? SCOPE_NOTIFICATIONS : 0;
    need |= flags & ROUTE_PUSH ? SCOPE_PUSH : 0;
    return need != 0 && (rq->who.scopes & need) == need ? API_E_NONE : API_E_INSUFFICIENT_SCOPE;
}

bool
http_auth_meeting_allowed(const struct request *rq, const char *meeting_id)
{
    if (!rq->who.browser || rq->who.n_mtg == 0)
        return true;
    for (size_t i = 0; i < rq->who.n_mtg; i++)
        if (strcmp(rq->who.mtg[i], meeting_id) == 0)
            return true;
    return false;
}
