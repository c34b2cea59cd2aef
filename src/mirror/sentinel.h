/* sentinel.h -- Redis Sentinel for redis-sentinel:// URLs (redis_url.h), as the Sentinel client
 * guidelines describe it: the master's address asked of the Sentinels in turn, a master epoch
 * that tells every connection of the process when the master moved, and a watcher thread that
 * learns of a failover from the Sentinels' +switch-master at once. Sentinels are reached through
 * redis_conn.h like the data nodes, so rediss-sentinel:// is TLS to both.
 * The epoch and the address it belongs to are process-wide (one Redis deployment per process, as
 * the configuration is): a connection made in an older epoch is to a master that is no more, and
 * mirror.c drops it before its next command. */
#ifndef TOCSIN_SENTINEL_H
#define TOCSIN_SENTINEL_H

#include <stddef.h>
#include <stdint.h>

#include "redis_url.h"

struct transport_tls;

#define SENTINEL_POLL_MS 250   /* how often the watcher looks at its stop flag */
#define SENTINEL_RETRY_MS 1000 /* the watcher's pause when no Sentinel answered */
#define SENTINEL_ERR_MAX 256

struct sentinel_opts {
    const struct redis_url_addr *addrs; /* the Sentinels; borrowed */
    size_t n;                           /* 1..REDIS_URL_SENTINELS_MAX */
    const char *master;                 /* the master name */
    const char *user;                   /* AUTH user on the Sentinels; NULL = the default user */
    const char *password;               /* AUTH password on the Sentinels; NULL = no AUTH */
    const struct transport_tls *tls;    /* NULL = plain TCP */
    int connect_ms, io_ms;              /* per Sentinel asked */
};

/* Asks the Sentinels, one after the other and starting with the one that answered last (or
 * that announced the last +switch-master to the watcher), for
 * the master's address (SENTINEL get-master-addr-by-name); the first that knows it wins, and the
 * address is noted (sentinel_note_master). 0 with host (REDIS_URL_HOST_MAX bytes), *port and
 * *epoch (the epoch of that address), or -1 with why in err (what the last Sentinel said).
 * Thread-safe; blocks up to n times the timeouts when every Sentinel hangs. */
int sentinel_master_addr(const struct sentinel_opts *o, char *host, int *port, uint64_t *epoch,
                         char *err, size_t errlen);

/* The master epoch: 0 at start, one more each time the master's known address changes.
 * Thread-safe. */
uint64_t sentinel_epoch(void);

/* Notes host:port as the master's. When another address was known, the epoch goes up, one
 * failover is counted (tocsin_redis_failovers_total) and logged. Returns the epoch afterwards.
 * Thread-safe. */
uint64_t sentinel_note_master(const char *host, int port);

/* Parses a +switch-master message, "<name> <old-ip> <old-port> <new-ip> <new-port>": 0 with the
 * new address when it is about master, -1 when it is about another master or malformed. */
int sentinel_parse_switch(const char *msg, size_t len, const char *master, char *host, int *port);

struct sentinel_watch;

/* Starts the watcher thread: subscribed to +switch-master on one Sentinel at a time (the next
 * one when it goes away), it notes each new address of o->master at once, so connections move
 * when Sentinel moves the master, also when the old one is cut off rather than dead. o, its
 * strings and its addresses are copied; o->tls is borrowed and must outlive the watcher. NULL when
 * out of memory or the thread cannot start. */
struct sentinel_watch *sentinel_watch_start(const struct sentinel_opts *o);
/* Stops the thread within about SENTINEL_POLL_MS (plus a connect in progress) and frees w.
 * Accepts NULL. */
void sentinel_watch_stop(struct sentinel_watch *w);

#endif
