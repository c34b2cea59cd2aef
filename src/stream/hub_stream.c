/* hub_stream.c -- one stream of the hub (hub_internal.h): its open and close, which list it in
 * the registry and watch its socket; its buffer, written by the hub's threads under the stream's
 * own lock and drained by its reader on an HTTP thread; and the flags the two share (suspended,
 * ending, cut, conn_gone). A stream a thread needs while h->mu is dropped holds a reference
 * (refs), so hub_stream_close cannot free it underneath. */
#include "hub_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "metrics.h"
#include "panic.h"
#include "timefmt.h"

_Static_assert(HUB_SUB_MAX == PARTICIPANT_ID_MAX, "a stream's sub is a participant id");

/* ---- the buffer (stream lock) --------------------------------------------------------------- */

/* Wakes the reader if it waits: its resume is queued behind those of the streams woken before it
 * when HUB_WAKE_SLOTS are taken. Stream lock held. */
static void
poke(struct hub_stream *s)
{
    TOCSIN_ASSERT(hub_lock_held(&s->mu));
    if (s->suspended && !s->conn_gone) {
        s->suspended = false;
        wakeq_wake(&s->hub->wake, &s->wake, timefmt_mono_ms());
    }
}

void
hub_stream_cut_locked(struct hub_stream *s)
{
    TOCSIN_ASSERT(hub_lock_held(&s->mu));
    if (s->cut || s->conn_gone)
        return;
    s->cut = true;
    sse_buf_fini(&s->buf);
    s->ops->cut(s->conn);
    poke(s);
}

void
hub_stream_cut(struct hub_stream *s)
{
    hub_lock_acquire(&s->mu);
    hub_stream_cut_locked(s);
    hub_lock_release(&s->mu);
}

/* Locks s; false (unlocked again) when nothing more may be written to it. */
static bool
stream_lock(struct hub_stream *s)
{
    hub_lock_acquire(&s->mu);
    if (!s->cut && !s->conn_gone && !s->ending)
        return true;
    hub_lock_release(&s->mu);
    return false;
}

/* After a write: wakes the reader, or cuts a reader too slow to keep what waits for it under
 * buffer_max (it resumes from its cursor on its next connection). Unlocks s. */
static void
stream_unlock(struct hub_stream *s, enum sse_status st)
{
    switch (st) {
    case SSE_OK:
        poke(s);
        break;
    case SSE_E_FULL:
        LOG_INFO("stream: a reader of tenant %lld fell %zu bytes behind; cut",
                 (long long)s->tenant->id, sse_buf_pending(&s->buf));
        metrics_add(METRIC_STREAMS_CUT, 1);
        hub_stream_cut_locked(s);
        break;
    case SSE_E_INVALID:
        LOG_ERROR("stream: a frame the event-stream format cannot carry (our bug)");
        break;
    }
    hub_lock_release(&s->mu);
}

void
hub_stream_write(struct hub_stream *s, const char *frames, size_t n)
{
    if (stream_lock(s))
        stream_unlock(s, sse_buf_append(&s->buf, frames, n));
}

void
hub_stream_event(struct hub_stream *s, int64_t id, const char *event, const char *data)
{
    if (stream_lock(s))
        stream_unlock(s, sse_write_event(&s->buf, id, event, data, data ? strlen(data) : 0));
}

/* A heartbeat only when nothing waits: bytes on their way keep the connection busy already, and
 * a comment refused behind a large frame would cut a reader that is still taking it. */
void
hub_stream_comment(struct hub_stream *s, const char *text)
{
    if (!stream_lock(s))
        return;
    if (sse_buf_pending(&s->buf) > 0) {
        hub_lock_release(&s->mu);
        return;
    }
    stream_unlock(s, sse_write_comment(&s->buf, text));
}

void
hub_stream_retry(struct hub_stream *s, int64_t ms)
{
    if (stream_lock(s))
        stream_unlock(s, sse_write_retry(&s->buf, ms));
}

void
hub_stream_end(struct hub_stream *s)
{
    TOCSIN_ASSERT(hub_lock_held(&s->hub->mu));
    if (s->ended)
        return;
    s->ended = true;
    s->cut_at_ms = timefmt_now_ms() + s->hub->o.heartbeat_ms;
    /* Ended outside the timer walk too (a partial backlog, a drain). */
    hub_timer_lower_due(s->hub, s);
    hub_lock_acquire(&s->mu);
    s->ending = true;
    poke(s);
    hub_lock_release(&s->mu);
}

long
hub_stream_read(struct hub_stream *s, char *buf, size_t max, void (*suspend)(void *conn))
{
    long n;

    hub_lock_acquire(&s->mu);
    wakeq_served(&s->hub->wake, &s->wake, timefmt_mono_ms()); /* its slot, if it held one */
    if (s->cut)
        n = HUB_READ_CUT;
    else if (sse_buf_pending(&s->buf) > 0)
        n = (long)sse_buf_take(&s->buf, buf, max);
    else if (s->ending)
        n = HUB_READ_END;
    else {
        suspend(s->conn);
        s->suspended = true;
        n = 0;
    }
    hub_lock_release(&s->mu);
    return n;
}

