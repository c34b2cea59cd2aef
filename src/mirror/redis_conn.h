/* redis_conn.h -- one Redis connection: hiredis as the protocol library only (its reply reader
 * and command formatter) over a struct transport (core/transport.h: plain TCP or TLS), so every
 * Redis user in tocsin has one code path whatever the wire. Blocking, bounded by the transport's
 * timeouts; after any -1 the connection is unusable and is to be freed (the protocol may be out of
 * sync). A reply is a hiredis redisReply, freed with freeReplyObject. One thread at a time. */
#ifndef TOCSIN_REDIS_CONN_H
#define TOCSIN_REDIS_CONN_H

#include <stddef.h>

struct redisReply;
struct transport_tls;
struct redis_conn;

/* Connects (transport_connect: connect_ms for the connect and the TLS handshake, io_ms for each
 * read or write after it). tls NULL = plain TCP. NULL with the reason in err. */
struct redis_conn *redis_conn_open(const char *host, int port, const struct transport_tls *tls,
                                   int connect_ms, int io_ms, char *err, size_t errlen);
void redis_conn_free(struct redis_conn *c);

/* Queues one command (lens NULL = strlen of each argument); nothing is sent before
 * redis_conn_flush or a read of a reply. 0 or -1 (out of memory). */
int redis_conn_append(struct redis_conn *c, int argc, const char **argv, const size_t *lens);
/* Sends everything queued. 0 or -1. */
int redis_conn_flush(struct redis_conn *c);
/* Sends what is queued, then reads the next reply (error replies included: they are replies).
 * 0 with *out set, or -1 (I/O or protocol error). */
int redis_conn_reply(struct redis_conn *c, struct redisReply **out);
/* redis_conn_append and redis_conn_reply in one: the reply, or NULL on an I/O error. */
struct redisReply *redis_conn_command(struct redis_conn *c, int argc, const char **argv,
                                      const size_t *lens);
/* A reply already received and buffered, without any I/O: 0 with *out set (NULL when none is
 * complete yet), or -1 on a protocol error. */
int redis_conn_buffered(struct redis_conn *c, struct redisReply **out);
/* Hands each reply already buffered to fn (which must not keep it: it is freed afterwards), for a
 * subscribed connection's pushed messages. 0, or -1 on a protocol error. */
typedef void (*redis_conn_reply_fn)(void *arg, const struct redisReply *r);
int redis_conn_drain(struct redis_conn *c, redis_conn_reply_fn fn, void *arg);
/* Waits up to wait_ms for bytes to read: 1, 0 when none came, -1 on error. */
int redis_conn_wait(struct redis_conn *c, int wait_ms);
/* One read from the wire into the reply reader. 0 or -1. */
int redis_conn_fill(struct redis_conn *c);
/* 1 once a reply was Redis's READONLY error: the node was a master and is a replica now (a
 * failover demoted it, or a DNS name moved). The connection still works; its writes do not. */
int redis_conn_readonly(const struct redis_conn *c);
/* The socket, for its options (tests check keepalive); I/O goes through the calls above. */
int redis_conn_fd(const struct redis_conn *c);
/* Why the last call failed ("" when nothing did). */
const char *redis_conn_error(const struct redis_conn *c);

#endif
