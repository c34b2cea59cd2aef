/* hub_timer.c -- the hub's timer thread (hub_internal.h): it never calls the database, so the
 * heartbeats, reauth warnings and ends of the streams, the cuts of closed peers (hub_peer.c) and
 * of ended streams nobody reads, and the unsticking of the wake queue go on while the hub thread
 * waits on a PostgreSQL that hangs (stopped or unreachable). It holds h->mu for each of its walks
 * and drops it only to sleep. Also each stream's own timers: its lifetime and when it is due. */
#define _GNU_SOURCE /* pthread_setname_np */
#include "hub_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cond.h"
#include "log.h"
#include "panic.h"
#include "timefmt.h"

/* The earliest of s's own timers (an end, a reauth warning: only once live, when it is sent),
 * wall clock; INT64_MAX: none. */
static int64_t
stream_due(const struct hub_stream *s)
{
    if (s->ended)
        return s->cut_at_ms != 0 ? s->cut_at_ms : INT64_MAX;
    return !s->reauth_sent && s->state == HUB_STREAM_LIVE && s->reauth_at_ms < s->end_at_ms
               ? s->reauth_at_ms
               : s->end_at_ms;
}

void
hub_timer_lower_due(struct hub *h, const struct hub_stream *s)
{
    TOCSIN_ASSERT(hub_lock_held(&h->mu));
    if (stream_due(s) < h->next_due_ms)
        h->next_due_ms = stream_due(s);
}

/* A stream's lifetime: the token's exp or the maximum age spread by the jitter, whichever comes
 * first; and when its reauth warning is due. */
void
hub_timer_schedule(struct hub *h, struct hub_stream *s, int64_t now)
{
    TOCSIN_ASSERT(hub_lock_held(&h->mu)); /* h->seed */
    double r = (double)rand_r(&h->seed) / RAND_MAX;
    int64_t age = h->o.max_age_ms +
                  (int64_t)((double)h->o.max_age_ms * HUB_MAX_AGE_JITTER_PCT / 100.0 * (2 * r - 1));

    s->end_at_ms = now + age < s->expires_ms ? now + age : s->expires_ms;
    s->reauth_at_ms = s->expires_ms - HUB_REAUTH_LEAD_MS;
    hub_timer_lower_due(h, s);
}

static void
stream_timers(struct hub_stream *s, int64_t now, bool heartbeat)
{
    char at[TIMEFMT_BUF], data[HUB_CONTROL_DATA_MAX];

    if (s->ended) {
        /* A heartbeat's time after its end and still open: its client reads nothing (a shut
         * window keeps libmicrohttpd from calling the reader, so the end is never taken) and
         * would hold its places past its age and its token. */
        if (s->cut_at_ms != 0 && now >= s->cut_at_ms) {
            s->cut_at_ms = 0;
            hub_stream_cut(s);
        }
        return;
    }
    if (now >= s->end_at_ms) {
        hub_stream_end(s);
        return;
    }
    if (!s->reauth_sent && s->state == HUB_STREAM_LIVE && now >= s->reauth_at_ms) {
        s->reauth_sent = true;
        snprintf(data, sizeof data, "{\"expires_at\":\"%s\"}", timefmt_format(s->expires_ms, at));
        hub_stream_event(s, -1, "reauth", data);
    }
    if (heartbeat)
        hub_stream_comment(s, "hb");
}

/* Timers of every stream and the heartbeat when due. Also finds when the next stream timer is
 * due: until then only the heartbeat needs a walk. h->mu held. */
static void
timers(struct hub *h, int64_t mono)
{
    bool heartbeat = mono >= h->next_heartbeat_ms;
    int64_t now = timefmt_now_ms();

    TOCSIN_ASSERT(hub_lock_held(&h->mu));
    if (heartbeat)
        h->next_heartbeat_ms = mono + h->o.heartbeat_ms;
    h->next_due_ms = INT64_MAX;
    for (size_t b = 0; b < HUB_TENANT_BUCKETS; b++)
        for (struct hub_tenant *t = h->tenants[b]; t != NULL; t = t->next)
            for (struct hub_stream *s = t->streams; s != NULL; s = s->next) {
                stream_timers(s, now, heartbeat);
                hub_timer_lower_due(h, s);
            }
}

/* Waits (h->mu held) for the timer thread's next tick or heartbeat, or for stop. */
static void
wait_for_tick(struct hub *h)
{
    int64_t now = timefmt_mono_ms(), until = now + HUB_TICK_MS;
    struct timespec ts;

    if (h->next_heartbeat_ms < until)
        until = h->next_heartbeat_ms;
    if (until <= now || h->stop)
        return;
    ts = cond_deadline(until - now);
    while (!h->stop)
        if (hub_lock_wait(&h->mu, &h->timer_cv, &ts) == ETIMEDOUT)
            break;
}

void *
hub_timer_main(void *arg)
{
    struct hub *h = arg;

    (void)pthread_setname_np(pthread_self(), "tocsin-hub-tmr");
    hub_lock_acquire(&h->mu);
    while (!h->stop) {
        wait_for_tick(h);
        /* Timers walk every stream: at their tick once one is due, not at every tick, and at
         * each heartbeat. */
        int64_t now = timefmt_mono_ms();
        if ((now >= h->next_timers_ms && timefmt_now_ms() >= h->next_due_ms) ||
            now >= h->next_heartbeat_ms) {
            h->next_timers_ms = now + HUB_TIMERS_MS;
            timers(h, now);
        }
        if (now >= h->next_peer_check_ms) {
            h->next_peer_check_ms = now + HUB_PEER_CHECK_MS;
            hub_peer_check(h);
        }
        if (wakeq_tick(&h->wake, now) > 0)
            LOG_INFO("stream: no resumed stream was read for %d ms while others waited; their "
                     "slots are given to the waiting ones",
                     HUB_WAKE_STALL_MS);
    }
    hub_lock_release(&h->mu);
    return NULL;
}
