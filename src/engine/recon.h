/* recon.h -- the reconciler thread: repairs the Redis mirror from PostgreSQL (the truth) and
 * fires what every faster path missed. A full pass re-arms (SET NX PXAT) every pending reminder
 * due within the horizon, a paced walk of the owned shards (recon_walk.h): at start, a full
 * interval after the last one ended, at once (and flat out) when Redis's run_id changes or its
 * marker key disappears (restart, FLUSHALL), and when kicked. Every interval a
 * short pass arms what entered the horizon and a sweep hands overdue pending reminders to
 * dispatch. Every interval it also extends the windows of the recurring meetings of its shards
 * that are due (series_sync.h), within RECON_SERIES_BUDGET_MS per tick and resting
 * RECON_SERIES_REST_FACTOR times as long between ticks while a backlog lasts.
 * Owns its own database and Redis connections. */
#ifndef TOCSIN_RECON_H
#define TOCSIN_RECON_H

#include <stdbool.h>
#include <stdint.h>

#include "dispatch.h"
#include "mirror.h"
#include "series_sync.h"

#define RECON_TICK_MS 250 /* how often it checks Redis identity and the stop flag */
/* A sweep waits while dispatch has a queue (what it would find is mostly queued already), at most
 * this long after the last one. */
#define RECON_SWEEP_DEFER_MS 3000
/* Time one tick may spend extending series windows (at least one batch runs, which may take
 * longer); the sweep's bound grows by about this. */
#define RECON_SERIES_BUDGET_MS 50
/* While a backlog of windows lasts, the extension rests this many times as long as it worked
 * before it works again, so it takes at most a fifth of one database connection's time: writing
 * hundreds of thousands of rows flat out (100,000 series re-expanded at once) took both cores of
 * a 2-core machine and delayed deliveries by up to a second. */
#define RECON_SERIES_REST_FACTOR 4

struct recon_opts {
    const char *database_url;
    struct mirror_opts mirror;
    int64_t interval_ms;       /* short pass (newly in the horizon) and overdue sweep period */
    int64_t full_interval_ms;  /* from the end of a full pass to the next; 0 = interval_ms */
    struct dispatch *dispatch; /* borrowed, for the overdue sweep; NULL = no sweep */
    struct members *members;   /* the shards to repair and sweep; NULL = all (borrowed) */
    struct series_sync_params
        series;              /* recurring meetings' windows, extended for the same shards */
    const char *instance_id; /* names its Redis marker key (NULL: "recon") */
};

struct recon;

/* Starts the thread. Returns NULL if the thread cannot be created. opts strings are copied. */
struct recon *recon_start(const struct recon_opts *opts);
/* Asks for a full pass as soon as possible; one under way starts again (thread-safe). */
void recon_kick(struct recon *r);
/* Number of completed full passes (thread-safe); tests and /metrics read it. */
uint64_t recon_passes(struct recon *r);
/* True when Redis answered the last identity check (RECON_TICK_MS apart; a hung Redis turns it
 * false after one command timeout). Thread-safe; false for NULL. */
bool recon_redis_up(struct recon *r);
/* Stops the thread (waits for the current batch), frees r. Accepts NULL. */
void recon_stop(struct recon *r);

#endif
