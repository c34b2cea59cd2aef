/* http_listen.h -- the listening socket and the one thread that accepts on it. libmicrohttpd
 * 0.9.75 accepting by itself puts the listening socket in every pool thread's epoll set, so each
 * new connection wakes every HTTP thread and all but one find nothing to accept: with 16 threads,
 * 13 context switches per connection, and during a reconnect storm (1,000 connections a second)
 * API requests waited for CPU behind those wake-ups. Here one thread accepts and hands each
 * connection to one thread of one of two pools (MHD_add_connection; MHD picks the thread by the
 * descriptor, so a new connection may land on a thread busy with a database call, where before
 * only an idle one took it):
 *
 * - the stream pool, when its first bytes are "GET /v1/stream" (a new connection waits up to
 *   HTTP_LISTEN_WAIT_MS for them: a client's request follows its handshake, but the acceptor may
 *   take the connection between the two): its threads run at a lower priority (http_server.c), so
 * writing a reminder to thousands of streams, or their backlogs to thousands reconnecting, takes
 * the CPU only as far as API requests leave it;
 * - the API pool otherwise, also when nothing came in time (a stream there is served as well, at
 *   the API's priority).
 *
 * The bounds are kept here, across both pools. Per client address: a connection past
 * `per_addr` is closed at once (addr_count.h; each daemon's own bound would count one pool
 * only). A trusted proxy's connections (forwarded.h) are not counted by its address, which all
 * its clients share: each of its requests holds a place for the client it names instead, from
 * its head to its end (http_listen_client_take), so one browser behind the balancer is held to
 * the same bound as one connecting directly. In total: while the daemons hold or are about to start
 * `max` connections, new ones wait in the backlog, as they did when MHD stopped listening at its
 * limit. A handed-over connection counts as pending until its thread starts it
 * (http_listen_started): MHD counts it only then, and a burst counted late would pass the bound,
 * where MHD would close the extra connections unanswered. Each daemon's own limit is set so that no
 * thread's share of it is below `max` (http_listen_daemon_limit): its check never closes one that
 * the acceptor let in. */
#ifndef TOCSIN_HTTP_LISTEN_H
#define TOCSIN_HTTP_LISTEN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

struct forwarded_proxies;
struct MHD_Daemon;
struct http_listener;

enum http_pool { HTTP_POOL_API, HTTP_POOL_STREAMS, HTTP_POOLS };

#define HTTP_LISTEN_FULL_POLL_MS 50    /* at max connections: how often room is checked */
#define HTTP_LISTEN_ERROR_PAUSE_MS 100 /* after accept failed for all (descriptors, memory) */
#define HTTP_LISTEN_BATCH_MAX 64       /* accepted per wake-up before the stop signal is checked */
#define HTTP_LISTEN_PEEK_MAX 16        /* first bytes of a connection read for its pool */
#define HTTP_LISTEN_WAIT_MS 100        /* a new connection waits this long for its first bytes */
#define HTTP_LISTEN_WAIT_MAX 256       /* connections waiting for them; past it, the API pool */

/* Binds and listens on sa (before the daemon starts, so a taken address fails first). NULL with
 * err set on failure. */
struct http_listener *http_listen_open(const struct sockaddr *sa, socklen_t len, char *err,
                                       size_t errlen);
/* The connection limit to give a daemon for a bound of max with threads in its pool: each thread's
 * limit, its share of this, holds the whole bound and a batch. MHD spreads connections over its
 * threads by descriptor, not by load, and one that a thread finds over its share when it takes it
 * up is closed there without a word to us (no NOTIFY_STARTED or CLOSED), leaving its pending
 * count and its address's place taken for good; the acceptor's own bound keeps the total. */
unsigned http_listen_daemon_limit(unsigned max, unsigned threads);
/* The pool for a connection whose first n bytes are head (n may be 0: nothing arrived yet). */
enum http_pool http_listen_route(const char *head, size_t n);
/* Starts the accepting thread for the daemons of the pools, which take at most max connections at
 * once, and per_addr from one client address; the connections of trusted (borrowed, for as long
 * as l lives) are left to their requests. Returns 0, or -1 when the thread cannot start. */
int http_listen_start(struct http_listener *l, struct MHD_Daemon *const pools[HTTP_POOLS],
                      unsigned max, unsigned per_addr, const struct forwarded_proxies *trusted);
/* A connection handed over has started (MHD_CONNECTION_NOTIFY_STARTED, on its pool thread). */
void http_listen_started(struct http_listener *l);
/* A connection that started has closed (MHD_CONNECTION_NOTIFY_CLOSED): sa is its client's
 * address, as accepted (an IPv4 or IPv6 one: the listener is TCP). */
void http_listen_closed(struct http_listener *l, const struct sockaddr *sa);
/* A request that came through a trusted proxy takes a place for its client (an IPv4 or IPv6
 * address, forwarded_client's), counted with that address's own connections: false when it holds
 * per_addr already. Any thread, once started; given back with http_listen_client_give. */
bool http_listen_client_take(struct http_listener *l, const struct sockaddr *client);
void http_listen_client_give(struct http_listener *l, const struct sockaddr *client);
/* Stops accepting and closes the socket: connections not yet accepted are refused. Idempotent;
 * safe on a listener that never started. */
void http_listen_stop(struct http_listener *l);
/* Frees l once the daemon stopped (no http_listen_started after this). NULL-safe. */
void http_listen_free(struct http_listener *l);

#endif
