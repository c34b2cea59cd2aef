/* hub_internal.h -- what the parts of the stream hub (hub*.c) share and nobody else sees: the hub,
 * its tenants, participants, streams and events, which lock guards each field, and what one part
 * lends the others. src/stream/README.md says the rules in prose.
 *
 * The parts: hub.c (start, stop, drain, wake-ups, the hub thread's rounds), hub_lock.c (mutexes
 * that know their owner), hub_registry.c (tenants and participants), hub_stream.c (a stream's
 * buffer and reader, its open and close), hub_event.c (one event: built from a read, matched to a
 * stream), hub_ring.c (a tenant's recent events), hub_db.c (the hub thread's database connection
 * and reads), hub_fanout.c (new events to the live streams), hub_resume.c (a new stream's first
 * frames and backlog), hub_timer.c (the timer thread: heartbeats, reauth warnings, ends),
 * hub_peer.c (the sockets watched for a closed peer), hub_revoke.c (the end of the streams of
 * revoked signing keys).
 *
 * Locks, taken in this order: the hub's (h->mu), a stream's (s->mu), the wake queue's (wakeq.h).
 * Each field below says what guards it: "h->mu" or "s->mu" (read and written with that lock held);
 * "fixed" (written before the object is shared: by hub_start before the threads run, or by
 * hub_stream_open before the stream is listed; only read afterwards); a thread's name (that
 * thread's own). Some h->mu fields have one writer, the hub thread (a tenant's last_seen and ring;
 * freeing a tenant): it may drop h->mu around a read and find them as it left them when it takes
 * the lock back. */
#ifndef TOCSIN_HUB_INTERNAL_H
#define TOCSIN_HUB_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "db.h"
#include "db_signing_key.h"
#include "db_stream.h"
#include "hub.h"
#include "meeting.h"
#include "sse.h"
#include "wakeq.h"

#define HUB_TENANT_BUCKETS 1024
#define HUB_PERSON_BUCKETS 4096
#define HUB_CONTROL_DATA_MAX 128 /* the JSON of hello, reset and reauth */
/* Streams resumed at once (wakeq.h): enough to keep every HTTP thread busy during a fan-out and
 * to resume in batches (each reaches a thread as one walk of its suspended connections), few
 * enough that a request waits for its thread's share of them, 8 with 16 threads, not for
 * thousands (512 slots made the API requests that overlap a fan-out slower: bench/stream.sh). */
#define HUB_WAKE_SLOTS 128
/* A slot held this long while streams wait counts no more (wakeq_tick). */
#define HUB_WAKE_STALL_MS 200

/* ---- locks (hub_lock.c) -------------------------------------------------------------------- */

/* A mutex that knows which thread holds it, so that a function that needs it held can say so
 * (TOCSIN_ASSERT(hub_lock_held(...))) at the cost of one relaxed atomic store per lock and
 * unlock, in every build. */
struct hub_lock {
    pthread_mutex_t m;
    atomic_uintptr_t owner; /* hub_lock_self() of the holder; 0 while free */
};

void hub_lock_init(struct hub_lock *l);
void hub_lock_fini(struct hub_lock *l);
/* Takes l; the calling thread must not hold it already (asserted: that would deadlock). */
void hub_lock_acquire(struct hub_lock *l);
/* Gives l back; the calling thread must hold it (asserted). */
void hub_lock_release(struct hub_lock *l);
/* Whether the calling thread holds l. */
bool hub_lock_held(struct hub_lock *l);
/* pthread_cond_timedwait on cv with l, which the caller holds; returns its result. */
int hub_lock_wait(struct hub_lock *l, pthread_cond_t *cv, const struct timespec *deadline);
/* A token of the calling thread, never 0, distinct from every other running thread's. */
uintptr_t hub_lock_self(void);

/* ---- the objects --------------------------------------------------------------------------- */

/* One event of a tenant's ring: what fan-out and resumes need without a read. The ring's and the
 * read buffers' are the hub thread's to write, under h->mu for the ring. */
struct hub_event {
    int64_t seq;
    char meeting_id[MEETING_ID_LEN + 1];
    char **audience; /* sorted */
    size_t n_audience;
    char *frame; /* the whole SSE frame; NULL when nobody gets it (meeting deleted) */
    size_t frame_len;
};

/* A tenant of this replica's streams. h->mu; forgotten (its ring with it) HUB_TENANT_IDLE_MS
 * after it was left without streams, by the hub thread only (hub_registry_forget_idle), or by
 * hub_stop. */
