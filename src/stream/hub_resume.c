/* hub_resume.c -- a new stream's first frames (hub_internal.h): the retry: field and a hello, or
 * a reset (a cursor garbage, ahead of the head, or purged), or the backlog after its cursor. The
 * backlog comes from the tenant's ring when it holds every event after the cursor, else from
 * PostgreSQL: on the hub thread only, one read a round. h->mu held; the reads drop it. */
#include "hub_internal.h"

#include <stdio.h>

#include "metrics.h"
#include "panic.h"

/* A whole hello, reset, reauth or id-only frame. */
#define CONTROL_FRAME_MAX (HUB_CONTROL_DATA_MAX + 64)

_Static_assert(HUB_BACKLOG_MAX < DB_STREAM_EVENTS_MAX, "a backlog read must fit one statement");

/* The one change of a stream's state. */
static void
go_live(struct hub_tenant *t, struct hub_stream *s)
{
    TOCSIN_ASSERT(s->state == HUB_STREAM_NEW && t->n_new > 0);
    s->state = HUB_STREAM_LIVE;
    s->cursor = t->last_seen;
    t->n_new--;
    hub_timer_lower_due(s->hub, s); /* its reauth warning counts from now */
}

static void
send_reset(struct hub_tenant *t, struct hub_stream *s, const char *reason)
{
    char data[HUB_CONTROL_DATA_MAX];

    snprintf(data, sizeof data, "{\"reason\":\"%s\",\"head\":%lld}", reason,
             (long long)t->last_seen);
    hub_stream_event(s, t->last_seen, "reset", data);
    metrics_add(METRIC_STREAM_RESETS, 1);
    go_live(t, s);
}

/* Replays ev[0..n) to s after a resumed hello, then an id-only block so that the client's cursor
 * moves to the head even when the last events were not for it. A backlog larger than the
 * stream's buffer bound goes in parts: the frames that fit it (at least one), each with its id,
 * then a clean end; the client resumes from the last of them (after its retry) and gets the next
 * part. Written whole, it would pass the bound, be cut, and be replayed again on every resume. */
static void
send_backlog(struct hub_tenant *t, struct hub_stream *s, const struct hub_event *const *ev,
             size_t n)
{
    char data[HUB_CONTROL_DATA_MAX];
    size_t fit = 0, bytes = 2 * CONTROL_FRAME_MAX, max = s->hub->o.buffer_max;

    while (fit < n && (fit == 0 || bytes + ev[fit]->frame_len <= max))
        bytes += ev[fit++]->frame_len;
    bool whole = fit == n && bytes <= max;
    snprintf(data, sizeof data, "{\"seq\":%lld,\"resumed\":true,\"replayed\":%zu}",
             (long long)t->last_seen, fit);
    hub_stream_event(s, -1, "hello", data);
    for (size_t i = 0; i < fit; i++)
        hub_stream_write(s, ev[i]->frame, ev[i]->frame_len);
    if (whole)
        hub_stream_event(s, t->last_seen, NULL, NULL);
    metrics_add(METRIC_STREAM_RESUMES, 1);
    metrics_add(METRIC_STREAM_EVENTS, fit);
    go_live(t, s);
    if (!whole)
        hub_stream_end(s);
}

/* The backlog from the ring, which holds every event after the cursor. */
static void
resume_from_ring(struct hub_tenant *t, struct hub_stream *s)
{
    /* = {0}: without it GCC -O2 warns (a false positive). */
    const struct hub_event *pick[HUB_BACKLOG_MAX] = {0};
    size_t n = 0;

    for (int64_t seq = s->cursor + 1; seq <= t->last_seen; seq++) {
        const struct hub_event *e = hub_ring_at(t, seq);
        if (e == NULL || !hub_stream_matches(s, e))
            continue;
        if (n == HUB_BACKLOG_MAX) {
            send_reset(t, s, "too_far_behind");
            return;
        }
        pick[n++] = e;
    }
    send_backlog(t, s, pick, n);
}

/* The backlog from PostgreSQL: the cursor is older than the ring. Drops h->mu for the read;
 * returns false when the stream must wait (database trouble, or it closed meanwhile). */
