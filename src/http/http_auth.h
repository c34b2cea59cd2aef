/* http_auth.h -- who makes a request and what it may do. Credentials are bearer values: a tenant's
 * API key (servers), or a browser token (a JWT that a tenant's signing key signed, for one
 * participant, docs/design.md section 7). Verified keys are cached per HTTP thread for
 * TOCSIN_AUTH_CACHE_MS, so a revoked key or signing key stops working within that time. */
#ifndef TOCSIN_HTTP_AUTH_H
#define TOCSIN_HTTP_AUTH_H

#include "api_errors.h"
#include "http_request.h"

#define TOKEN_LEEWAY_S 30          /* clock skew allowed on a token's exp, iat and nbf */
#define TOKEN_LIFETIME_MAX_S 86400 /* exp - iat of a token in a header */
/* exp - iat of a token in a URL (?access_token=), kept short: proxies log URLs and browsers keep
 * them in their history. */
#define TOKEN_URL_LIFETIME_MAX_S 900

/* Authenticates rq from its Authorization header or, on routes that allow it and when there is
 * no header, its ?access_token=. Returns API_E_NONE with rq->tenant_id and rq->who set, or the
 * error to answer: UNAUTHORIZED (no or bad API key), INVALID_TOKEN (a browser token that is
 * malformed, expired, for another audience, signed by an unknown or revoked key...),
 * DB_UNAVAILABLE. */
enum api_error http_auth_authenticate(struct request *rq);
/* Whether rq->who may call rq's route: API_E_NONE or API_E_INSUFFICIENT_SCOPE. */
enum api_error http_auth_authorize(const struct request *rq);
/* Whether a browser token may see meeting_id by its mtg claim (API keys, and tokens without
 * that claim: always). */
bool http_auth_meeting_allowed(const struct request *rq, const char *meeting_id);

#endif