struct hub_tenant {
    int64_t id;
    bool known;                 /* last_seen was read from the database */
    int64_t last_seen;          /* every event up to here has been fanned out (hub thread writes) */
    int64_t purged_through;     /* retention removed every event up to here */
    int64_t hint;               /* a wake-up's seq: read up to here */
    bool poll;                  /* read the head in the next round */
    uint64_t heads_read;        /* the last read of the heads applied (h->heads_started's count) */
    uint64_t backlog_turn;      /* h->backlog_turns when a stream of it last had a backlog read */
    struct hub_event *ring;     /* HUB_RING_MAX slots by seq; NULL until the first event (hub thread
                                 * writes, hub_ring.c) */
    size_t ring_n;              /* the ring holds seqs last_seen - ring_n + 1 .. last_seen */
    struct hub_stream *streams; /* newest first */
    size_t n_streams, n_new;    /* n_new: those still HUB_STREAM_NEW */
    int64_t idle_since_ms;      /* monotonic, while n_streams == 0 */
    struct hub_tenant *next;
};

/* A signing key of open streams, as the hub thread checks it (hub_revoke.c). */
struct hub_kid {
    int64_t tenant_id;
    char id[SIGNING_KEY_ID_MAX + 1];
    bool live;
};

/* A participant's open streams on this replica, for per_participant_max. h->mu; freed with its
 * last stream. */
struct hub_person {
    int64_t tenant_id;
    size_t n;
    struct hub_person *next;
    char sub[];
};

/* A stream's state goes one way only: NEW (registered; its first frames not written yet) to
 * LIVE (it gets the tenant's events as they are read), in hub_resume.c's go_live. */
enum hub_stream_state { HUB_STREAM_NEW, HUB_STREAM_LIVE };

struct hub_stream {
    /* Fixed. */
    struct hub *hub;
    struct hub_tenant *tenant;
    struct hub_person *person;
    const struct hub_conn_ops *ops;
    void *conn;
    char (*mtg)[MEETING_ID_LEN + 1];
    size_t n_mtg;
    char kid[SIGNING_KEY_ID_MAX + 1]; /* the token's signing key; "": none */
    enum hub_cursor cursor_kind;
    int64_t expires_ms, reauth_at_ms, end_at_ms; /* wall clock */
    /* Guarded by h->mu. */
    int64_t cursor; /* the last seq considered for this stream */
    enum hub_stream_state state;
    /* Each goes from false to true once. ended: hub_stream_end ran (its reader finishes after
     * what is buffered); closed: hub_stream_close ran. */
    bool greeted, ahead_seen, reauth_sent, ended, closed;
    uint64_t ahead_after; /* found ahead when this many reads of the heads had started */
    /* Wall clock: ended and still open then, it is cut (its client stopped reading, so its
     * reader never comes for the end); 0 once cut or never ended. */
    int64_t cut_at_ms;
    bool watched;     /* its socket is in h->epfd (hub_peer.c) */
    bool no_backfill; /* its backlog is read on its own: filling the ring found a gap */
    int refs;         /* the connection's (until hub_stream_close), and one per borrower */
    struct hub_stream *prev, *next; /* in tenant->streams */
    /* Guarded by mu. */
    struct hub_lock mu;
    struct sse_buf buf; /* what waits for the reader; buffer_max bytes and one frame at most */
    bool suspended, ending, cut, conn_gone;
    struct wakeq_node wake; /* its place in h->wake while its resume waits or holds a slot (the
                             * queue's lock; resume and conn fixed) */
};

struct hub {
    /* Fixed. */
    struct hub_opts o;
    char *database_url;
    pthread_t thread, timer_thread; /* joined by hub_stop */
    int epfd; /* every stream's socket, watched for a closed peer; -1 when epoll failed. Its
               * members change under h->mu (hub_peer.c). */
    struct hub_lock mu;
    pthread_cond_t cv;       /* monotonic clock; signalled on work and on stream close */
    pthread_cond_t timer_cv; /* monotonic clock; signalled on stop (the timer thread's) */
    struct wakeq wake;       /* its own lock; every resume of a stream goes through it */
    /* Guarded by h->mu. */
    bool stop, draining, work;
    size_t n_streams;
    int64_t next_poll_ms;   /* monotonic; the hub thread's but for hub_notify's "poll now" */
    uint64_t heads_started; /* reads of the heads started (hub_fanout.c: read_heads) */
    uint64_t backlog_turns; /* backlog reads made (hub_resume_backlog); the hub thread writes */
    int64_t next_due_ms;    /* wall clock: no stream's end or reauth is due before this */
    unsigned seed;          /* rand_r's, for the streams' lifetimes (hub_timer_schedule) */
    /* hub_lock_self() of the hub thread, set by it before its first round: the one thread that
     * drops h->mu for a read and uses the database. */
    uintptr_t hub_thread_self;
    struct hub_tenant *tenants[HUB_TENANT_BUCKETS];
    struct hub_person *people[HUB_PERSON_BUCKETS];
    /* The timer thread's, monotonic (set first by hub_start). */
    int64_t next_heartbeat_ms, next_timers_ms, next_peer_check_ms;
    /* The hub thread's. */
    struct hub_event *evbuf; /* DB_STREAM_EVENTS_MAX events of one read */
    struct hub_stream **fan; /* streams_max: the streams one event goes to (hub_fanout.c) */
    struct db *db;           /* hub_db.c */
    struct hub_kid *kids;    /* kids_cap: the open streams' signing keys (hub_revoke.c) */
    size_t kids_cap;
    int64_t next_revoke_ms; /* monotonic: the next check of the signing keys */
    int64_t db_retry_ms;
    bool db_down;
};

