/* hub.c -- the stream hub of hub.h. One lock (h->mu) guards the tenants, their rings and stream
 * lists and the per-participant counts; each stream's own lock guards its buffer and the flags its
 * reader shares. Two threads: the hub thread (run) owns the database connection; the timer thread
 * (run_timers) never touches the database and writes the heartbeats, reauth warnings and ends,
 * cuts closed peers and unsticks the wake queue, so a database call that hangs (PostgreSQL
 * stopped or unreachable) holds none of those up. The hub thread drops h->mu around every
 * database call and around the writes of a fan-out, and works on copies meanwhile; it is the only
 * writer of a tenant's last_seen and ring, and the only one that frees a tenant, so those are still
 * as it left them when it takes the lock back. The timer thread holds h->mu for each of its walks.
 * A stream a thread needs while the lock is dropped holds a reference, so hub_stream_close cannot
 * free it underneath. Resumes go through a wake queue (wakeq.h) with a lock of its own, taken
 * last. */
#define _GNU_SOURCE /* EPOLLRDHUP: the peer closed its end */
#include "hub.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "codec.h"
#include "cond.h"
#include "db.h"
#include "db_stream.h"
#include "log.h"
#include "metrics.h"
#include "panic.h"
#include "sse.h"
#include "stream_body.h"
#include "timefmt.h"
#include "wakeq.h"

#define TENANT_BUCKETS 1024
#define PERSON_BUCKETS 4096
#define CONTROL_DATA_MAX 128 /* the JSON of hello, reset and reauth */
/* A whole hello, reset, reauth or id-only frame. */
#define CONTROL_FRAME_MAX (CONTROL_DATA_MAX + 64)
#define DB_RETRY_MS 1000 /* after a failed connect or statement, the next call waits this */
/* Streams resumed at once (wakeq.h): enough to keep every HTTP thread busy during a fan-out and
 * to resume in batches (each reaches a thread as one walk of its suspended connections), few
 * enough that a request waits for its thread's share of them, 8 with 16 threads, not for
 * thousands (512 slots made the API requests that overlap a fan-out slower: bench/stream.sh). */
#define WAKE_SLOTS 128
/* A slot held this long while streams wait counts no more (wakeq_tick). */
#define WAKE_STALL_MS 200

_Static_assert(HUB_BACKLOG_MAX < DB_STREAM_EVENTS_MAX, "a backlog read must fit one statement");
_Static_assert(HUB_READ_MAX <= DB_STREAM_EVENTS_MAX, "a read must fit one statement");
_Static_assert(HUB_SUB_MAX == PARTICIPANT_ID_MAX, "a stream's sub is a participant id");

/* One event of a tenant's ring: what fan-out and resumes need without a read. */
struct event {
    int64_t seq;
    char meeting_id[MEETING_ID_LEN + 1];
    char **audience; /* sorted */
    size_t n_audience;
    char *frame; /* the whole SSE frame; NULL when nobody gets it (meeting deleted) */
    size_t frame_len;
};

struct tenant {
    int64_t id;
    bool known;             /* last_seen was read from the database */
    int64_t last_seen;      /* every event up to here has been fanned out */
    int64_t purged_through; /* retention removed every event up to here */
    int64_t hint;           /* a wake-up's seq: read up to here */
    bool poll;              /* read the head in the next round */
    uint64_t heads_read;    /* the last read of the heads applied (h->heads_started's count) */
    uint64_t backlog_turn;  /* h->backlog_turns when a stream of it last had a backlog read */
    struct event *ring;     /* HUB_RING_MAX slots by seq; NULL until the first event */
    size_t ring_n;          /* the ring holds seqs last_seen - ring_n + 1 .. last_seen */
    struct hub_stream *streams;
    size_t n_streams, n_new;
    int64_t idle_since_ms; /* monotonic, while n_streams == 0 */
    struct tenant *next;
};

struct person {
    int64_t tenant_id;
    size_t n;
    struct person *next;
    char sub[];
};

enum stream_state { ST_NEW, ST_LIVE };

struct hub_stream {
    struct hub *hub;
    struct tenant *tenant;
    struct person *person;
    const struct hub_conn_ops *ops;
    void *conn;
    char (*mtg)[MEETING_ID_LEN + 1];
    size_t n_mtg;
    enum hub_cursor cursor_kind;
    int64_t cursor; /* guarded by h->mu: the last seq considered for this stream */
    int64_t expires_ms, reauth_at_ms, end_at_ms; /* wall clock */
    /* Guarded by h->mu. */
    enum stream_state state;
    bool greeted, ahead_seen, reauth_sent, ended, closed;
    uint64_t ahead_after; /* found ahead when this many reads of the heads had started */
    /* Wall clock: ended and still open then, it is cut (its client stopped reading, so its
     * reader never comes for the end); 0 once cut or never ended. */
    int64_t cut_at_ms;
    bool watched;     /* its socket is in h->epfd (check_peers) */
    bool no_backfill; /* its backlog is read on its own: filling the ring found a gap */
    int refs;
    struct hub_stream *prev, *next;
    /* Guarded by mu. */
    pthread_mutex_t mu;
    struct sse_buf buf; /* what waits for the reader; buffer_max bytes and one frame at most */
    bool suspended, ending, cut, conn_gone;
    struct wakeq_node wake; /* its place in h->wake while its resume waits or holds a slot */
};

struct hub {
    struct hub_opts o;
    char *database_url;
    pthread_t thread, timer_thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;       /* monotonic clock; signalled on work and on stream close */
    pthread_cond_t timer_cv; /* monotonic clock; signalled on stop (the timer thread's) */
    bool stop, draining, work;
    size_t n_streams;
    int64_t next_poll_ms;   /* monotonic; the hub thread's */
    uint64_t heads_started; /* reads of the heads started (read_heads) */
    uint64_t backlog_turns; /* backlog reads made (serve_backlog); the hub thread's */
    /* Monotonic; the timer thread's. */
    int64_t next_heartbeat_ms, next_timers_ms, next_peer_check_ms;
    int64_t next_due_ms; /* wall clock: no stream's end or reauth is due before this */
    int epfd;          /* every stream's socket, watched for a closed peer; -1 when epoll failed */
    struct wakeq wake; /* every resume of a stream goes through it */
    struct tenant *tenants[TENANT_BUCKETS];
    struct person *people[PERSON_BUCKETS];
    /* The thread's own. */
    struct event *evbuf;     /* DB_STREAM_EVENTS_MAX events of one read */
    struct hub_stream **fan; /* streams_max: the streams one event goes to (deliver_event) */
    struct db *db;
    int64_t db_retry_ms;
    bool db_down;
    unsigned seed;
};

