/* http_server.h -- the libmicrohttpd daemon: a pool of threads, each with its own worker (database
 * and Redis connections), request size limits, authentication and dispatch through the route
 * table of http_routes.c. */
#ifndef TOCSIN_HTTP_SERVER_H
#define TOCSIN_HTTP_SERVER_H

#include <stddef.h>

#include "config.h"

struct engine;
struct http_server;

/* Binds cfg->http_host:http_port and starts serving. cfg and engine (which handlers tell about
 * reminders they wrote; NULL for none) must outlive the server. Returns NULL with the reason in
 * err. */
struct http_server *http_server_start(const struct config *cfg, struct engine *engine, char *err,
                                      size_t errlen);
/* Stops accepting, lets in-flight requests finish (MHD joins its threads), closes every worker's
 * connections and frees the server. Accepts NULL. */
void http_server_stop(struct http_server *srv);

#endif
