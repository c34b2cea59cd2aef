/* recon_walk.c -- the full repair pass of recon_walk.h. A shard's part of the index is walked from
 * "now" as it is when the walk reaches the shard: what fell due before that is the sweep's and the
 * scheduler's, and mirror_arm skips a key whose time passed while its page was read. */
#include "recon_walk.h"

#include "timefmt.h"

_Static_assert(RECON_WALK_PAGE <= DB_DUE_BATCH_MAX, "a walk's page fits the reconciler's batch");

/* Moves to the next owned shard (or past the last), from the start of its due range. */
static void
next_shard(struct recon_walk *w, unsigned from)
{
    w->shard = from;
    while (w->shard < SHARD_COUNT && !shard_set_has(&w->shards, w->shard))
        w->shard++;
    w->after_at = timefmt_now_ms();
    w->after_id = INT64_MAX;
}

void
recon_walk_begin(struct recon_walk *w, const struct shard_set *shards, int64_t until, bool flat_out)
{
    *w = (struct recon_walk){
        .active = true, .flat_out = flat_out, .shards = *shards, .until = until};
    next_shard(w, 0);
}

/* Reads and arms one page of the current shard; moves on when it was the shard's last. */
static enum recon_walk_result
page(struct recon_walk *w, struct db *db, struct mirror *mi, struct reminder_key *batch)
{
    size_t n = 0;

    if (db_reminder_shard_batch(db, w->shard, w->after_at, w->after_id, w->until, batch,
                                RECON_WALK_PAGE, &n) != DB_ONE_RESULT)
        return RECON_WALK_DB;
    if (n > 0 && mirror_arm_count(mi, batch, n, timefmt_now_ms(), 1, &w->rearmed) != 0)
        return RECON_WALK_REDIS;
    if (n < RECON_WALK_PAGE) {
        next_shard(w, w->shard + 1);
    } else {
        w->after_at = batch[n - 1].fire_at_ms;
        w->after_id = batch[n - 1].reminder_id;
    }
    return RECON_WALK_MORE;
}

enum recon_walk_result
recon_walk_step(struct recon_walk *w, struct db *db, struct mirror *mi, struct reminder_key *batch,
                int64_t mono)
{
    enum recon_walk_result res = RECON_WALK_MORE;

    if (!w->active || mono < w->next_ms)
        return RECON_WALK_MORE;
    while (w->shard < SHARD_COUNT && res == RECON_WALK_MORE) {
        res = page(w, db, mi, batch);
        if (timefmt_mono_ms() - mono >= RECON_WALK_BUDGET_MS)
            break;
    }
    int64_t end = timefmt_mono_ms();
    if (!w->flat_out)
        w->next_ms = end + (end - mono) * RECON_WALK_REST_FACTOR;
    if (res == RECON_WALK_MORE && w->shard >= SHARD_COUNT) {
        w->active = false;
        return RECON_WALK_DONE;
    }
    return res;
}
