/* http_listen.h -- the listening socket and the one thread that accepts on it. libmicrohttpd
 * 0.9.75 accepting by itself puts the listening socket in every pool thread's epoll set, so each
 * new connection wakes every HTTP thread and all but one find nothing to accept: with 16 threads,
 * 13 context switches per connection, and during a reconnect storm (1,000 connections a second)
 * API requests waited for CPU behind those wake-ups. Here one thread accepts and hands each
 * connection to one pool thread (MHD_add_connection; MHD picks the thread by the descriptor, so
 * a new connection may land on a thread busy with a database call, where before only an idle one
 * took it). MHD's own bounds still apply to every connection handed over (the per-address one
 * closes it); the total is kept here: while the daemon holds or is about to start `max`
 * connections, new ones wait in the backlog, as they did when MHD stopped listening at its limit.
 * A handed-over connection counts as pending until its thread starts it (http_listen_started):
 * MHD counts it only then, and a burst counted late would pass the bound, where MHD would close
 * the extra connections unanswered. The daemon's own limit is set above `max`
 * (http_listen_daemon_limit) so that its check never closes one that the acceptor let in. */
#ifndef TOCSIN_HTTP_LISTEN_H
#define TOCSIN_HTTP_LISTEN_H

#include <stddef.h>
#include <sys/socket.h>

struct MHD_Daemon;
struct http_listener;

#define HTTP_LISTEN_FULL_POLL_MS 50    /* at max connections: how often room is checked */
#define HTTP_LISTEN_ERROR_PAUSE_MS 100 /* after accept failed for all (descriptors, memory) */
#define HTTP_LISTEN_BATCH_MAX 64       /* accepted per wake-up before the stop signal is checked */

/* Binds and listens on sa (before the daemon starts, so a taken address fails first). NULL with
 * err set on failure. */
struct http_listener *http_listen_open(const struct sockaddr *sa, socklen_t len, char *err,
                                       size_t errlen);
/* The connection limit to give the daemon for a bound of max with threads in its pool: room for
 * the pending connections of one batch on every thread, and for MHD spreading them by descriptor
 * rather than by load (each thread's limit is its share of this). */
unsigned http_listen_daemon_limit(unsigned max, unsigned threads);
/* Starts the accepting thread for d, which takes at most max connections at once. Returns 0, or
 * -1 when the thread cannot start. */
int http_listen_start(struct http_listener *l, struct MHD_Daemon *d, unsigned max);
/* A connection handed over has started (MHD_CONNECTION_NOTIFY_STARTED, on its pool thread). */
void http_listen_started(struct http_listener *l);
/* Stops accepting and closes the socket: connections not yet accepted are refused. Idempotent;
 * safe on a listener that never started. */
void http_listen_stop(struct http_listener *l);
/* Frees l once the daemon stopped (no http_listen_started after this). NULL-safe. */
void http_listen_free(struct http_listener *l);

#endif
