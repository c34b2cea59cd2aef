/* http_server.h -- the libmicrohttpd daemon: a pool of threads, each with its own worker (database
 * and Redis connections), request size limits, authentication and dispatch through the route
 * table of http_routes.c. */
#ifndef TOCSIN_HTTP_SERVER_H
#define TOCSIN_HTTP_SERVER_H

#include <stddef.h>

#include "config.h"

struct engine;
struct http_server;
struct hub;

/* Binds cfg->http_host:http_port and starts serving, with room for TOCSIN_HTTP_CONNECTIONS_MAX
 * API connections plus TOCSIN_STREAMS_MAX streams (raising the descriptor limit when it can).
 * cfg, engine (which handlers tell about reminders they wrote; NULL for none) and hub (which
 * serves the streams) must outlive the server. Returns NULL with the reason in err. */
struct http_server *http_server_start(const struct config *cfg, struct engine *engine,
                                      struct hub *hub, char *err, size_t errlen);
/* Stops accepting, ends the streams, lets in-flight requests finish (MHD joins its threads),
 * closes every worker's connections and frees the server. Accepts NULL. */
void http_server_stop(struct http_server *srv);

#endif
