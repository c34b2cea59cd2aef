/* mirror_internal.h -- what mirror.c lends to mirror_claim.c, mirror_stream.c and expiry.c (the
 * other Redis users): the connection with its lazy connect and reconnect backoff, and the key
 * prefix. Only those files include this; the caller uses the connection through redis_conn.h. */
#ifndef TOCSIN_MIRROR_INTERNAL_H
#define TOCSIN_MIRROR_INTERNAL_H

#include "mirror.h"

struct redis_conn;

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
