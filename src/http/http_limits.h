/* http_limits.h -- deadlines for receiving a request. libmicrohttpd's timeout only measures
 * silence, so a client that trickles a byte every few seconds holds its connection forever. Here
 * each connection has at most one deadline, by phase:
 *   awaiting a request head  (opened, or kept alive after a response): head_timeout_s;
 *   receiving the body       (head complete, body not yet):            body_timeout_s;
 *   request received         (the handler answers, a stream may run):  none.
 * A thread closes (shutdown(2)) every connection past its deadline; MHD then sees the end of the
 * stream and cleans up as for any client that went away. Responses, streamed ones included, are
 * never cut by these deadlines. The per-address connection bound is the acceptor's
 * (http_listen.h, over both pools). */
#ifndef TOCSIN_HTTP_LIMITS_H
#define TOCSIN_HTTP_LIMITS_H

#include <stdint.h>

struct MHD_Connection;
struct http_limits;

#define HTTP_LIMITS_TICK_MS 250 /* how often deadlines are checked: they act up to this late */

/* Starts the deadline thread. Returns NULL when out of memory or threads. Free with
 * http_limits_free after the MHD daemon stopped. */
struct http_limits *http_limits_new(int head_timeout_s, int body_timeout_s);
void http_limits_free(struct http_limits *l);

/* For MHD_OPTION_NOTIFY_CONNECTION (http_server.c calls it; cls = the http_limits):
 * a connection starts awaiting its first head when it opens and is forgotten, before MHD closes
 * its socket, when it closes. */
void http_limits_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                               int toe);

/* Phase changes, from MHD's callbacks for the connection (any pool thread). */
void http_limits_body_expected(struct MHD_Connection *conn); /* head complete */
void http_limits_received(struct MHD_Connection *conn);      /* whole request in */
void http_limits_head_expected(struct MHD_Connection *conn); /* response done, kept alive */

#endif
