/* hub.c -- the stream hub of hub.h: its start, drain and stop, the wake-ups (hub_notify), and the
 * hub thread, which owns the database connection and runs round after round: the heads of the
 * tenants with streams, their new events fanned out (hub_fanout.c), their new streams served and
 * one backlog read (hub_resume.c), the signing keys of the open streams checked for a revocation
 * (hub_revoke.c), idle tenants forgotten. It holds h->mu except around each database call and the
 * writes of a fan-out, and works on copies meanwhile. The timer thread (hub_timer.c) does the
 * rest. What the parts share, and which lock guards what, is in hub_internal.h. */
#define _GNU_SOURCE /* pthread_setname_np */
#include "hub.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "cond.h"
#include "hub_internal.h"
#include "log.h"
#include "timefmt.h"

size_t
hub_streams(struct hub *h)
{
    if (h == NULL)
        return 0;
    hub_lock_acquire(&h->mu);
    size_t n = h->n_streams;
    hub_lock_release(&h->mu);
    return n;
}

void
hub_notify(void *arg, const struct stream_head *heads, size_t n)
{
    struct hub *h = arg;

    if (h == NULL)
        return;
    hub_lock_acquire(&h->mu);
    if (n == 0)
        h->next_poll_ms = 0;
    for (size_t i = 0; i < n; i++) {
        struct hub_tenant *t = hub_registry_tenant(h, heads[i].tenant_id);
        if (t != NULL && t->n_streams > 0 && heads[i].seq > t->hint)
            t->hint = heads[i].seq;
    }
    h->work = true;
    pthread_cond_broadcast(&h->cv);
    hub_lock_release(&h->mu);
}

/* ---- the hub thread ----------------------------------------------------------------------- */

static void
wait_for_work(struct hub *h)
{
    int64_t now = timefmt_mono_ms(), until = now + HUB_TICK_MS;
    struct timespec ts;

    if (h->next_poll_ms < until)
        until = h->next_poll_ms;
    int64_t wait = until - now;
    if (wait <= 0 || h->work || h->stop)
        return;
    ts = cond_deadline(wait);
    while (!h->work && !h->stop)
        if (hub_lock_wait(&h->mu, &h->cv, &ts) == ETIMEDOUT)
            break;
}

static void *
rounds_main(void *arg)
{
    struct hub *h = arg;

    (void)pthread_setname_np(pthread_self(), "tocsin-hub");
    hub_lock_acquire(&h->mu);
    h->hub_thread_self = hub_lock_self();
    while (!h->stop) {
        wait_for_work(h);
        h->work = false;
        int64_t now = timefmt_mono_ms();
        bool poll = now >= h->next_poll_ms;
        if (poll)
            h->next_poll_ms = now + h->o.poll_ms;
        hub_fanout_heads(h, poll);
        /* Only this thread frees tenants: turn stays valid while other reads drop h->mu. */
        struct hub_tenant *turn = NULL;
        for (size_t b = 0; b < HUB_TENANT_BUCKETS; b++)
            for (struct hub_tenant *t = h->tenants[b]; t != NULL; t = t->next) {
                if (t->n_streams == 0)
                    continue;
                hub_fanout_tenant(h, t);
                if (hub_resume_new(h, t) && (turn == NULL || t->backlog_turn < turn->backlog_turn))
                    turn = t;
            }
        if (turn != NULL)
            hub_resume_backlog(h, turn);
        hub_revoke_check(h, timefmt_mono_ms());
        hub_registry_forget_idle(h, timefmt_mono_ms());
    }
    hub_lock_release(&h->mu);
    return NULL;
}

/* ---- start and stop ----------------------------------------------------------------------- */

/* Stops the running threads (those of started[]) and waits for them. */
static void
stop_threads(struct hub *h, const bool started[2])
{
    hub_lock_acquire(&h->mu);
    h->stop = true;
    pthread_cond_broadcast(&h->cv);
    pthread_cond_broadcast(&h->timer_cv);
    hub_lock_release(&h->mu);
    if (started[0])
        pthread_join(h->thread, NULL);
    if (started[1])
        pthread_join(h->timer_thread, NULL);
}

/* Frees what hub_start made, the threads stopped. */
static void
free_hub(struct hub *h)
{
    wakeq_fini(&h->wake);
    pthread_cond_destroy(&h->timer_cv);
    pthread_cond_destroy(&h->cv);
    hub_lock_fini(&h->mu);
    if (h->epfd >= 0)
        close(h->epfd);
    free(h->evbuf);
    free(h->fan);
    free(h->kids);
    free(h->database_url);
    free(h);
}

struct hub *
hub_start(const struct hub_opts *opts)
{
    struct hub *h = calloc(1, sizeof *h);

    if (h == NULL)
        return NULL;
    h->o = *opts;
    h->database_url = strdup(opts->database_url);
    h->evbuf = calloc(DB_STREAM_EVENTS_MAX, sizeof *h->evbuf);
    h->fan = calloc(opts->streams_max > 0 ? opts->streams_max : 1, sizeof(struct hub_stream *));
    h->seed = (unsigned)time(NULL) ^ (unsigned)getpid();
    h->next_heartbeat_ms = timefmt_mono_ms() + opts->heartbeat_ms;
    h->epfd = epoll_create1(EPOLL_CLOEXEC);
    hub_lock_init(&h->mu);
    cond_init_monotonic(&h->cv);
    cond_init_monotonic(&h->timer_cv);
    wakeq_init(&h->wake, HUB_WAKE_SLOTS, HUB_WAKE_STALL_MS);
    bool started[2] = {false, false};
    if (h->database_url != NULL && h->evbuf != NULL && h->fan != NULL)
        started[0] = pthread_create(&h->thread, NULL, rounds_main, h) == 0;
    if (started[0])
        started[1] = pthread_create(&h->timer_thread, NULL, hub_timer_main, h) == 0;
    if (!started[1]) {
        stop_threads(h, started);
        free_hub(h);
        return NULL;
    }
    return h;
}

/* Waits (h->mu held) until no stream is left or deadline (monotonic ms) passes. */
static void
wait_closed(struct hub *h, int64_t deadline)
{
    struct timespec ts;

    while (h->n_streams > 0 && timefmt_mono_ms() < deadline) {
        ts = cond_deadline(deadline - timefmt_mono_ms());
        hub_lock_wait(&h->mu, &h->cv, &ts);
    }
}

void
hub_drain(struct hub *h, int64_t grace_ms)
{
    if (h == NULL)
        return;
    hub_lock_acquire(&h->mu);
    h->draining = true;
    size_t open = h->n_streams;
    hub_registry_each_stream(h, hub_stream_end);
    wait_closed(h, timefmt_mono_ms() + grace_ms);
    if (h->n_streams > 0) {
        LOG_WARN("shutdown: %zu of %zu streams still open after %lld ms; cutting them",
                 h->n_streams, open, (long long)grace_ms);
        hub_registry_each_stream(h, hub_stream_cut);
        wait_closed(h, timefmt_mono_ms() + HUB_DRAIN_CUT_MS);
    }
    hub_lock_release(&h->mu);
}

void
hub_stop(struct hub *h)
{
    if (h == NULL)
        return;
    stop_threads(h, (const bool[2]){true, true});
    hub_registry_clear(h);
    hub_db_close(h);
    free_hub(h);
}
