/* recon.h -- the reconciler thread: repairs the Redis mirror from PostgreSQL (the truth).
 * Runs a pass at start, every interval, at once when Redis's run_id changes or its marker key
 * disappears (restart, FLUSHALL), and when kicked. A pass re-arms (SET NX PXAT) every pending
 * reminder due within the horizon, in batches. Owns its own database and Redis connections. */
#ifndef TOCSIN_RECON_H
#define TOCSIN_RECON_H

#include <stdint.h>

#include "mirror.h"

#define RECON_TICK_MS 250 /* how often it checks Redis identity and the stop flag */

struct recon_opts {
    const char *database_url;
    struct mirror_opts mirror;
    int64_t interval_ms; /* full pass period */
};

struct recon;

/* Starts the thread. Returns NULL if the thread cannot be created. opts strings are copied. */
struct recon *recon_start(const struct recon_opts *opts);
/* Asks for a pass as soon as possible (thread-safe). */
void recon_kick(struct recon *r);
/* Number of completed passes (thread-safe); tests and /metrics read it. */
uint64_t recon_passes(struct recon *r);
/* Stops the thread (waits for the current batch), frees r. Accepts NULL. */
void recon_stop(struct recon *r);

#endif
