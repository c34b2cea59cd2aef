/* cluster_slot.h -- the pure parts of the Redis Cluster router (cluster.h): the key slot (CRC16
 * of the key or of its {hash tag}, as the Cluster specification defines it), the slot map read
 * from a CLUSTER SLOTS reply, and what to do with one reply (the redirect state machine: MOVED,
 * ASK, or the answer). No I/O. */
#ifndef TOCSIN_CLUSTER_SLOT_H
#define TOCSIN_CLUSTER_SLOT_H

#include <stddef.h>
#include <stdint.h>

#include "redis_url.h"

struct redisReply;

#define CLUSTER_SLOTS 16384 /* fixed by the Cluster specification */
/* Masters one map holds: deployments run 3 to a few dozen; Redis's own advice tops out near
 * 1000, which this client is not built for (a connection per master per thread). */
#define CLUSTER_NODES_MAX 64
#define CLUSTER_NO_NODE 0xff /* a slot no master serves (yet) */
/* Redirects one command follows (MOVED and ASK together) before it fails: a reshard moves a
 * slot once, a failover once more; a loop beyond that is a broken cluster. */
#define CLUSTER_REDIRECTS_MAX 5

_Static_assert(CLUSTER_NODES_MAX < CLUSTER_NO_NODE, "node indexes fit a byte");

/* The slot of a key: CRC16 (XMODEM) of the whole key, or of the text between its first '{' and
 * the first '}' after it when that text is not empty. */
unsigned cluster_key_slot(const char *key, size_t len);

struct cluster_map {
    size_t n; /* masters */
    struct redis_url_addr node[CLUSTER_NODES_MAX];
    uint8_t slot[CLUSTER_SLOTS]; /* index into node, or CLUSTER_NO_NODE */
};

/* Fills m from a CLUSTER SLOTS reply ([[start, end, [host, port, id...], replicas...]...]). A
 * master named with an empty host (Redis's "unknown endpoint") takes default_host, the node that
 * answered. 0, or -1 when the reply is malformed or names more than CLUSTER_NODES_MAX masters. */
int cluster_map_parse(const struct redisReply *r, const char *default_host, struct cluster_map *m);
/* The index of host:port in m, or -1. */
int cluster_map_find(const struct cluster_map *m, const char *host, int port);

/* A -MOVED or -ASK error reply: "MOVED <slot> <host>:<port>" (IPv6 hosts unbracketed). 0 with
 * slot, host (REDIS_URL_HOST_MAX bytes) and port, or -1 when it is not one. */
enum cluster_redirect_kind { CLUSTER_REDIRECT_MOVED, CLUSTER_REDIRECT_ASK };
struct cluster_redirect {
    enum cluster_redirect_kind kind;
    unsigned slot;
    struct redis_url_addr to;
};
int cluster_redirect_parse(const char *err, size_t len, struct cluster_redirect *out);

/* What one command's reply means for it. */
enum cluster_step {
    CLUSTER_STEP_DONE,   /* the reply is the answer (error replies of the command included) */
    CLUSTER_STEP_MOVED,  /* send it again to r's node, after the map is read again */
    CLUSTER_STEP_ASK,    /* send ASKING and it to r's node, once, without changing the map */
    CLUSTER_STEP_GIVE_UP /* no reply (I/O error), or more than CLUSTER_REDIRECTS_MAX redirects */
};
/* One command's progress: redirects followed so far. Starts zeroed. */
struct cluster_try {
    unsigned redirects;
};
/* The next step for a command whose reply is r (NULL = an I/O error: CLUSTER_STEP_GIVE_UP);
 * fills *to for MOVED and ASK. */
enum cluster_step cluster_try_next(struct cluster_try *t, const struct redisReply *r,
                                   struct cluster_redirect *to);

/* A hash tag "{<c><n>}" (n counting from 0) whose slot master i serves, into buf (bytes ≥ 24),
 * so that a per-master key (a probe, a marker) lands on that master. -1 when none within
 * CLUSTER_TAG_TRIES (a master with no slots). */
#define CLUSTER_TAG_TRIES 100000
int cluster_tag_for(const struct cluster_map *m, size_t i, char c, char *buf, size_t buflen);

#endif