bool
hub_stream_matches(const struct hub_stream *s, const struct hub_event *e)
{
    return hub_event_matches(e, s->person->sub, s->mtg, s->n_mtg);
}

/* ---- open and close ------------------------------------------------------------------------- */

void
hub_stream_unref(struct hub_stream *s)
{
    TOCSIN_ASSERT(s->refs > 0);
    if (--s->refs > 0)
        return;
    hub_lock_fini(&s->mu);
    sse_buf_fini(&s->buf);
    free(s->mtg);
    free(s);
}

static struct hub_stream *
stream_new(const struct hub_subscriber *who, const struct hub_conn_ops *ops, void *conn)
{
    struct hub_stream *s = calloc(1, sizeof *s);

    if (s == NULL || strlen(who->sub) > HUB_SUB_BYTES_MAX ||
        (who->kid != NULL && strlen(who->kid) > SIGNING_KEY_ID_MAX) ||
        (who->n_mtg > 0 && (s->mtg = calloc(who->n_mtg, sizeof *s->mtg)) == NULL)) {
        free(s);
        return NULL;
    }
    hub_lock_init(&s->mu);
    for (size_t i = 0; i < who->n_mtg; i++)
        snprintf(s->mtg[i], sizeof s->mtg[i], "%s", who->mtg[i]);
    s->n_mtg = who->n_mtg;
    snprintf(s->kid, sizeof s->kid, "%s", who->kid != NULL ? who->kid : "");
    s->ops = ops;
    s->conn = conn;
    s->wake.resume = ops->resume;
    s->wake.conn = conn;
    s->cursor_kind = who->cursor_kind;
    s->cursor = who->cursor;
    s->expires_ms = who->expires_ms;
    s->refs = 1;
    return s;
}

enum hub_open_status
hub_stream_open(struct hub *h, const struct hub_subscriber *who, const struct hub_conn_ops *ops,
                void *conn, struct hub_stream **out)
{
    struct hub_stream *s = stream_new(who, ops, conn);
    enum hub_open_status st = HUB_OPENED;

    if (s == NULL || who->n_mtg > HUB_MTG_MAX)
        st = HUB_NOMEM;
    hub_lock_acquire(&h->mu);
    struct hub_tenant *t = st == HUB_OPENED ? hub_registry_tenant_get(h, who->tenant_id) : NULL;
    struct hub_person *p = t != NULL ? hub_registry_person_get(h, who->tenant_id, who->sub) : NULL;
    if (st == HUB_OPENED && (t == NULL || p == NULL))
        st = HUB_NOMEM;
    else if (st == HUB_OPENED && (h->draining || h->stop))
        st = HUB_STOPPING;
    else if (st == HUB_OPENED && h->n_streams >= h->o.streams_max)
        st = HUB_FULL;
    else if (st == HUB_OPENED && h->o.per_tenant_max > 0 && t->n_streams >= h->o.per_tenant_max)
        st = HUB_TENANT_FULL;
    else if (st == HUB_OPENED && p->n >= h->o.per_participant_max)
        st = HUB_PARTICIPANT_FULL;
    if (st == HUB_OPENED) {
        sse_buf_init(&s->buf, h->o.buffer_max);
        s->hub = h;
        s->tenant = t;
        s->person = p;
        /* The retry: field first, before the stream is listed: a stream that waits for the hub
         * thread (a read of its tenant's head) could get a heartbeat before it otherwise. */
        hub_stream_retry(s, h->o.retry_ms);
        s->greeted = true;
        hub_timer_schedule(h, s, timefmt_now_ms());
        /* A tenant without streams is neither polled nor woken, so its head, ring and purge mark
         * may be long out of date: read the head again before serving (hub_resume_new waits for
         * it), else hello would name an old head and what fired since would follow as if new. */
        if (t->n_streams == 0)
            t->known = false;
        hub_registry_link(h, s);
        hub_peer_watch(h, s);
        if (!hub_resume_at_open(h, t, s)) {
            h->work = true;
            pthread_cond_broadcast(&h->cv);
        }
    } else if (p != NULL && p->n == 0) {
        hub_registry_person_put(h, (p->n = 1, p));
    }
    hub_lock_release(&h->mu);
    if (st != HUB_OPENED && s != NULL)
        hub_stream_unref(s);
    *out = st == HUB_OPENED ? s : NULL;
    return st;
}

void
hub_stream_close(struct hub_stream *s)
{
    struct hub *h = s->hub;

    hub_lock_acquire(&h->mu);
    TOCSIN_ASSERT(!s->closed);
    hub_peer_unwatch(h, s);
    hub_lock_acquire(&s->mu);
    s->conn_gone = true;
    wakeq_forget(&h->wake, &s->wake, timefmt_mono_ms());
    hub_lock_release(&s->mu);
    s->closed = true;
    hub_registry_unlink(h, s);
    pthread_cond_broadcast(&h->cv);
    hub_stream_unref(s);
    hub_lock_release(&h->mu);
}
