/* hub_fanout.c -- live events, on the hub thread (hub_internal.h): the heads of the tenants with
 * streams (on a wake-up, a new stream, or the catch-up poll), then each tenant's new events, read
 * once, kept in its ring and written to every live stream that may see them. h->mu is held
 * throughout but for the reads and the writes of a fan-out; the tenants stay valid meanwhile
 * (only this thread frees them), and so do their last_seen and ring (only this thread writes
 * them). */
#include "hub_internal.h"

#include "metrics.h"
#include "panic.h"
#include "timefmt.h"

_Static_assert(HUB_READ_MAX <= DB_STREAM_EVENTS_MAX, "a read must fit one statement");

/* The streams an event goes to are picked under h->mu, each holding a reference, and written to
 * without it: a stream opening meanwhile (hub_stream_open, on an HTTP thread that may also owe an
 * API request its answer) waits for the pick, not for 10,000 writes. Only this thread writes
 * events, so each stream still gets them in order; one that opens meanwhile is HUB_STREAM_NEW and
 * gets this event from the ring when hub_resume_new takes it. */
static void
deliver_event(struct hub *h, struct hub_tenant *t, const struct hub_event *e)
{
    size_t n = 0;

    for (struct hub_stream *s = t->streams; s != NULL; s = s->next) {
        if (s->state != HUB_STREAM_LIVE || e->seq <= s->cursor)
            continue;
        s->cursor = e->seq;
        if (hub_stream_matches(s, e)) {
            TOCSIN_ASSERT(n < h->o.streams_max); /* hub_stream_open refuses beyond it */
            s->refs++;
            h->fan[n++] = s;
        }
    }
    if (n == 0)
        return;
    hub_lock_release(&h->mu);
    for (size_t i = 0; i < n; i++)
        hub_stream_write(h->fan[i], e->frame, e->frame_len);
    metrics_add(METRIC_STREAM_EVENTS, n);
    hub_lock_acquire(&h->mu);
    for (size_t i = 0; i < n; i++)
        hub_stream_unref(h->fan[i]);
}

/* Takes events into the ring (stealing their contents) and fans each out. */
static void
take_events(struct hub *h, struct hub_tenant *t, struct hub_event *ev, size_t n)
{
    if (n > 0 && !hub_ring_alloc(t)) {
        for (size_t i = 0; i < n; i++)
            hub_event_clear(&ev[i]);
        return; /* out of memory: nothing is advanced, the next round reads them again */
    }
    for (size_t i = 0; i < n; i++)
        deliver_event(h, t, hub_ring_push(t, &ev[i]));
}

/* h->mu is dropped around each read. */
void
hub_fanout_tenant(struct hub *h, struct hub_tenant *t)
{
    TOCSIN_ASSERT(hub_lock_held(&h->mu) && h->hub_thread_self == hub_lock_self());
    while (t->known && t->hint > t->last_seen && timefmt_mono_ms() >= h->db_retry_ms) {
        int64_t id = t->id, after = t->last_seen, until = t->hint;

        hub_lock_release(&h->mu);
        long n = hub_db_events(h, id, after, until, NULL, HUB_READ_MAX, h->evbuf);
        hub_lock_acquire(&h->mu);
        if (n < 0)
            return; /* the tick retries after DB_RECONNECT_WAIT_MS */
        int64_t seen = t->last_seen;
        take_events(h, t, h->evbuf, (size_t)n);
        if (n > 0 && t->last_seen == seen)
            return; /* out of memory: nothing taken, the next round reads them again */
        /* Caught up with what existed up to until: a hint no further than that (a stray
         * wake-up) is forgotten. One raised during the read, by a fire that committed
         * meanwhile, is read next: that wake-up will not come again. */
        if (n < HUB_READ_MAX && t->hint <= until && t->hint > t->last_seen)
            t->hint = t->last_seen;
    }
}

/* Applies the heads of read number gen. A tenant that had no head yet starts at it; one whose
 * ring is close behind reads the gap instead (its streams may resume from the ring). */
static void
apply_heads(struct hub *h, const struct db_stream_head *hd, size_t n, uint64_t gen)
{
    for (size_t i = 0; i < n; i++) {
        struct hub_tenant *t = hub_registry_tenant(h, hd[i].tenant_id);

        if (t == NULL)
            continue;
        t->purged_through = hd[i].purged_through;
        if (!t->known && (t->ring_n == 0 || hd[i].seq - t->last_seen > HUB_RING_MAX ||
                          hd[i].seq < t->last_seen)) {
            hub_ring_clear(t);
            t->last_seen = hd[i].seq;
        }
        t->known = true;
        t->heads_read = gen;
        /* Raised, never lowered: a wake-up that came during the heads' read may be past them. */
        if (hd[i].seq > t->hint)
            t->hint = hd[i].seq;
    }
}

/* Reads the heads of ids[0..n) and applies them. h->mu held, released during the statement (the
 * tenants stay valid: only this thread frees them). */
static void
read_heads(struct hub *h, const int64_t *ids, size_t n, struct db_stream_head *hd)
{
    uint64_t gen = ++h->heads_started;

    hub_lock_release(&h->mu);
    bool ok = hub_db_heads(h, ids, n, hd);
    hub_lock_acquire(&h->mu);
    if (ok)
        apply_heads(h, hd, n, gen);
}

void
hub_fanout_heads(struct hub *h, bool poll)
{
    struct db_stream_head hd[DB_STREAM_HEADS_MAX];
    int64_t ids[DB_STREAM_HEADS_MAX];
    size_t n = 0;

    TOCSIN_ASSERT(hub_lock_held(&h->mu) && h->hub_thread_self == hub_lock_self());
    for (size_t b = 0; b < HUB_TENANT_BUCKETS; b++) {
        for (struct hub_tenant *t = h->tenants[b]; t != NULL; t = t->next) {
            if (t->n_streams == 0 || (t->known && !poll && !t->poll))
                continue;
            t->poll = false;
            ids[n++] = t->id;
            if (n < DB_STREAM_HEADS_MAX)
                continue;
            read_heads(h, ids, n, hd); /* a full statement: read it now, then go on */
            n = 0;
        }
    }
    if (n > 0)
        read_heads(h, ids, n, hd);
}
