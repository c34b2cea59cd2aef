/* recon_walk.h -- the reconciler's full repair pass (recon.c) as a walk that goes on across
 * ticks: the owned shards one after another, each along its own part of the pending index
 * (db_reminder_shard_batch), every page's keys armed in Redis with SET NX. A step works for
 * RECON_WALK_BUDGET_MS (at least one page), then the walk rests RECON_WALK_REST_FACTOR times as
 * long: with 1,000,000 pending reminders the passes of three replicas flat out had both cores of
 * a 2-core machine to themselves for about 14 s a minute, and reminders due meanwhile were late
 * by up to 300 ms. A walk after Redis lost data does not rest. Used by the reconciler's thread
 * only. */
#ifndef TOCSIN_RECON_WALK_H
#define TOCSIN_RECON_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "mirror.h"
#include "shard.h"

#define RECON_WALK_PAGE 1000     /* keys per read of one shard and per arming round */
#define RECON_WALK_BUDGET_MS 50  /* a step's work before it rests (a page may take longer) */
#define RECON_WALK_REST_FACTOR 4 /* rest this many times as long as the step worked */

struct recon_walk {
    bool active;
    bool flat_out; /* after a data loss: no rests */
    struct shard_set shards;
    unsigned shard;             /* being walked; SHARD_COUNT once all are done */
    int64_t after_at, after_id; /* keyset position in it */
    int64_t until;              /* realtime ms: the horizon's end when the walk began */
    size_t rearmed;             /* keys it had to write so far */
    int64_t next_ms;            /* monotonic: the end of its rest */
};

enum recon_walk_result {
    RECON_WALK_MORE, /* worked (or rests); call again */
    RECON_WALK_DONE, /* every owned shard armed up to until */
    RECON_WALK_DB,   /* the database failed: the same page is read again next time */
    RECON_WALK_REDIS /* Redis failed: likewise */
};

/* Starts (or starts again) a walk of shards up to until (realtime ms). */
void recon_walk_begin(struct recon_walk *w, const struct shard_set *shards, int64_t until,
                      bool flat_out);
/* One step at monotonic time mono, reading into batch (RECON_WALK_PAGE entries): nothing while
 * the walk rests. A flat-out walk rests never, but its steps are as short, so that the caller
 * can look at its stop flag between them. */
enum recon_walk_result recon_walk_step(struct recon_walk *w, struct db *db, struct mirror *mi,
                                       struct reminder_key *batch, int64_t mono);

#endif
