/* http_client.h -- who a request's client is: the peer, or, when the peer is a trusted proxy
 * (TOCSIN_TRUSTED_PROXIES), the address its X-Forwarded-For names (forwarded.h). A request through
 * a trusted proxy holds a place in that client's per-address bound from its head to its end
 * (http_listen.h), which the proxy's connection itself does not. */
#ifndef TOCSIN_HTTP_CLIENT_H
#define TOCSIN_HTTP_CLIENT_H

#include "api_errors.h"

struct http_listener;
struct request;

#define HTTP_CLIENT_RETRY_AFTER_S 1    /* a client at its bound: its other requests end soon */
#define HTTP_CLIENT_LOG_EVERY_MS 60000 /* an unreadable header: one line a minute at most */

/* Fills rq->client once the request's head is in and, behind a trusted proxy, takes the client's
 * place in l. API_E_NONE, or API_E_TOO_MANY_CONNECTIONS (nothing taken) when the client holds
 * TOCSIN_HTTP_CONNECTIONS_PER_ADDR places already. */
enum api_error http_client_take(struct request *rq, struct http_listener *l);
/* Gives back what http_client_take took, if anything (on the request's completion). */
void http_client_give(struct request *rq, struct http_listener *l);

#endif