/* ---- the registry (hub_registry.c; h->mu held) ------------------------------------------- */

/* The tenant id, or NULL when it has none here. */
struct hub_tenant *hub_registry_tenant(struct hub *h, int64_t id);
/* The tenant id, added when missing; NULL when out of memory. */
struct hub_tenant *hub_registry_tenant_get(struct hub *h, int64_t id);
/* The participant's count, added (at 0) when missing; NULL when out of memory. */
struct hub_person *hub_registry_person_get(struct hub *h, int64_t tenant_id, const char *sub);
/* One stream of p's fewer; p goes (freed) with its last. */
void hub_registry_person_put(struct hub *h, struct hub_person *p);
/* Lists s (its tenant and person set) in its tenant and counts it everywhere. */
void hub_registry_link(struct hub *h, struct hub_stream *s);
/* Undoes hub_registry_link (s stays allocated; its person may go). */
void hub_registry_unlink(struct hub *h, struct hub_stream *s);
/* Calls fn on every listed stream. */
void hub_registry_each_stream(struct hub *h, void (*fn)(struct hub_stream *s));
/* Forgets tenants without streams for HUB_TENANT_IDLE_MS (mono: now, monotonic). Hub thread. */
void hub_registry_forget_idle(struct hub *h, int64_t mono);
/* Frees every tenant and participant (hub_stop, the threads gone). */
void hub_registry_clear(struct hub *h);

/* ---- streams (hub_stream.c) ---------------------------------------------------------------- */

/* Drops one reference; the last frees s. h->mu held (or s was never listed). */
void hub_stream_unref(struct hub_stream *s);
/* Drops s's bytes and has its connection closed. s->mu held. */
void hub_stream_cut_locked(struct hub_stream *s);
/* The same, taking s->mu. */
void hub_stream_cut(struct hub_stream *s);
/* Appends whole frames (built once for all streams by sse_frame_event). */
void hub_stream_write(struct hub_stream *s, const char *frames, size_t n);
/* Appends one control event (id < 0: none; data NULL: none). */
void hub_stream_event(struct hub_stream *s, int64_t id, const char *event, const char *data);
/* A comment line (a heartbeat), only when nothing waits. */
void hub_stream_comment(struct hub_stream *s, const char *text);
/* The retry: field. */
void hub_stream_retry(struct hub_stream *s, int64_t ms);
/* The stream ends cleanly once its reader took what is buffered. h->mu held. */
void hub_stream_end(struct hub_stream *s);
/* Whether s may see e: its participant is in e's audience, and e's meeting among s's (if the
 * token limits them); never an event without a frame. */
bool hub_stream_matches(const struct hub_stream *s, const struct hub_event *e);

/* ---- events and rings (hub_event.c, hub_ring.c; pure) ------------------------------------ */

/* Frees e's contents and zeroes it. */
void hub_event_clear(struct hub_event *e);
/* Fills e from a read event and its body (stolen; NULL: its meeting is gone, and nobody gets e).
 * 0, or -1 when out of memory or the audience is not a JSON array of strings. */
int hub_event_fill(struct hub_event *e, const struct db_stream_event *ev, char *body_steal);
/* Whether participant sub, on a stream limited to mtg[0..n_mtg) (n_mtg == 0: any meeting),
 * gets e. */
bool hub_event_matches(const struct hub_event *e, const char *sub, char (*mtg)[MEETING_ID_LEN + 1],
                       size_t n_mtg);

