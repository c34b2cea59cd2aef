/* engine.c -- the wiring of engine.h. Start order: the Sentinel watcher (redis-sentinel:// only),
 * dispatch, reconciler (with dispatch for its
 * overdue sweep; it samples the database's clock as it starts), scheduler, expiry listener (whose
 * every subscribe asks the reconciler for a pass, covering events lost while it was away), then
 * the membership heartbeat, whose every change of owned shards asks the reconciler and the
 * scheduler to read again, and retention (which purges on the replica owning shard 0). Stop order
 * is the reverse: retention, then membership (the others take this replica's shards at once),
 * dispatch last so what the others queued is still fired. */
#include "engine.h"

#include <stdlib.h>

#include "members.h"
#include "recon.h"
#include "retention.h"
#include "scheduler.h"
#include "sentinel.h"
#include "transport.h"

struct engine {
    struct members *members;
    struct dispatch *dispatch;
    struct recon *recon;
    struct scheduler *sched;
    struct expiry *expiry;
    struct retention *retention;
    struct transport_tls *sentinel_tls; /* the watcher's; NULL = plain */
    struct sentinel_watch *sentinel;    /* NULL without redis-sentinel:// */
    const struct engine_hooks *hooks;
};

_Static_assert(DB_RETENTION_BATCH_MAX == 10000, "TOCSIN_RETENTION_BATCH's bound (config.c)");

/* After each (re)subscribe: events and wake-ups may have been lost while away. */
static void
on_subscribed(void *arg)
{
    struct engine *e = arg;

    recon_kick(e->recon);
    if (e->hooks->on_streamed != NULL)
        e->hooks->on_streamed(e->hooks->streamed_arg, NULL, 0);
}

/* The owned shards changed: read the window again, repair and sweep the new shards now. */
static void
on_reshard(void *arg)
{
    struct engine *e = arg;

    recon_kick(e->recon);
    scheduler_reshard(e->sched);
}

static void
on_stream_wake(void *arg, const struct stream_head *h)
{
    const struct engine_hooks *hooks = arg;

    hooks->on_streamed(hooks->streamed_arg, h, 1);
}

/* redis-sentinel://: the +switch-master watcher, so every connection of this process moves at
 * once when Sentinel moves the master (sentinel.h). 0 also when there is nothing to watch. */
static int
watch_sentinels(struct engine *e, const struct config *cfg)
{
    char err[TRANSPORT_ERR_MAX];

    if (cfg->redis_sentinels_n == 0)
        return 0;
    if (cfg->redis_tls &&
        (e->sentinel_tls = transport_tls_new(cfg->redis_tls_ca[0] ? cfg->redis_tls_ca : NULL,
                                             cfg->redis_tls_cert[0] ? cfg->redis_tls_cert : NULL,
                                             cfg->redis_tls_key[0] ? cfg->redis_tls_key : NULL, err,
                                             sizeof err)) == NULL)
        return -1;
    struct sentinel_opts so = {cfg->redis_sentinels,
                               cfg->redis_sentinels_n,
                               cfg->redis_master,
                               cfg->redis_sentinel_user[0] ? cfg->redis_sentinel_user : NULL,
                               cfg->redis_sentinel_password[0] ? cfg->redis_sentinel_password
                                                               : NULL,
                               e->sentinel_tls,
                               MIRROR_CONNECT_TIMEOUT_MS,
                               MIRROR_COMMAND_TIMEOUT_MS};
    return (e->sentinel = sentinel_watch_start(&so)) != NULL ? 0 : -1;
}

