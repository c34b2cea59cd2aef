/* expiry.h -- the expiry listener: its own thread and Redis connection, SUBSCRIBEd to
 * __keyevent@<db>__:expired and to the stream wake-up channel (mirror_stream.h). Each expired
 * reminder key of our prefix becomes an occurrence for dispatch; each wake-up goes to on_stream.
 * Both are hints: late, lost while disconnected, seen by every replica; the scheduler, the
 * reconciler and the stream hub's poll cover what they miss. Reconnects with the mirror's backoff
 * (and at once to a new master Sentinel names) and calls on_connect after every (re)subscribe so
 * a repair pass covers the gap.
 * After every (re)subscribe it also checks that Redis sends expired events at all, end to end and
 * without needing CONFIG (forbidden on managed Redis): it sets a probe key that expires at once,
 * touches it, and waits up to EXPIRY_PROBE_WAIT_MS for its event. Before that it tries CONFIG SET
 * notify-keyspace-events where allowed, so a fresh Redis is fixed rather than only reported.
 * With Redis Cluster (mirror.n_seeds > 0) it is one listener per master (expiry_cluster.h) behind
 * the same calls. */
#ifndef TOCSIN_EXPIRY_H
#define TOCSIN_EXPIRY_H

#include <stdbool.h>

#include "dispatch.h"
#include "mirror.h"

#define EXPIRY_POLL_MS 250         /* how often the thread looks at its stop flag while idle */
#define EXPIRY_PROBE_WAIT_MS 2000  /* how long the probe key's event may take */
#define EXPIRY_PROBE_TOUCH_MS 50   /* how often the probe key is touched while waiting */
#define EXPIRY_PROBE_RETRY_MS 5000 /* a probe that saw no event is repeated this often */
#define EXPIRY_PROBE_ERROR_RETRY_MS 1000 /* one that could not set its key (Redis just back) */

/* What the last probe found out about notify-keyspace-events. */
enum expiry_notify {
    EXPIRY_NOTIFY_UNKNOWN, /* not subscribed yet, or the probe could not be set */
    EXPIRY_NOTIFY_OK,      /* the probe key's expired event arrived */
    EXPIRY_NOTIFY_MISSING  /* it did not: the setting lacks E or x */
};

typedef void (*expiry_connect_fn)(void *arg);
/* A stream wake-up from another replica (or this one): tenant h->tenant_id has events up to
 * h->seq. Called on the listener's thread; must not block. */
typedef void (*expiry_stream_fn)(void *arg, const struct stream_head *h);

struct expiry_opts {
    struct mirror_opts mirror;    /* the Redis connection and key prefix (mirror.h) */
    const char *instance_id;      /* names this replica's probe key; copied */
    struct dispatch *dispatch;    /* borrowed; must outlive the listener */
    struct members *members;      /* events of other shards are dropped; NULL: none are */
    expiry_connect_fn on_connect; /* called on the listener's thread; may be NULL */
    void *on_connect_arg;
    expiry_stream_fn on_stream; /* may be NULL: then the wake-up channel is not subscribed */
    void *on_stream_arg;
    /* A hash tag put in the probe key ("<prefix>:<tag>:probe:..."), so that it lands on the one
     * Cluster master this listener is subscribed to (expiry_cluster.h); NULL = none. Copied. */
    const char *probe_tag;
};

struct expiry;

/* Starts the thread (connecting lazily). opts strings are copied. NULL when out of memory or the
 * thread cannot start. */
struct expiry *expiry_start(const struct expiry_opts *opts);
/* True while subscribed (for /readyz). Thread-safe; false for NULL. */
bool expiry_connected(struct expiry *e);
/* The last probe's finding (for /readyz and /metrics). Thread-safe; UNKNOWN for NULL. */
enum expiry_notify expiry_notify_state(struct expiry *e);
/* Why the subscriber cannot reach Redis (the connect's socket error, TLS verify result, refused
 * AUTH), "" while subscribed or before the first attempt; at most EXPIRY_ERROR_MAX bytes with
 * the NUL. For /readyz. Thread-safe; "" for NULL. */
#define EXPIRY_ERROR_MAX 256
void expiry_redis_error(struct expiry *e, char *buf, size_t buflen);
/* With Redis Cluster: each master of the slot map and whether its listener is subscribed, so
 * /metrics can say which master is down. Fills up to cap; returns how many (0 without Cluster). */
#define EXPIRY_MASTER_ADDR_MAX (REDIS_URL_HOST_MAX + 8) /* "host:port" */
struct expiry_master {
    char addr[EXPIRY_MASTER_ADDR_MAX];
    bool subscribed;
};
size_t expiry_masters(struct expiry *e, struct expiry_master *out, size_t cap);
/* Stops the thread within about EXPIRY_POLL_MS and frees e. Accepts NULL. */
void expiry_stop(struct expiry *e);

#endif
