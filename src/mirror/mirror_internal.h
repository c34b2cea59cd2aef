/* mirror_internal.h -- what mirror.c lends to its own parts (mirror_key.c, mirror_checks.c) and to
 * mirror_claim.c, mirror_stream.c and expiry.c (the other Redis users): the connection with its
 * lazy connect and reconnect backoff, one command on it, and the key prefix. Only those files
 * include this; the other users use the connection through redis_conn.h. */
#ifndef TOCSIN_MIRROR_INTERNAL_H
#define TOCSIN_MIRROR_INTERNAL_H

#include "mirror.h"

#include <stddef.h>
#include <stdint.h>

struct redis_conn;
struct redisReply;

#define MIRROR_NUM_MAX 24 /* decimal int64 and NUL */

/* Inspects one reply (error replies included); the caller frees it. Returns 0 or -1. */
typedef int (*mirror_reply_fn)(const struct redisReply *r, void *arg);
/* Makes sure the connection is usable (with Cluster: that a master was picked). Fails at once
 * while the backoff after the last failure runs. 0 or -1. */
int mirror_connect(struct mirror *mi);
/* One command on the current connection; the reply is freed here, after fn looked at it. An I/O
 * error drops the connection. fn's result, or -1. */
int mirror_exec(struct mirror *mi, int argc, const char **argv, mirror_reply_fn fn, void *arg);
/* One command on the master of key's slot with Cluster, else connecting first. */
int mirror_call_key(struct mirror *mi, const char *key, int argc, const char **argv,
                    mirror_reply_fn fn, void *arg);
/* Runs fn on every master in turn (the connection at it): the checks about Redis as a whole. -1
 * when one failed; mirror_conn_error names the last master that did. */
typedef int (*mirror_node_fn)(struct mirror *mi, size_t i, void *arg);
int mirror_each_master(struct mirror *mi, mirror_node_fn fn, void *arg);
/* A reply fn: the reply is +OK. */
int mirror_reply_ok(const struct redisReply *r, void *arg);
/* The address last connected to, or being connected to (with Sentinel the master's as last
 * asked, with Cluster the master last picked); its port in *port. */
const char *mirror_addr(const struct mirror *mi, int *port);

/* The connected connection (connecting first unless the reconnect backoff is running), or NULL.
 * Borrowed: valid until mirror_conn_lost or mirror_free. */
struct redis_conn *mirror_conn(struct mirror *mi);
/* Why the last connect or I/O failed: the socket error, a TLS verify result ("TLS certificate
 * verify failed for host: ..."), "AUTH or SELECT refused"; "" while connected. */
const char *mirror_conn_error(const struct mirror *mi);
/* Which connection mirror_conn gives: one more each time a connection is made. A subscriber
 * whose connection was replaced (the master moved) subscribes again on the new one. */
uint64_t mirror_conn_serial(const struct mirror *mi);
/* Drops the connection after an I/O error and starts the reconnect backoff. */
void mirror_conn_lost(struct mirror *mi);
/* The key prefix (NUL-terminated, at most MIRROR_PREFIX_MAX bytes). */
const char *mirror_prefix(const struct mirror *mi);
/* "<prefix>:<kind>:<reminder_id>:<fire_at_ms>" into buf, the one shape of every per-occurrence
 * key (kind "rem" for reminder keys, "claim" for claims). Its length, or 0 when it does not fit
 * in buflen. */
size_t mirror_occurrence_key(char *buf, size_t buflen, const char *prefix, const char *kind,
                             int64_t reminder_id, int64_t fire_at_ms);

/* The same key with the Cluster form's shard tag: "<prefix>:{s<shard>}:<kind>:<id>:<ms>". */
size_t mirror_tagged_key(char *buf, size_t buflen, const char *prefix, const char *kind,
                         int64_t reminder_id, int64_t fire_at_ms);
/* The Cluster router of a mirror made with seeds (mirror_opts.n_seeds), else NULL. */
struct cluster;
struct cluster *mirror_cluster(const struct mirror *mi);

#endif