/* The event seq of t's ring, or NULL when the ring does not hold it. */
struct hub_event *hub_ring_at(struct hub_tenant *t, int64_t seq);
/* Allocates t's ring on first use. False when out of memory. */
bool hub_ring_alloc(struct hub_tenant *t);
/* Moves e (its contents stolen) into its slot of t's ring; the caller sets ring_n. */
void hub_ring_put(struct hub_tenant *t, struct hub_event *e);
/* Moves e (stolen), the one after t's last_seen or further, into the allocated ring as its new
 * head: last_seen becomes e's seq, and the ring holds the run of consecutive seqs ending there
 * (HUB_RING_MAX at most). Returns e's slot. */
struct hub_event *hub_ring_push(struct hub_tenant *t, struct hub_event *e);
/* Empties t's ring (ring_n 0; its storage stays). */
void hub_ring_clear(struct hub_tenant *t);
/* Empties t's ring and frees its storage. */
void hub_ring_free(struct hub_tenant *t);

/* ---- the database (hub_db.c; the hub thread, without h->mu) ------------------------------ */

/* Reads tenant_id's events (after, until] (at most max; who NULL: every one, else those
 * db_stream_events gives that reader) into out with their bodies, each event's audience narrowed
 * to what its meeting lists now (stream_bodies). Returns the count, or -1 on database trouble
 * (logged once per outage). A reader's read that fills max returns max with out left empty: its
 * caller asks for one more than it takes (a backlog's bound), and the bodies it would drop were
 * most of the read's cost, on the thread every tenant's live events wait for. */
long hub_db_events(struct hub *h, int64_t tenant_id, int64_t after, int64_t until,
                   const struct db_stream_reader *who, size_t max, struct hub_event *out);
/* The tenant's purged_through as PostgreSQL has it now, or -1 on database trouble. */
int64_t hub_db_purged(struct hub *h, int64_t tenant_id);
/* The heads of ids[0..n) (n <= DB_STREAM_HEADS_MAX) into hd; false on database trouble. */
bool hub_db_heads(struct hub *h, const int64_t *ids, size_t n, struct db_stream_head *hd);
/* Closes the connection (hub_stop, the threads gone). */
void hub_db_close(struct hub *h);
/* Sets kids[i].live for each of kids[0..n) (n <= HUB_REVOKE_BATCH): whether PostgreSQL has it as
 * a live signing key. False on database trouble (nothing set). */
bool hub_db_keys_live(struct hub *h, struct hub_kid *kids, size_t n);

/* ---- the hub thread's work (hub_fanout.c, hub_resume.c; h->mu held) ---------------------- */

/* Reads the heads of tenants that have none yet, asked for one, or all when poll. */
void hub_fanout_heads(struct hub *h, bool poll);
/* Reads a tenant's events up to its hint, in batches, and fans them out to its live streams. */
void hub_fanout_tenant(struct hub *h, struct hub_tenant *t);
/* Serves s at its open (any thread) when that needs no read; false: the hub thread serves it. */
bool hub_resume_at_open(struct hub *h, struct hub_tenant *t, struct hub_stream *s);
/* Serves t's new streams that need no read; true when one waits for a read of its backlog. */
bool hub_resume_new(struct hub *h, struct hub_tenant *t);
/* One backlog read, for the stream of t that has waited longest for one. Hub thread. */
void hub_resume_backlog(struct hub *h, struct hub_tenant *t);

/* ---- revoked signing keys (hub_revoke.c; the hub thread, h->mu held) -------------------- */

/* Every HUB_REVOKE_CHECK_MS (mono: now, monotonic): reads which signing keys of the open streams
 * are still live (h->mu dropped meanwhile) and ends the streams of the others. */
void hub_revoke_check(struct hub *h, int64_t mono);

/* ---- timers and peers (hub_timer.c, hub_peer.c) ------------------------------------------- */

/* The timer thread's function (arg: the hub). */
void *hub_timer_main(void *arg);
/* Sets s's end and reauth times from now (wall clock) and lowers h->next_due_ms to them. h->mu
 * held. */
void hub_timer_schedule(struct hub *h, struct hub_stream *s, int64_t now);
/* Lowers h->next_due_ms to s's own next timer. h->mu held. */
void hub_timer_lower_due(struct hub *h, const struct hub_stream *s);
/* Puts s's socket in h->epfd / takes it out (before its connection closes). h->mu held. */
void hub_peer_watch(struct hub *h, struct hub_stream *s);
void hub_peer_unwatch(struct hub *h, struct hub_stream *s);
/* Cuts the streams whose client closed its socket. h->mu held. */
void hub_peer_check(struct hub *h);

#endif