struct engine *
engine_start(const struct config *cfg, const struct engine_hooks *hooks)
{
    struct engine *e = calloc(1, sizeof *e);
    struct mirror_opts mo = mirror_opts_of(cfg, 0);

    if (e == NULL)
        return NULL;
    e->hooks = hooks;
    if (watch_sentinels(e, cfg) != 0)
        goto fail;
    struct members_opts mopt = {cfg->database_url, cfg->instance_id, on_reshard, e};
    if ((e->members = members_new(&mopt)) == NULL)
        goto fail;
    struct dispatch_opts dopt = {cfg->database_url,    mo,
                                 cfg->instance_id,     cfg->claim_ttl_ms,
                                 cfg->missed_grace_ms, cfg->smtp_url[0] != '\0',
                                 hooks->on_fired,      hooks->owner_for,
                                 hooks->fired_arg,     hooks->on_streamed,
                                 hooks->streamed_arg};
    if ((e->dispatch = dispatch_start(&dopt)) == NULL)
        goto fail;
    struct recon_opts ropt = {
        cfg->database_url, mo,         cfg->recon_interval_ms,     cfg->recon_full_interval_ms,
        e->dispatch,       e->members, series_sync_params_of(cfg), cfg->instance_id};
    if ((e->recon = recon_start(&ropt)) == NULL)
        goto fail;
    struct scheduler_opts sopt = {cfg->database_url, cfg->sched_window_ms, cfg->sched_poll_ms,
                                  e->dispatch, e->members};
    if ((e->sched = scheduler_start(&sopt)) == NULL)
        goto fail;
    struct expiry_opts eopt = {mo,
                               cfg->instance_id,
                               e->dispatch,
                               e->members,
                               on_subscribed,
                               e,
                               hooks->on_streamed != NULL ? on_stream_wake : NULL,
                               (void *)hooks,
                               NULL};
    if ((e->expiry = expiry_start(&eopt)) == NULL || members_run(e->members) != 0)
        goto fail;
    struct retention_opts topt = {cfg->database_url,
                                  e->members,
                                  cfg->retention_interval_ms,
                                  cfg->retention_batch,
                                  {[DB_RETENTION_IDEMPOTENCY] = cfg->retention_idempotency_s,
                                   [DB_RETENTION_DELIVERIES] = cfg->retention_deliveries_s,
                                   [DB_RETENTION_MEETINGS] = cfg->retention_meetings_s,
                                   [DB_RETENTION_STREAM_EVENTS] = cfg->retention_stream_events_s},
                                  cfg->webhook_disable_after_s};
    if ((e->retention = retention_start(&topt)) == NULL)
        goto fail;
    return e;
fail:
    engine_stop(e);
    return NULL;
}

void
engine_reminders_changed(struct engine *e, const struct reminder_key *k, size_t n)
{
    if (e != NULL)
        scheduler_note(e->sched, k, n);
}

void
engine_mirror_failed(struct engine *e)
{
    if (e != NULL && e->recon != NULL)
        recon_kick(e->recon);
}

void
engine_gauges(struct engine *e, struct engine_gauges *out)
{
    *out = (struct engine_gauges){0};
    if (e == NULL)
        return;
    out->dispatch_queue = e->dispatch ? dispatch_depth(e->dispatch) : 0;
    out->sched_held = scheduler_size(e->sched);
    out->subscribed = expiry_connected(e->expiry);
    out->notify = expiry_notify_state(e->expiry);
    expiry_redis_error(e->expiry, out->redis_error, sizeof out->redis_error);
    out->redis_up = recon_redis_up(e->recon);
    out->recon_passes = e->recon ? recon_passes(e->recon) : 0;
    struct shard_set owned;
    members_shards(e->members, &owned);
    out->shards_owned = e->members != NULL ? shard_set_count(&owned) : 0;
    out->replicas = members_live(e->members);
}

size_t
engine_redis_masters(struct engine *e, struct expiry_master *out, size_t cap)
{
    return e != NULL ? expiry_masters(e->expiry, out, cap) : 0;
}

void
engine_stop(struct engine *e)
{
    if (e == NULL)
        return;
    retention_stop(e->retention);
    members_leave(e->members);
    expiry_stop(e->expiry);
    scheduler_stop(e->sched);
    recon_stop(e->recon);
    dispatch_stop(e->dispatch);
    members_free(e->members);
    sentinel_watch_stop(e->sentinel);
    transport_tls_free(e->sentinel_tls);
    free(e);
}