/* ---- small pieces ------------------------------------------------------------------------ */

static uint64_t
hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;

    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ULL; /* FNV-1a */
    return h;
}

static struct tenant **
tenant_slot(struct hub *h, int64_t id)
{
    struct tenant **t =
        &h->tenants[hash_bytes(14695981039346656037ULL, &id, sizeof id) % TENANT_BUCKETS];

    while (*t != NULL && (*t)->id != id)
        t = &(*t)->next;
    return t;
}

static struct person **
person_slot(struct hub *h, int64_t tenant_id, const char *sub)
{
    uint64_t k = hash_bytes(14695981039346656037ULL, &tenant_id, sizeof tenant_id);
    struct person **p = &h->people[hash_bytes(k, sub, strlen(sub)) % PERSON_BUCKETS];

    while (*p != NULL && ((*p)->tenant_id != tenant_id || strcmp((*p)->sub, sub) != 0))
        p = &(*p)->next;
    return p;
}

static void
event_clear(struct event *e)
{
    codec_string_list_free(e->audience, e->n_audience);
    free(e->frame);
    memset(e, 0, sizeof *e);
}

static struct event *
ring_at(struct tenant *t, int64_t seq)
{
    if (t->ring == NULL || seq > t->last_seen || seq <= t->last_seen - (int64_t)t->ring_n)
        return NULL;
    return &t->ring[seq % HUB_RING_MAX];
}

/* Allocates t's ring on first use. False when out of memory. */
static bool
ring_alloc(struct tenant *t)
{
    return t->ring != NULL || (t->ring = calloc(HUB_RING_MAX, sizeof *t->ring)) != NULL;
}

/* Moves e (its contents stolen) into its slot of t's ring; the caller sets ring_n. */
static void
ring_put(struct tenant *t, struct event *e)
{
    struct event *slot = &t->ring[e->seq % HUB_RING_MAX];

    event_clear(slot);
    *slot = *e;
}

static void
tenant_free(struct tenant *t)
{
    for (size_t i = 0; t->ring != NULL && i < HUB_RING_MAX; i++)
        event_clear(&t->ring[i]);
    free(t->ring);
    free(t);
}

static int64_t
mono_ms(void)
{
    return timefmt_mono_ms();
}

/* ---- stream buffers (stream lock) ------------------------------------------------------- */

/* Wakes the reader if it waits: its resume is queued behind those of the streams woken before it
 * when WAKE_SLOTS are taken. Stream lock held. */
static void
poke(struct hub_stream *s)
{
    if (s->suspended && !s->conn_gone) {
        s->suspended = false;
        wakeq_wake(&s->hub->wake, &s->wake, mono_ms());
    }
}

/* Drops the stream's bytes and has its connection closed. Stream lock held. */
static void
cut_locked(struct hub_stream *s)
{
    if (s->cut || s->conn_gone)
        return;
    s->cut = true;
    sse_buf_fini(&s->buf);
    s->ops->cut(s->conn);
    poke(s);
}

static void
cut_stream(struct hub_stream *s)
{
    pthread_mutex_lock(&s->mu);
    cut_locked(s);
    pthread_mutex_unlock(&s->mu);
}

/* Locks s; false (unlocked again) when nothing more may be written to it. */
static bool
stream_lock(struct hub_stream *s)
{
    pthread_mutex_lock(&s->mu);
    if (!s->cut && !s->conn_gone && !s->ending)
        return true;
    pthread_mutex_unlock(&s->mu);
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
        cut_locked(s);
        break;
    case SSE_E_INVALID:
        LOG_ERROR("stream: a frame the event-stream format cannot carry (our bug)");
        break;
    }
    pthread_mutex_unlock(&s->mu);
}

/* Appends whole frames (built once for all streams by sse_frame_event). */
static void
stream_write(struct hub_stream *s, const char *frames, size_t n)
{
    if (stream_lock(s))
        stream_unlock(s, sse_buf_append(&s->buf, frames, n));
}

/* Appends one control event (id < 0: none; data NULL: none). */
static void
stream_event(struct hub_stream *s, int64_t id, const char *event, const char *data)
{
    if (stream_lock(s))
        stream_unlock(s, sse_write_event(&s->buf, id, event, data, data ? strlen(data) : 0));
}

/* A heartbeat only when nothing waits: bytes on their way keep the connection busy already, and
 * a comment refused behind a large frame would cut a reader that is still taking it. */
static void
stream_comment(struct hub_stream *s, const char *text)
{
    if (!stream_lock(s))
        return;
    if (sse_buf_pending(&s->buf) > 0) {
        pthread_mutex_unlock(&s->mu);
        return;
    }
    stream_unlock(s, sse_write_comment(&s->buf, text));
}

static void
stream_retry(struct hub_stream *s, int64_t ms)
{
    if (stream_lock(s))
        stream_unlock(s, sse_write_retry(&s->buf, ms));
}

static void lower_due(struct hub *h, const struct hub_stream *s);

/* The stream ends cleanly once its reader took what is buffered. h->mu held. */
static void
stream_end(struct hub_stream *s)
{
    if (s->ended)
        return;
    s->ended = true;
    s->cut_at_ms = timefmt_now_ms() + s->hub->o.heartbeat_ms;
    lower_due(s->hub, s); /* ended outside the timer walk too (a partial backlog, a drain) */
    pthread_mutex_lock(&s->mu);
    s->ending = true;
    poke(s);
    pthread_mutex_unlock(&s->mu);
}

