/* http_rate.h -- TOCSIN_TENANT_RATE: requests a second per tenant on this replica, a token bucket
 * TOCSIN_TENANT_BURST deep (ratelimit.h), in memory: with N replicas behind a balancer a tenant
 * gets up to N times the rate. What counts is a request authenticated as the tenant, by one of
 * its API keys or a browser token its signing key signed; public routes, preflights and requests
 * refused at authentication do not (the per-address connection bound is what holds those). */
#ifndef TOCSIN_HTTP_RATE_H
#define TOCSIN_HTTP_RATE_H

#include "api_errors.h"
#include "http_request.h"

struct ratelimit;

/* Takes one of rq's tenant's tokens: API_E_NONE, or API_E_RATE_LIMITED with rq->retry_after_s
 * set (whole seconds, at least 1) and the refusal counted (tocsin_http_rate_limited_total).
 * rl NULL (the setting is 0): always API_E_NONE. http_server.c calls it once per request, after
 * authentication and before the handler: a stream counts when it opens, not while it lives, and
 * a handler that does many things for one request (a batch endpoint, should one come) is
 * counted once, as that one request. Thread-safe. */
enum api_error http_rate_check(struct ratelimit *rl, struct request *rq);

#endif