static bool
resume_from_db(struct hub *h, struct hub_tenant *t, struct hub_stream *s)
{
    /* = {0}: without it GCC -O2 warns (a false positive). */
    const struct hub_event *pick[HUB_BACKLOG_MAX] = {0};
    int64_t id = t->id, after = s->cursor, until = t->last_seen;
    size_t n = 0;
    char sub[HUB_SUB_BYTES_MAX + 1]; /* a copy: its person goes with its last stream's close */
    /* Any meeting: the bound is on the participant's events (too_far_behind, api/openapi.yaml),
     * whatever its token's mtg; hub_stream_matches applies that below. */
    struct db_stream_reader who = {sub, NULL, 0, false, DB_INBOX_ANY, DB_INBOX_ANY};

    snprintf(sub, sizeof sub, "%s", s->person->sub);
    s->refs++;
    hub_lock_release(&h->mu);
    metrics_add(METRIC_STREAM_BACKLOG_READS, 1);
    long got = hub_db_events(h, id, after, until, &who, HUB_BACKLOG_MAX + 1, h->evbuf);
    /* Read after the events: a purge that committed before their read shows here (it moves
     * purged_through in the statement that deletes), so events retention removed since this
     * tenant's head was last read are never skipped silently. */
    int64_t purged = got >= 0 ? hub_db_purged(h, id) : -1;
    hub_lock_acquire(&h->mu);
    bool closed = s->closed;
    /* Until hub_stream_close, the connection's own reference keeps s: only a closed stream can
     * go with ours. */
    TOCSIN_ASSERT(closed || s->refs >= 2);
    hub_stream_unref(s);
    /* A full read was cut: events after it were never read (nor their bodies built), so what it
     * matched cannot end at the head (a token limited to some meetings may match few of them). */
    bool cut = got > HUB_BACKLOG_MAX;
    if (cut)
        got = 0; /* nothing in h->evbuf (hub_db_events) */
    if (got < 0 || closed || purged < 0 || after < purged) {
        for (long i = 0; i < got; i++)
            hub_event_clear(&h->evbuf[i]);
        if (got < 0 || closed)
            return got >= 0;
        if (purged < 0)
            return false; /* database trouble: a later round tries again */
        t->purged_through = purged > t->purged_through ? purged : t->purged_through;
        send_reset(t, s, "cursor_expired");
        return true;
    }
    for (long i = 0; i < got && !cut; i++)
        if (hub_stream_matches(s, &h->evbuf[i]))
            pick[n++] = &h->evbuf[i];
    if (cut)
        send_reset(t, s, "too_far_behind");
    else
        send_backlog(t, s, pick, n);
    for (long i = 0; i < got; i++)
        hub_event_clear(&h->evbuf[i]);
    return true;
}

enum fill { FILL_READ, FILL_FAILED, FILL_GAP };

/* Reads one batch (HUB_READ_MAX) of the events just older than the ring's into it, towards the
 * one after cursor (within HUB_RING_MAX of the head), so that streams reconnecting with cursors
 * from before this replica kept the tenant's events (its clients came from a replica that was
 * lost) resume from the ring: one read for all of them, not one each. One batch a call, so that
 * a backlog turn is one read. Drops h->mu around the read. FILL_FAILED: database trouble or out
 * of memory; FILL_GAP: the events are not all there (purged); the ring is left as it was then. */
static enum fill
backfill_ring(struct hub *h, struct hub_tenant *t, int64_t cursor)
{
    int64_t id = t->id, until = t->last_seen - (int64_t)t->ring_n;
    int64_t after = until - HUB_READ_MAX > cursor ? until - HUB_READ_MAX : cursor;

    if (!hub_ring_alloc(t))
        return FILL_FAILED;
    hub_lock_release(&h->mu);
    metrics_add(METRIC_STREAM_BACKLOG_READS, 1);
    long n = hub_db_events(h, id, after, until, NULL, HUB_READ_MAX, h->evbuf);
    int64_t purged = n >= 0 ? hub_db_purged(h, id) : -1; /* as resume_from_db: after the read */
    hub_lock_acquire(&h->mu);
    bool whole = n == until - after && purged >= 0 && after >= purged;
    for (long i = 0; whole && i < n; i++)
        whole = h->evbuf[i].seq == after + 1 + i;
    for (long i = 0; i < n; i++) {
        if (whole)
            hub_ring_put(t, &h->evbuf[i]);
        else
            hub_event_clear(&h->evbuf[i]);
    }
    if (!whole)
        return n < 0 || purged < 0 ? FILL_FAILED : FILL_GAP;
    /* The cursor was within HUB_RING_MAX of the head (serve_one), and only this thread moves
     * the head or the ring: the run reaches back to after + 1 and stays within its slots. */
    TOCSIN_ASSERT(t->ring_n + (size_t)n <= HUB_RING_MAX);
    t->ring_n += (size_t)n;
    return FILL_READ;
}

/* One batch of backfill_ring for s; then its backlog from the ring once the ring reaches its
 * cursor (else a later turn reads the next batch), or, after a gap, from PostgreSQL on its own in
 * a later turn. False on trouble. */
static bool
resume_after_backfill(struct hub *h, struct hub_tenant *t, struct hub_stream *s)
{
    s->refs++;
    enum fill f = backfill_ring(h, t, s->cursor);
    bool closed = s->closed;
    TOCSIN_ASSERT(closed || s->refs >= 2); /* as in resume_from_db */
    hub_stream_unref(s);
    if (closed)
        return true;
    s->no_backfill = f == FILL_GAP;
    if (f == FILL_READ && s->cursor >= t->last_seen - (int64_t)t->ring_n)
        resume_from_ring(t, s);
    return f != FILL_FAILED;
}

/* Whether a cursor ahead of t's head may be judged: this replica may only lag (a fire elsewhere
 * whose wake-up has not come), so a read of the heads that started after the cursor was first
 * found ahead must have been applied. One that was under way then may have read the head before
 * the client's event existed: judged on it, the stream got a reset and then that event again.
 * Until then the tenant's head is read in the next round. h->mu held. */
