/* http_stream.h -- the libmicrohttpd side of a live stream (GET /v1/stream): the response whose
 * content reader takes bytes from the hub (hub.h), suspending the connection while there are none
 * (never a spinning callback), resumed by the hub when it appends; the hub's cut closes the socket.
 * The connection's idle timeout is off: the hub finds clients that closed their socket (its peer
 * check) and those that vanished (a heartbeat write fails). */
#ifndef TOCSIN_HTTP_STREAM_H
#define TOCSIN_HTTP_STREAM_H

#include "http_request.h"
#include "hub.h"

/* Opens a stream for who on rq's connection and queues its 200 text/event-stream response; or
 * replies 429 / 503 with Retry-After when a limit is reached. Returns the MHD result. */
int http_stream_start(struct request *rq, const struct hub_subscriber *who);

#endif
