/* engine.h -- the reminder engine of one replica, wired in one place: the dispatch thread (claim +
 * fire), the precision scheduler, the expiry listener and the reconciler, each with its own
 * connections, the membership heartbeat that shares the shards among the live replicas, and
 * retention (retention.h), which purges old rows on one of them. The HTTP layer sees only this
 * interface: it reports reminders it wrote and mirror writes that failed, and reads the engine's
 * state for /readyz and /metrics. */
#ifndef TOCSIN_ENGINE_H
#define TOCSIN_ENGINE_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "dispatch.h"
#include "expiry.h"
#include "meeting.h"

struct engine;

struct engine_gauges {
    size_t dispatch_queue;              /* occurrences waiting for dispatch */
    size_t sched_held;                  /* occurrences due within its window the scheduler holds */
    bool subscribed;                    /* the expiry listener is subscribed */
    bool redis_up;                      /* the reconciler's last look at Redis got answers */
    enum expiry_notify notify;          /* whether expired events arrive (the listener's probe) */
    char redis_error[EXPIRY_ERROR_MAX]; /* why the listener cannot reach Redis; "" = it can */
    unsigned long long recon_passes;
    size_t shards_owned; /* of SHARD_COUNT */
    size_t replicas;     /* live replicas at the last heartbeat */
};

/* Where the engine reports what it fired. Any pointer may be NULL. */
struct engine_hooks {
    dispatch_fired_fn on_fired;  /* outbox ids of each committed fire (delivery) */
    dispatch_owner_fn owner_for; /* who owns a fire's outbox rows (delivery) */
    void *fired_arg;
    /* Stream heads: this replica's fires (n >= 1), the other replicas' wake-ups (n == 1), and an
     * empty call (n == 0) after each resubscribe, when wake-ups may have been missed. */
    dispatch_streamed_fn on_streamed;
    void *streamed_arg;
};

/* Starts the threads (dispatch first, so the others have somewhere to send). cfg and hooks must
 * outlive the engine. NULL when out of memory or a thread cannot start. */
struct engine *engine_start(const struct config *cfg, const struct engine_hooks *hooks);
/* Reminder occurrences just committed (created or moved): the scheduler takes those due soon. */
void engine_reminders_changed(struct engine *e, const struct reminder_key *k, size_t n);
/* A mirror write failed after a commit: asks the reconciler for a full pass now. */
void engine_mirror_failed(struct engine *e);
/* A snapshot of the engine's state. Thread-safe; zeroes for NULL. */
void engine_gauges(struct engine *e, struct engine_gauges *out);
/* With Redis Cluster, the masters and whether each one's expiry listener is subscribed
 * (expiry_masters); 0 without Cluster or for NULL. */
size_t engine_redis_masters(struct engine *e, struct expiry_master *out, size_t cap);
/* Stops retention, leaves the membership (the other replicas take this one's shards), stops the
 * producers (listener, scheduler, reconciler), then lets dispatch fire what is queued (bounded),
 * and frees e. What is left stays pending in PostgreSQL. Accepts NULL. */
void engine_stop(struct engine *e);

#endif
