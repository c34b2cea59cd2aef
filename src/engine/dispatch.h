/* dispatch.h -- the dispatch thread: takes reminder occurrences that are due (from the scheduler,
 * Redis expired events and the reconciler's overdue sweep, in any number and order, duplicates
 * welcome), claims them across replicas in Redis and fires the winners in PostgreSQL, one
 * statement per batch. Never fires early; fires each occurrence at most once (the database's
 * conditional UPDATE decides); hands the new outbox rows to delivery after commit, and wakes the
 * stream hubs (its own directly, the other replicas' by a Redis PUBLISH). Owns its own database
 * and Redis connections. */
#ifndef TOCSIN_DISPATCH_H
#define TOCSIN_DISPATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "meeting.h"
#include "mirror.h"

#define DISPATCH_QUEUE_MAX 131072 /* occurrences waiting; a full queue refuses more */
#define DISPATCH_BATCH_MAX 1024   /* occurrences per round: claimed in pipelines, one fire */
#define DISPATCH_DEFER_MAX 4096   /* early occurrences held until due */
/* An occurrence due later than this is dropped, not held: its key, the scheduler or the sweep
 * brings it back when due. */
#define DISPATCH_DEFER_HORIZON_MS 60000
#define DISPATCH_BACKOFF_MIN_MS 50 /* first wait after a failed fire statement */
/* The wait doubles up to this: DB_RECONNECT_WAIT_MS, so that after a PostgreSQL failover the
 * fire statement finds the new primary within a second of it taking writes. */
#define DISPATCH_BACKOFF_MAX_MS DB_RECONNECT_WAIT_MS
#define DISPATCH_DRAIN_MS 2000 /* dispatch_stop waits at most this for queued work */
/* Occurrences this replica claimed lately, remembered so that a second copy (its Redis key
 * expired into an event just before the fire removed it, or the sweep found it) is dropped without
 * a Redis round trip. A lossy table (24 bytes a slot): a forgotten one is claimed in Redis. */
#define DISPATCH_SEEN_SLOTS 16384

struct db_fire_handover;

/* Called on the dispatch thread before each fire statement: writes into out (cap bytes) the
 * delivery owner its outbox rows are written to (db_outbox.h) and sets *handover when that owner
 * takes its webhook rows in memory (db_fire.h), and returns 0; or returns -1 when no local worker
 * takes more, and the rows are written for any worker of any replica. Must not block. */
typedef int (*dispatch_owner_fn)(void *arg, char *out, size_t cap, bool *handover);

/* Called on the dispatch thread after a fire statement committed, with the owner its rows were
 * given (NULL: nobody), the outbox row ids it created (borrowed for the call) and the rows handed
 * to that owner in memory (NULL: none; the callee takes it). Must not block for long: the next
 * batch waits for it. */
typedef void (*dispatch_fired_fn)(void *arg, const char *owner, const int64_t *outbox_ids, size_t n,
                                  struct db_fire_handover *handed);

/* Called on the dispatch thread after a fire statement committed stream events: the newest seq
 * per tenant (borrowed for the call). Must not block for long. */
typedef void (*dispatch_streamed_fn)(void *arg, const struct stream_head *heads, size_t n);

struct dispatch_opts {
    const char *database_url;
    struct mirror_opts mirror;
    const char *instance_id;     /* the value of this replica's claim keys */
    int64_t claim_ttl_ms;        /* how long a claim blocks other replicas */
    int64_t missed_grace_ms;     /* fired later than meeting start + this: recorded missed */
    bool email;                  /* write email outbox rows (an SMTP server is configured) */
    dispatch_fired_fn on_fired;  /* NULL = nobody to hand rows to (delivery's poller finds them) */
    dispatch_owner_fn owner_for; /* NULL = rows for any worker; gets on_fired_arg */
    void *on_fired_arg;
    dispatch_streamed_fn on_streamed; /* NULL = no local stream hub (others poll or get PUBLISH) */
    void *on_streamed_arg;
};

struct dispatch;

/* Starts the thread; connections are opened lazily (a database or Redis down now is not an
 * error). opts strings are copied. NULL when out of memory or the thread cannot start. */
struct dispatch *dispatch_start(const struct dispatch_opts *opts);
/* Queues k[0..n) for firing. Thread-safe, never blocks. Returns how many were accepted; the rest
 * are refused because the queue is full or stopping (counted in METRIC_QUEUE_DROPPED): the
 * caller may retry them, and the reconciler's overdue sweep fires them in any case. */
size_t dispatch_submit(struct dispatch *d, const struct reminder_key *k, size_t n);
/* Occurrences waiting in the queue (for metrics and tests). Thread-safe. */
size_t dispatch_depth(struct dispatch *d);
/* Refuses new work, fires what is queued for at most DISPATCH_DRAIN_MS, then stops the thread
 * and frees d. What is left unfired stays pending in PostgreSQL for the next sweep. Accepts
 * NULL. */
void dispatch_stop(struct dispatch *d);

#endif
