/* expiry_cluster.h -- the expiry listener on Redis Cluster: keyspace events are node-local, so
 * one listener (expiry.h) per master, each on a plain connection to its master and probing with a
 * key tagged for that master's slots. A watcher thread reads the slot map every
 * EXPIRY_CLUSTER_TOPOLOGY_MS and follows it: a listener for each new master (a replica promoted
 * by a failover, a master added), none for one gone; a listener whose probe tag moved with a
 * reshard starts again. Each listener's (re)subscribe calls on_connect, so the reconciler repairs
 * what a topology change lost. The state reported is the worst of the masters'. */
#ifndef TOCSIN_EXPIRY_CLUSTER_H
#define TOCSIN_EXPIRY_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>

#include "expiry.h"

#define EXPIRY_CLUSTER_TOPOLOGY_MS 1000

struct expiry_cluster;

/* o->mirror has the seeds (n_seeds > 0). NULL when out of memory or the thread cannot start. */
struct expiry_cluster *expiry_cluster_start(const struct expiry_opts *o);
void expiry_cluster_stop(struct expiry_cluster *x);
/* True when the map is known and every master's listener is subscribed. Thread-safe. */
bool expiry_cluster_connected(struct expiry_cluster *x);
/* MISSING when one master's probe saw no event, UNKNOWN when one is not known yet, else OK. */
enum expiry_notify expiry_cluster_notify(struct expiry_cluster *x);
/* The masters and their listeners' state (expiry_masters). */
size_t expiry_cluster_masters(struct expiry_cluster *x, struct expiry_master *out, size_t cap);
/* Which masters are down and why ("master h:p: why; ..."), "" when none. */
void expiry_cluster_error(struct expiry_cluster *x, char *buf, size_t buflen);

#endif