static bool
ahead_judged(struct hub *h, struct hub_tenant *t, struct hub_stream *s)
{
    if (!s->ahead_seen) {
        s->ahead_seen = true;
        s->ahead_after = h->heads_started;
        h->work = true;
    }
    if (t->heads_read > s->ahead_after)
        return true;
    t->poll = true;
    return false;
}

/* A stream's first frames. Returns false when it must wait for a later round, or, on the thread
 * that opens it (!hub_thread), for the hub thread: only that one may drop h->mu for a read, and
 * makes at most one (hub_resume_backlog). */
static bool
serve_one(struct hub *h, struct hub_tenant *t, struct hub_stream *s, bool hub_thread)
{
    char data[HUB_CONTROL_DATA_MAX];

    TOCSIN_ASSERT(hub_lock_held(&h->mu) && s->state == HUB_STREAM_NEW);
    TOCSIN_ASSERT(!hub_thread || h->hub_thread_self == hub_lock_self());
    if (!s->greeted) {
        hub_stream_retry(s, h->o.retry_ms);
        s->greeted = true;
    }
    switch (s->cursor_kind) {
    case HUB_CURSOR_NONE:
        snprintf(data, sizeof data, "{\"seq\":%lld,\"resumed\":false}", (long long)t->last_seen);
        hub_stream_event(s, t->last_seen, "hello", data);
        go_live(t, s);
        return true;
    case HUB_CURSOR_BAD:
        send_reset(t, s, "cursor_invalid");
        return true;
    case HUB_CURSOR_SET:
        break;
    }
    if (s->cursor > t->last_seen && !ahead_judged(h, t, s))
        return false;
    if (s->cursor > t->last_seen)
        send_reset(t, s, "cursor_ahead");
    else if (s->cursor < t->purged_through)
        send_reset(t, s, "cursor_expired");
    else if (s->cursor >= t->last_seen - (int64_t)t->ring_n)
        resume_from_ring(t, s);
    else if (!hub_thread)
        return false;
    else if (t->last_seen - s->cursor <= HUB_RING_MAX && !s->no_backfill)
        return resume_after_backfill(h, t, s);
    else
        return resume_from_db(h, t, s);
    return true;
}

/* Serves a new stream on the thread that opens it when that needs neither the database nor a
 * read of the head: the tenant's head is known and caught up with its wake-ups, and the cursor is
 * none, garbage, purged, or within the ring (what a reconnecting client has). Its first frames
 * are then in its buffer before libmicrohttpd first asks for them, so the reader does not suspend
 * and wait for the hub thread's round and a resume. False: the hub thread serves it
 * (hub_resume_new). */
bool
hub_resume_at_open(struct hub *h, struct hub_tenant *t, struct hub_stream *s)
{
    return t->known && t->hint <= t->last_seen && serve_one(h, t, s, false);
}

/* Whether s waits for its backlog from PostgreSQL: its cursor is older than the ring. */
static bool
needs_read(const struct hub_tenant *t, const struct hub_stream *s)
{
    return s->state == HUB_STREAM_NEW && !s->ended && s->cursor_kind == HUB_CURSOR_SET &&
           s->cursor >= t->purged_through && s->cursor < t->last_seen - (int64_t)t->ring_n;
}

/* Serves the tenant's new streams that need no read (without dropping h->mu). True when one
 * waits for a read of its backlog: hub_resume_backlog makes those, one a round. */
bool
hub_resume_new(struct hub *h, struct hub_tenant *t)
{
    bool waits = false;

    if (!t->known || t->n_new == 0 || t->hint > t->last_seen)
        return false;
    for (struct hub_stream *s = t->streams; s != NULL; s = s->next)
        if (s->state == HUB_STREAM_NEW && s->ended)
            go_live(t, s); /* its time ran out while it waited: nothing to send */
        else if (s->state == HUB_STREAM_NEW && !serve_one(h, t, s, false))
            waits = waits || needs_read(t, s);
    return waits;
}

/* One backlog read, for the stream of t that has waited longest for one (streams are listed
 * newest first). A round makes one, for the tenant that had one least recently, so that resumes
 * from PostgreSQL (about 40 ms each) delay other tenants' live events by one read at most, and a
 * tenant with many resumes takes its turn with the others. */
void
hub_resume_backlog(struct hub *h, struct hub_tenant *t)
{
    struct hub_stream *oldest = NULL;

    /* Not skipped when a wake-up came while other tenants were read: t keeps the lowest turn, so
     * skipping it for that gave no tenant a backlog read while t's wake-ups kept coming. The
     * stream goes live at last_seen and the next round fans out the rest. */
    if (!t->known)
        return;
    for (struct hub_stream *s = t->streams; s != NULL; s = s->next)
        if (needs_read(t, s))
            oldest = s;
    if (oldest == NULL)
        return;
    t->backlog_turn = ++h->backlog_turns;
    if (serve_one(h, t, oldest, true))
        h->work = true; /* the next round at once: live reads first, then the next turn */
}
