/* cluster.h -- a small Redis Cluster router over redis_conn.h (so rediss-cluster:// is TLS to
 * every node): the slot map from CLUSTER SLOTS asked of the known masters or the seeds, one
 * connection per master (made lazily, AUTH'd, with a reconnect backoff per node), commands
 * pipelined per master, -MOVED followed after reading the map again, -ASK followed with ASKING
 * once, at most CLUSTER_REDIRECTS_MAX redirects a command. A connection error also reads the map
 * again: a master that died is replaced by its promoted replica. A struct cluster belongs to one
 * thread, like every connection in tocsin. */
#ifndef TOCSIN_CLUSTER_H
#define TOCSIN_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "cluster_slot.h"

struct redisReply;
struct redis_conn;
struct transport_tls;

#define CLUSTER_ARGV_MAX 6 /* the longest command sent: SET key value PXAT ms NX */
#define CLUSTER_RECONNECT_BACKOFF_MS 1000
#define CLUSTER_ERR_MAX 256

struct cluster_opts {
    const struct redis_url_addr *seeds; /* borrowed for the call only: copied */
    size_t n_seeds;
    const char *user;                /* NULL = AUTH with the password alone */
    const char *password;            /* NULL = no AUTH */
    const struct transport_tls *tls; /* NULL = plain TCP; borrowed, must outlive the cluster */
    int connect_ms, io_ms;
};

struct cluster;

/* NULL when out of memory. Connects lazily. */
struct cluster *cluster_new(const struct cluster_opts *o);
void cluster_free(struct cluster *cl);

/* Reads the slot map again, from the first known master or seed that answers CLUSTER SLOTS.
 * Connections to nodes still masters are kept. 0, or -1 with why in cluster_error. */
int cluster_refresh(struct cluster *cl);
/* The map (read first when none was yet); NULL when no node answered. Borrowed until the next
 * call on cl. */
const struct cluster_map *cluster_map(struct cluster *cl);
/* How many times the map changed (a failover, a reshard): callers that keep something per master
 * look again when it moved. */
uint64_t cluster_map_serial(const struct cluster *cl);

/* A command for one key's slot. argv and lens are the caller's and must live through the call;
 * reply is set by cluster_run (NULL: the node was unreachable or too many redirects). */
struct cluster_cmd {
    int argc;
    const char *argv[CLUSTER_ARGV_MAX];
    size_t lens[CLUSTER_ARGV_MAX];
    unsigned slot;
    struct redisReply *reply; /* freed by cluster_cmds_free */
    /* cluster_run's own: */
    struct cluster_try t;
    int node; /* where it goes next */
    int asking;
};
/* Runs n commands, pipelined per master, following redirects. 0 when every command has a reply
 * (error replies included), -1 when some have none. */
int cluster_run(struct cluster *cl, struct cluster_cmd *cmds, size_t n);
void cluster_cmds_free(struct cluster_cmd *cmds, size_t n);

/* The connection to master i of the map (connecting first), or NULL (down, in backoff). For the
 * commands that go to every master (PING, CONFIG, INFO). */
struct redis_conn *cluster_node_conn(struct cluster *cl, size_t i);
/* Drops master i's connection after an I/O error on it; the map is read again next time. */
void cluster_node_lost(struct cluster *cl, size_t i);
/* Why the last connect, I/O or map read failed ("" when nothing did); names the node. */
const char *cluster_error(const struct cluster *cl);

#endif