long
hub_stream_read(struct hub_stream *s, char *buf, size_t max, void (*suspend)(void *conn))
{
    long n;

    pthread_mutex_lock(&s->mu);
    wakeq_served(&s->hub->wake, &s->wake, mono_ms()); /* its slot, if it held one */
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
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* ---- open and close ---------------------------------------------------------------------- */

/* Puts s's socket in the set check_peers reads. h->mu held. */
static void
watch_peer(struct hub *h, struct hub_stream *s)
{
    int fd = s->ops->fd(s->conn);
    struct epoll_event ev = {.events = EPOLLRDHUP, .data.ptr = s};

    s->watched = h->epfd >= 0 && fd >= 0 && epoll_ctl(h->epfd, EPOLL_CTL_ADD, fd, &ev) == 0;
}

/* Takes s's socket out of that set (before its connection closes). h->mu held. */
static void
unwatch_peer(struct hub *h, struct hub_stream *s)
{
    if (s->watched)
        epoll_ctl(h->epfd, EPOLL_CTL_DEL, s->ops->fd(s->conn), NULL);
    s->watched = false;
}

static void
stream_unref(struct hub_stream *s)
{
    if (--s->refs > 0)
        return;
    pthread_mutex_destroy(&s->mu);
    sse_buf_fini(&s->buf);
    free(s->mtg);
    free(s);
}

static struct tenant *
tenant_get(struct hub *h, int64_t id)
{
    struct tenant **slot = tenant_slot(h, id);

    if (*slot == NULL && (*slot = calloc(1, sizeof **slot)) != NULL)
        (*slot)->id = id;
    return *slot;
}

static struct person *
person_get(struct hub *h, int64_t tenant_id, const char *sub)
{
    struct person **slot = person_slot(h, tenant_id, sub);

    if (*slot == NULL && (*slot = calloc(1, sizeof **slot + strlen(sub) + 1)) != NULL) {
        (*slot)->tenant_id = tenant_id;
        strcpy((*slot)->sub, sub);
    }
    return *slot;
}

static void
person_put(struct hub *h, struct person *p)
{
    if (--p->n > 0)
        return;
    struct person **slot = person_slot(h, p->tenant_id, p->sub);
    *slot = p->next;
    free(p);
}

/* The earliest of s's own timers (an end, a reauth warning: only once live, when it is sent),
 * wall clock; INT64_MAX: none. */
static int64_t
stream_due(const struct hub_stream *s)
{
    if (s->ended)
        return s->cut_at_ms != 0 ? s->cut_at_ms : INT64_MAX;
    return !s->reauth_sent && s->state == ST_LIVE && s->reauth_at_ms < s->end_at_ms
               ? s->reauth_at_ms
               : s->end_at_ms;
}

/* Lowers h->next_due_ms to s's own next timer. h->mu held. */
static void
lower_due(struct hub *h, const struct hub_stream *s)
{
    if (stream_due(s) < h->next_due_ms)
        h->next_due_ms = stream_due(s);
}

/* A stream's lifetime: the token's exp or the maximum age spread by the jitter, whichever comes
 * first; and when its reauth warning is due. */
static void
stream_times(struct hub *h, struct hub_stream *s, int64_t now)
{
    double r = (double)rand_r(&h->seed) / RAND_MAX;
    int64_t age = h->o.max_age_ms +
                  (int64_t)((double)h->o.max_age_ms * HUB_MAX_AGE_JITTER_PCT / 100.0 * (2 * r - 1));

    s->end_at_ms = now + age < s->expires_ms ? now + age : s->expires_ms;
    s->reauth_at_ms = s->expires_ms - HUB_REAUTH_LEAD_MS;
}

static struct hub_stream *
stream_new(const struct hub_subscriber *who, const struct hub_conn_ops *ops, void *conn)
{
    struct hub_stream *s = calloc(1, sizeof *s);

    if (s == NULL || strlen(who->sub) > HUB_SUB_BYTES_MAX ||
        (who->n_mtg > 0 && (s->mtg = calloc(who->n_mtg, sizeof *s->mtg)) == NULL)) {
        free(s);
        return NULL;
    }
    pthread_mutex_init(&s->mu, NULL);
    for (size_t i = 0; i < who->n_mtg; i++)
        snprintf(s->mtg[i], sizeof s->mtg[i], "%s", who->mtg[i]);
    s->n_mtg = who->n_mtg;
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

static bool serve_at_open(struct hub *h, struct tenant *t, struct hub_stream *s);

enum hub_open_status
hub_stream_open(struct hub *h, const struct hub_subscriber *who, const struct hub_conn_ops *ops,
                void *conn, struct hub_stream **out)
{
    struct hub_stream *s = stream_new(who, ops, conn);
    enum hub_open_status st = HUB_OPENED;

    if (s == NULL || who->n_mtg > HUB_MTG_MAX)
        st = HUB_NOMEM;
    pthread_mutex_lock(&h->mu);
    struct tenant *t = st == HUB_OPENED ? tenant_get(h, who->tenant_id) : NULL;
    struct person *p = t != NULL ? person_get(h, who->tenant_id, who->sub) : NULL;
    if (st == HUB_OPENED && (t == NULL || p == NULL))
        st = HUB_NOMEM;
    else if (st == HUB_OPENED && (h->draining || h->stop))
        st = HUB_STOPPING;
    else if (st == HUB_OPENED && h->n_streams >= h->o.streams_max)
        st = HUB_FULL;
    else if (st == HUB_OPENED && p->n >= h->o.per_participant_max)
        st = HUB_PARTICIPANT_FULL;
    if (st == HUB_OPENED) {
        sse_buf_init(&s->buf, h->o.buffer_max);
        s->hub = h;
        s->tenant = t;
        s->person = p;
        p->n++;
        stream_times(h, s, timefmt_now_ms());
        lower_due(h, s);
        /* A tenant without streams is neither polled nor woken, so its head, ring and purge mark
         * may be long out of date: read the head again before serving (serve_new waits for it),
         * else hello would name an old head and what fired since would follow as if new. */
        if (t->n_streams == 0)
            t->known = false;
        s->next = t->streams;
        if (t->streams != NULL)
            t->streams->prev = s;
        t->streams = s;
        t->n_streams++;
        t->n_new++;
        h->n_streams++;
        watch_peer(h, s);
        if (!serve_at_open(h, t, s)) {
            h->work = true;
            pthread_cond_broadcast(&h->cv);
        }
    } else if (p != NULL && p->n == 0) {
        person_put(h, (p->n = 1, p));
    }
    pthread_mutex_unlock(&h->mu);
    if (st != HUB_OPENED && s != NULL)
        stream_unref(s);
    *out = st == HUB_OPENED ? s : NULL;
    return st;
}

void
hub_stream_close(struct hub_stream *s)
{
    struct hub *h = s->hub;

    pthread_mutex_lock(&h->mu);
    unwatch_peer(h, s);
    pthread_mutex_lock(&s->mu);
    s->conn_gone = true;
    wakeq_forget(&h->wake, &s->wake, mono_ms());
    pthread_mutex_unlock(&s->mu);
    s->closed = true;
    struct tenant *t = s->tenant;
    if (s->prev != NULL)
        s->prev->next = s->next;
    else
        t->streams = s->next;
    if (s->next != NULL)
        s->next->prev = s->prev;
    if (s->state == ST_NEW)
        t->n_new--;
    if (--t->n_streams == 0)
        t->idle_since_ms = mono_ms();
    person_put(h, s->person);
    h->n_streams--;
    pthread_cond_broadcast(&h->cv);
    stream_unref(s);
    pthread_mutex_unlock(&h->mu);
}

size_t
hub_streams(struct hub *h)
{
    if (h == NULL)
        return 0;
    pthread_mutex_lock(&h->mu);
    size_t n = h->n_streams;
    pthread_mutex_unlock(&h->mu);
    return n;
}

void
hub_notify(void *arg, const struct stream_head *heads, size_t n)
{
    struct hub *h = arg;

    if (h == NULL)
        return;
    pthread_mutex_lock(&h->mu);
    if (n == 0)
        h->next_poll_ms = 0;
    for (size_t i = 0; i < n; i++) {
        struct tenant *t = *tenant_slot(h, heads[i].tenant_id);
        if (t != NULL && t->n_streams > 0 && heads[i].seq > t->hint)
            t->hint = heads[i].seq;
    }
    h->work = true;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
}

/* ---- matching and frames ------------------------------------------------------------------ */

static int
cmp_sub(const void *key, const void *elem)
{
    return strcmp(key, *(char *const *)elem);
}

static bool
matches(const struct hub_stream *s, const struct event *e)
{
    if (e->frame == NULL ||
        bsearch(s->person->sub, e->audience, e->n_audience, sizeof *e->audience, cmp_sub) == NULL)
        return false;
    if (s->n_mtg == 0)
        return true;
    for (size_t i = 0; i < s->n_mtg; i++)
        if (strcmp(s->mtg[i], e->meeting_id) == 0)
            return true;
    return false;
}

/* Fills e from a read event and its body (stolen). 0, or -1 when out of memory. */
static int
event_fill(struct event *e, const struct db_stream_event *ev, char *body_steal)
{
    memset(e, 0, sizeof *e);
    e->seq = ev->seq;
    memcpy(e->meeting_id, ev->meeting_id, sizeof e->meeting_id);
    if (codec_string_list_parse(ev->audience_json, &e->audience, &e->n_audience) != 0) {
        free(body_steal);
        return -1;
    }
    if (body_steal != NULL) {
        e->frame =
            sse_frame_event(ev->seq, "reminder", body_steal, strlen(body_steal), &e->frame_len);
        free(body_steal);
        if (e->frame == NULL)
            return -1;
    }
    return 0;
}

/* ---- database (called without h->mu) ------------------------------------------------------ */

/* Notes whether the last database call worked: one line when an outage starts (with why), one
 * when it ends, nothing in between. A failure also holds off the next call for DB_RETRY_MS
 * (hub_db): a connect, or a statement on a connection that broke, may block for seconds. */
static void
db_note(struct hub *h, bool ok, const char *why)
{
    if (!ok && !h->db_down)
        LOG_WARN("stream hub: database unavailable, retrying: %s", why);
    else if (ok && h->db_down)
        LOG_INFO("stream hub: database available again");
    h->db_down = !ok;
    if (!ok)
        h->db_retry_ms = mono_ms() + DB_RETRY_MS;
}

/* The thread's connection, or NULL (nothing tried) while a failure holds calls off. */
static struct db *
hub_db(struct hub *h)
{
    char err[DB_ERR_MAX];

    if (mono_ms() < h->db_retry_ms)
        return NULL;
    if (h->db != NULL)
        return h->db;
    if ((h->db = db_open(h->database_url, err, sizeof err)) == NULL)
        db_note(h, false, err);
    return h->db;
}

/* The tenant's purged_through as PostgreSQL has it now, or -1 on database trouble. */
static int64_t
purged_now(struct hub *h, int64_t tenant_id)
{
    struct db_stream_head hd;
    struct db *db = hub_db(h);

    if (db == NULL)
        return -1;
    bool ok = db_stream_heads(db, &tenant_id, 1, &hd) == DB_ONE_RESULT;
    db_note(h, ok, db_errmsg(db)); /* a failure holds off the next call, as every other's */
    return ok ? hd.purged_through : -1;
}

/* Reads events (after, until] (only sub's when sub is set) into out with their bodies. Returns
 * the count, or -1 on database trouble (logged once per outage, by db_note). */
static long
read_events(struct hub *h, int64_t tenant_id, int64_t after, int64_t until, const char *sub,
            size_t max, struct event *out)
{
    struct db_stream_event ev[DB_STREAM_EVENTS_MAX];
    char *bodies[DB_STREAM_EVENTS_MAX];
    struct db *db = hub_db(h);
    size_t n = 0;
    long got = -1;

    if (db == NULL)
        return -1;
    enum db_status st = db_stream_events(db, tenant_id, after, until, sub, max, ev, &n);
    if (st == DB_ONE_RESULT)
        st = stream_bodies(db, ev, n, bodies);
    if (st == DB_ONE_RESULT) {
        got = 0;
        for (size_t i = 0; i < n; i++) {
            if (got >= 0 && event_fill(&out[got], &ev[i], bodies[i]) == 0)
                got++;
            else if (got >= 0) {
                for (long j = 0; j < got; j++)
                    event_clear(&out[j]);
                got = -1;
            } else {
                free(bodies[i]);
            }
        }
    }
    for (size_t i = 0; i < n; i++)
        db_stream_event_fini(&ev[i]);
    db_note(h, got >= 0, st == DB_ONE_RESULT ? "out of memory" : db_errmsg(db));
    return got;
}

/* ---- fan-out (h->mu held, dropped while writing) ------------------------------------------- */

/* The streams an event goes to are picked under h->mu, each holding a reference, and written to
 * without it: a stream opening meanwhile (hub_stream_open, on an HTTP thread that may also owe an
 * API request its answer) waits for the pick, not for 10,000 writes. Only this thread writes
 * events, so each stream still gets them in order; one that opens meanwhile is ST_NEW and gets
 * this event from the ring when serve_new takes it. */
static void
deliver_event(struct hub *h, struct tenant *t, const struct event *e)
{
    size_t n = 0;

    for (struct hub_stream *s = t->streams; s != NULL; s = s->next) {
        if (s->state != ST_LIVE || e->seq <= s->cursor)
            continue;
        s->cursor = e->seq;
        if (matches(s, e)) {
            TOCSIN_ASSERT(n < h->o.streams_max); /* hub_stream_open refuses beyond it */
            s->refs++;
            h->fan[n++] = s;
        }
    }
    if (n == 0)
        return;
    pthread_mutex_unlock(&h->mu);
    for (size_t i = 0; i < n; i++)
        stream_write(h->fan[i], e->frame, e->frame_len);
    metrics_add(METRIC_STREAM_EVENTS, n);
    pthread_mutex_lock(&h->mu);
    for (size_t i = 0; i < n; i++)
        stream_unref(h->fan[i]);
}

/* Takes events into the ring (stealing their contents) and fans each out. */
static void
take_events(struct hub *h, struct tenant *t, struct event *ev, size_t n)
{
    if (n > 0 && !ring_alloc(t)) {
        for (size_t i = 0; i < n; i++)
            event_clear(&ev[i]);
        return; /* out of memory: nothing is advanced, the next round reads them again */
    }
    for (size_t i = 0; i < n; i++) {
        struct event *slot = &t->ring[ev[i].seq % HUB_RING_MAX];

        ring_put(t, &ev[i]);
        t->ring_n = ev[i].seq == t->last_seen + 1 && t->ring_n < HUB_RING_MAX ? t->ring_n + 1
                    : ev[i].seq == t->last_seen + 1                           ? HUB_RING_MAX
                                                                              : 1;
        t->last_seen = ev[i].seq;
        deliver_event(h, t, slot);
    }
}

/* Reads a tenant's events up to its hint, in batches, and fans them out. h->mu held; dropped
 * around each read. */
static void
read_tenant(struct hub *h, struct tenant *t)
{
    while (t->known && t->hint > t->last_seen && mono_ms() >= h->db_retry_ms) {
        int64_t id = t->id, after = t->last_seen, until = t->hint;

        pthread_mutex_unlock(&h->mu);
        long n = read_events(h, id, after, until, NULL, HUB_READ_MAX, h->evbuf);
        pthread_mutex_lock(&h->mu);
        if (n < 0)
            return; /* the tick retries after DB_RETRY_MS */
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
        struct tenant *t = *tenant_slot(h, hd[i].tenant_id);

        if (t == NULL)
            continue;
        t->purged_through = hd[i].purged_through;
        if (!t->known && (t->ring_n == 0 || hd[i].seq - t->last_seen > HUB_RING_MAX ||
                          hd[i].seq < t->last_seen)) {
            for (size_t k = 0; t->ring != NULL && k < HUB_RING_MAX; k++)
                event_clear(&t->ring[k]);
            t->ring_n = 0;
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

    pthread_mutex_unlock(&h->mu);
    struct db *db = hub_db(h);
    enum db_status st = db ? db_stream_heads(db, ids, n, hd) : DB_SOFT_ERROR;
    if (db != NULL)
        db_note(h, st == DB_ONE_RESULT, db_errmsg(db));
    pthread_mutex_lock(&h->mu);
    if (st == DB_ONE_RESULT)
        apply_heads(h, hd, n, gen);
}

/* Reads the heads of tenants that have none yet, asked for one, or all at a poll. */
static void
heads_round(struct hub *h, bool poll)
{
    struct db_stream_head hd[DB_STREAM_HEADS_MAX];
    int64_t ids[DB_STREAM_HEADS_MAX];
    size_t n = 0;

    for (size_t b = 0; b < TENANT_BUCKETS; b++) {
        for (struct tenant *t = h->tenants[b]; t != NULL; t = t->next) {
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

/* ---- new streams (h->mu held) ------------------------------------------------------------- */

static void
go_live(struct tenant *t, struct hub_stream *s)
{
    s->state = ST_LIVE;
    s->cursor = t->last_seen;
    t->n_new--;
    lower_due(s->hub, s); /* its reauth warning counts from now */
}

static void
send_reset(struct tenant *t, struct hub_stream *s, const char *reason)
{
    char data[CONTROL_DATA_MAX];

    snprintf(data, sizeof data, "{\"reason\":\"%s\",\"head\":%lld}", reason,
             (long long)t->last_seen);
    stream_event(s, t->last_seen, "reset", data);
    metrics_add(METRIC_STREAM_RESETS, 1);
    go_live(t, s);
}

/* Replays ev[0..n) to s after a resumed hello, then an id-only block so that the client's cursor
 * moves to the head even when the last events were not for it. A backlog larger than the
 * stream's buffer bound goes in parts: the frames that fit it (at least one), each with its id,
 * then a clean end; the client resumes from the last of them (after its retry) and gets the next
 * part. Written whole, it would pass the bound, be cut, and be replayed again on every resume. */
static void
send_backlog(struct tenant *t, struct hub_stream *s, const struct event *const *ev, size_t n)
{
    char data[CONTROL_DATA_MAX];
    size_t fit = 0, bytes = 2 * CONTROL_FRAME_MAX, max = s->hub->o.buffer_max;

    while (fit < n && (fit == 0 || bytes + ev[fit]->frame_len <= max))
        bytes += ev[fit++]->frame_len;
    bool whole = fit == n && bytes <= max;
    snprintf(data, sizeof data, "{\"seq\":%lld,\"resumed\":true,\"replayed\":%zu}",
             (long long)t->last_seen, fit);
    stream_event(s, -1, "hello", data);
    for (size_t i = 0; i < fit; i++)
        stream_write(s, ev[i]->frame, ev[i]->frame_len);
    if (whole)
        stream_event(s, t->last_seen, NULL, NULL);
    metrics_add(METRIC_STREAM_RESUMES, 1);
    metrics_add(METRIC_STREAM_EVENTS, fit);
    go_live(t, s);
    if (!whole)
        stream_end(s);
}

/* The backlog from the ring, which holds every event after the cursor. */
static void
resume_from_ring(struct tenant *t, struct hub_stream *s)
{
    const struct event *pick[HUB_BACKLOG_MAX] = {0}; /* = {0}: GCC -O2 warns (a false positive) */
    size_t n = 0;

    for (int64_t seq = s->cursor + 1; seq <= t->last_seen; seq++) {
        const struct event *e = ring_at(t, seq);
        if (e == NULL || !matches(s, e))
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
resume_from_db(struct hub *h, struct tenant *t, struct hub_stream *s)
{
    const struct event *pick[HUB_BACKLOG_MAX] = {0}; /* = {0}: GCC -O2 warns (a false positive) */
    int64_t id = t->id, after = s->cursor, until = t->last_seen;
    size_t n = 0;
    char sub[HUB_SUB_BYTES_MAX + 1]; /* a copy: its person goes with its last stream's close */

    snprintf(sub, sizeof sub, "%s", s->person->sub);
    s->refs++;
    pthread_mutex_unlock(&h->mu);
    metrics_add(METRIC_STREAM_BACKLOG_READS, 1);
    long got = read_events(h, id, after, until, sub, HUB_BACKLOG_MAX + 1, h->evbuf);
    /* Read after the events: a purge that committed before their read shows here (it moves
     * purged_through in the statement that deletes), so events retention removed since this
     * tenant's head was last read are never skipped silently. */
    int64_t purged = got >= 0 ? purged_now(h, id) : -1;
    pthread_mutex_lock(&h->mu);
    bool closed = s->closed;
    /* Until hub_stream_close, the connection's own reference keeps s: only a closed stream can
     * go with ours. */
    TOCSIN_ASSERT(closed || s->refs >= 2);
    stream_unref(s);
    if (got < 0 || closed || purged < 0 || after < purged) {
        for (long i = 0; i < got; i++)
            event_clear(&h->evbuf[i]);
        if (got < 0 || closed)
            return got >= 0;
        if (purged < 0)
            return false; /* database trouble: a later round tries again */
        t->purged_through = purged > t->purged_through ? purged : t->purged_through;
        send_reset(t, s, "cursor_expired");
        return true;
    }
    /* A full read was cut: events after it were never read, so what it matched cannot end at
     * the head (a token limited to some meetings may match few of them). */
    bool cut = got > HUB_BACKLOG_MAX;
    for (long i = 0; i < got && !cut; i++)
        if (matches(s, &h->evbuf[i]))
            pick[n++] = &h->evbuf[i];
    if (cut)
        send_reset(t, s, "too_far_behind");
    else
        send_backlog(t, s, pick, n);
    for (long i = 0; i < got; i++)
        event_clear(&h->evbuf[i]);
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
backfill_ring(struct hub *h, struct tenant *t, int64_t cursor)
{
    int64_t id = t->id, until = t->last_seen - (int64_t)t->ring_n;
    int64_t after = until - HUB_READ_MAX > cursor ? until - HUB_READ_MAX : cursor;

    if (!ring_alloc(t))
        return FILL_FAILED;
    pthread_mutex_unlock(&h->mu);
    metrics_add(METRIC_STREAM_BACKLOG_READS, 1);
    long n = read_events(h, id, after, until, NULL, HUB_READ_MAX, h->evbuf);
    int64_t purged = n >= 0 ? purged_now(h, id) : -1; /* as resume_from_db: after the read */
    pthread_mutex_lock(&h->mu);
    bool whole = n == until - after && purged >= 0 && after >= purged;
    for (long i = 0; whole && i < n; i++)
        whole = h->evbuf[i].seq == after + 1 + i;
    for (long i = 0; i < n; i++) {
        if (whole)
            ring_put(t, &h->evbuf[i]);
        else
            event_clear(&h->evbuf[i]);
    }
    if (!whole)
        return n < 0 || purged < 0 ? FILL_FAILED : FILL_GAP;
    t->ring_n += (size_t)n;
    return FILL_READ;
}

/* One batch of backfill_ring for s; then its backlog from the ring once the ring reaches its
 * cursor (else a later turn reads the next batch), or, after a gap, from PostgreSQL on its own in
 * a later turn. False on trouble. */
static bool
resume_after_backfill(struct hub *h, struct tenant *t, struct hub_stream *s)
{
    s->refs++;
    enum fill f = backfill_ring(h, t, s->cursor);
    bool closed = s->closed;
    TOCSIN_ASSERT(closed || s->refs >= 2); /* as in resume_from_db */
    stream_unref(s);
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
ahead_judged(struct hub *h, struct tenant *t, struct hub_stream *s)
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
 * makes at most one (serve_backlog). */
static bool
serve_one(struct hub *h, struct tenant *t, struct hub_stream *s, bool hub_thread)
{
    char data[CONTROL_DATA_MAX];

    if (!s->greeted) {
        stream_retry(s, h->o.retry_ms);
        s->greeted = true;
    }
    switch (s->cursor_kind) {
    case HUB_CURSOR_NONE:
        snprintf(data, sizeof data, "{\"seq\":%lld,\"resumed\":false}", (long long)t->last_seen);
        stream_event(s, t->last_seen, "hello", data);
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
 * and wait for the hub thread's round and a resume. False: the hub thread serves it (serve_new). */
static bool
serve_at_open(struct hub *h, struct tenant *t, struct hub_stream *s)
{
    return t->known && t->hint <= t->last_seen && serve_one(h, t, s, false);
}

/* Whether s waits for its backlog from PostgreSQL: its cursor is older than the ring. */
static bool
needs_read(const struct tenant *t, const struct hub_stream *s)
{
    return s->state == ST_NEW && !s->ended && s->cursor_kind == HUB_CURSOR_SET &&
           s->cursor >= t->purged_through && s->cursor < t->last_seen - (int64_t)t->ring_n;
}

/* Serves the tenant's new streams that need no read (without dropping h->mu). True when one
 * waits for a read of its backlog: serve_backlog makes those, one a round. */
static bool
serve_new(struct hub *h, struct tenant *t)
{
    bool waits = false;

    if (!t->known || t->n_new == 0 || t->hint > t->last_seen)
        return false;
    for (struct hub_stream *s = t->streams; s != NULL; s = s->next)
        if (s->state == ST_NEW && s->ended) /* its time ran out while it waited: nothing to send */
            go_live(t, s);
        else if (s->state == ST_NEW && !serve_one(h, t, s, false))
            waits = waits || needs_read(t, s);
    return waits;
}

/* One backlog read, for the stream of t that has waited longest for one (streams are listed
 * newest first). A round makes one, for the tenant that had one least recently, so that resumes
 * from PostgreSQL (about 40 ms each) delay other tenants' live events by one read at most, and a
 * tenant with many resumes takes its turn with the others. */
static void
serve_backlog(struct hub *h, struct tenant *t)
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

/* ---- timers (h->mu held) ------------------------------------------------------------------ */

static void
stream_timers(struct hub_stream *s, int64_t now, bool heartbeat)
{
    char at[TIMEFMT_BUF], data[CONTROL_DATA_MAX];

    if (s->ended) {
        /* A heartbeat's time after its end and still open: its client reads nothing (a shut
         * window keeps libmicrohttpd from calling the reader, so the end is never taken) and
         * would hold its places past its age and its token. */
        if (s->cut_at_ms != 0 && now >= s->cut_at_ms) {
            s->cut_at_ms = 0;
            cut_stream(s);
        }
        return;
    }
    if (now >= s->end_at_ms) {
        stream_end(s);
        return;
    }
    if (!s->reauth_sent && s->state == ST_LIVE && now >= s->reauth_at_ms) {
        s->reauth_sent = true;
        snprintf(data, sizeof data, "{\"expires_at\":\"%s\"}", timefmt_format(s->expires_ms, at));
        stream_event(s, -1, "reauth", data);
    }
    if (heartbeat)
        stream_comment(s, "hb");
}

/* Timers of every stream and the heartbeat when due. Also finds when the next stream timer is
 * due: until then only the heartbeat needs a walk. Timer thread. */
static void
timers(struct hub *h, int64_t mono)
{
    bool heartbeat = mono >= h->next_heartbeat_ms;
    int64_t now = timefmt_now_ms();

    if (heartbeat)
        h->next_heartbeat_ms = mono + h->o.heartbeat_ms;
    h->next_due_ms = INT64_MAX;
    for (size_t b = 0; b < TENANT_BUCKETS; b++)
        for (struct tenant *t = h->tenants[b]; t != NULL; t = t->next)
            for (struct hub_stream *s = t->streams; s != NULL; s = s->next) {
                stream_timers(s, now, heartbeat);
                lower_due(h, s);
            }
}

/* Forgets tenants without streams for long. Hub thread: the only one that frees a tenant, so
 * the tenants it works on stay valid while it has h->mu dropped. */
static void
forget_idle(struct hub *h, int64_t mono)
{
    for (size_t b = 0; b < TENANT_BUCKETS; b++) {
        struct tenant **slot = &h->tenants[b];
        while (*slot != NULL) {
            struct tenant *t = *slot;
            if (t->n_streams == 0 && mono - t->idle_since_ms > HUB_TENANT_IDLE_MS) {
                *slot = t->next;
                tenant_free(t);
            } else {
                slot = &t->next;
            }
        }
    }
}

/* Cuts the streams whose client closed its socket: libmicrohttpd does not watch a suspended
 * connection, so without this a closed stream would hold its slot (and its participant's) until a
 * heartbeat write failed, 20 to 40 s later at the default TOCSIN_STREAM_HEARTBEAT_MS. Each stream's
 * socket is in one epoll set from open to close, so a check costs what has closed, not what is open
 * (a poll(2) over 10,000 idle streams every second was a core's 1 to 2 percent). The sockets stay
 * open while h->mu is held (hub_stream_close takes it, and leaves the set, before the connection
 * closes). */
static void
check_peers(struct hub *h)
{
    struct epoll_event ev[HUB_PEER_EVENTS_MAX];
    int n = HUB_PEER_EVENTS_MAX;

    /* A reported socket leaves the set at once: the set is level-triggered, so a stream cut but
     * not closed yet would be reported again and again and crowd out the others. */
    while (h->epfd >= 0 && n == HUB_PEER_EVENTS_MAX &&
           (n = epoll_wait(h->epfd, ev, HUB_PEER_EVENTS_MAX, 0)) > 0) {
        for (int i = 0; i < n; i++) {
            struct hub_stream *s = ev[i].data.ptr;
            unwatch_peer(h, s);
            pthread_mutex_lock(&s->mu);
            if (!s->conn_gone && !s->cut)
                cut_locked(s);
            pthread_mutex_unlock(&s->mu);
        }
    }
}

/* ---- the thread --------------------------------------------------------------------------- */

static void
wait_for_work(struct hub *h)
{
    int64_t now = mono_ms(), until = now + HUB_TICK_MS;
    struct timespec ts;

    if (h->next_poll_ms < until)
        until = h->next_poll_ms;
    int64_t wait = until - now;
    if (wait <= 0 || h->work || h->stop)
        return;
    ts = cond_deadline(wait);
    while (!h->work && !h->stop)
        if (pthread_cond_timedwait(&h->cv, &h->mu, &ts) == ETIMEDOUT)
            break;
}

static void *
run(void *arg)
{
    struct hub *h = arg;

    pthread_mutex_lock(&h->mu);
    while (!h->stop) {
        wait_for_work(h);
        h->work = false;
        int64_t now = mono_ms();
        bool poll = now >= h->next_poll_ms;
        if (poll)
            h->next_poll_ms = now + h->o.poll_ms;
        heads_round(h, poll);
        /* Only this thread frees tenants: turn stays valid while other reads drop h->mu. */
        struct tenant *turn = NULL;
        for (size_t b = 0; b < TENANT_BUCKETS; b++)
            for (struct tenant *t = h->tenants[b]; t != NULL; t = t->next) {
                if (t->n_streams == 0)
                    continue;
                read_tenant(h, t);
                if (serve_new(h, t) && (turn == NULL || t->backlog_turn < turn->backlog_turn))
                    turn = t;
            }
        if (turn != NULL)
            serve_backlog(h, turn);
        forget_idle(h, mono_ms());
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

/* Waits (h->mu held) for the timer thread's next tick or heartbeat, or for stop. */
static void
wait_for_tick(struct hub *h)
{
    int64_t now = mono_ms(), until = now + HUB_TICK_MS;
    struct timespec ts;

    if (h->next_heartbeat_ms < until)
        until = h->next_heartbeat_ms;
    if (until <= now || h->stop)
        return;
    ts = cond_deadline(until - now);
    while (!h->stop)
        if (pthread_cond_timedwait(&h->timer_cv, &h->mu, &ts) == ETIMEDOUT)
            break;
}

/* The timer thread: never calls the database, so it keeps the streams' clocks while the hub
 * thread waits on PostgreSQL. */
static void *
run_timers(void *arg)
{
    struct hub *h = arg;

    pthread_mutex_lock(&h->mu);
    while (!h->stop) {
        wait_for_tick(h);
        /* Timers walk every stream: at their tick once one is due, not at every tick, and at
         * each heartbeat. */
        int64_t now = mono_ms();
        if ((now >= h->next_timers_ms && timefmt_now_ms() >= h->next_due_ms) ||
            now >= h->next_heartbeat_ms) {
            h->next_timers_ms = now + HUB_TIMERS_MS;
            timers(h, now);
        }
        if (now >= h->next_peer_check_ms) {
            h->next_peer_check_ms = now + HUB_PEER_CHECK_MS;
            check_peers(h);
        }
        if (wakeq_tick(&h->wake, now) > 0)
            LOG_INFO("stream: no resumed stream was read for %d ms while others waited; their "
                     "slots are given to the waiting ones",
                     WAKE_STALL_MS);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

/* Stops the running threads (those of started[]) and waits for them. */
static void
stop_threads(struct hub *h, const bool started[2])
{
    pthread_mutex_lock(&h->mu);
    h->stop = true;
    pthread_cond_broadcast(&h->cv);
    pthread_cond_broadcast(&h->timer_cv);
    pthread_mutex_unlock(&h->mu);
    if (started[0])
        pthread_join(h->thread, NULL);
    if (started[1])
        pthread_join(h->timer_thread, NULL);
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
    h->next_heartbeat_ms = mono_ms() + opts->heartbeat_ms;
    h->epfd = epoll_create1(EPOLL_CLOEXEC);
    pthread_mutex_init(&h->mu, NULL);
    cond_init_monotonic(&h->cv);
    cond_init_monotonic(&h->timer_cv);
    wakeq_init(&h->wake, WAKE_SLOTS, WAKE_STALL_MS);
    bool started[2] = {false, false};
    if (h->database_url != NULL && h->evbuf != NULL && h->fan != NULL)
        started[0] = pthread_create(&h->thread, NULL, run, h) == 0;
    if (started[0])
        started[1] = pthread_create(&h->timer_thread, NULL, run_timers, h) == 0;
    if (!started[1]) {
        stop_threads(h, started);
        wakeq_fini(&h->wake);
        pthread_cond_destroy(&h->timer_cv);
        pthread_cond_destroy(&h->cv);
        pthread_mutex_destroy(&h->mu);
        if (h->epfd >= 0)
            close(h->epfd);
        free(h->evbuf);
        free(h->fan);
        free(h->database_url);
        free(h);
        return NULL;
    }
    return h;
}

/* Calls fn on every registered stream. h->mu held. */
static void
each_stream(struct hub *h, void (*fn)(struct hub_stream *s))
{
    for (size_t b = 0; b < TENANT_BUCKETS; b++)
        for (struct tenant *t = h->tenants[b]; t != NULL; t = t->next)
            for (struct hub_stream *s = t->streams; s != NULL; s = s->next)
                fn(s);
}

/* Waits (h->mu held) until no stream is left or deadline (monotonic ms) passes. */
static void
wait_closed(struct hub *h, int64_t deadline)
{
    struct timespec ts;

    while (h->n_streams > 0 && mono_ms() < deadline) {
        ts = cond_deadline(deadline - mono_ms());
        pthread_cond_timedwait(&h->cv, &h->mu, &ts);
    }
}

void
hub_drain(struct hub *h, int64_t grace_ms)
{
    if (h == NULL)
        return;
    pthread_mutex_lock(&h->mu);
    h->draining = true;
    size_t open = h->n_streams;
    each_stream(h, stream_end);
    wait_closed(h, mono_ms() + grace_ms);
    if (h->n_streams > 0) {
        LOG_WARN("shutdown: %zu of %zu streams still open after %lld ms; cutting them",
                 h->n_streams, open, (long long)grace_ms);
        each_stream(h, cut_stream);
        wait_closed(h, mono_ms() + HUB_DRAIN_CUT_MS);
    }
    pthread_mutex_unlock(&h->mu);
}

void
hub_stop(struct hub *h)
{
    if (h == NULL)
        return;
    stop_threads(h, (const bool[2]){true, true});
    for (size_t b = 0; b < TENANT_BUCKETS; b++)
        while (h->tenants[b] != NULL) {
            struct tenant *t = h->tenants[b];
            h->tenants[b] = t->next;
            tenant_free(t);
        }
    for (size_t b = 0; b < PERSON_BUCKETS; b++)
        while (h->people[b] != NULL) {
            struct person *p = h->people[b];
            h->people[b] = p->next;
            free(p);
        }
    db_close(h->db);
    wakeq_fini(&h->wake);
    pthread_cond_destroy(&h->timer_cv);
    pthread_cond_destroy(&h->cv);
    pthread_mutex_destroy(&h->mu);
    if (h->epfd >= 0)
        close(h->epfd);
    free(h->evbuf);
    free(h->fan);
    free(h->database_url);
    free(h);
}
