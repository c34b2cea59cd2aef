/* scheduler.c -- the precision scheduler of scheduler.h. The thread sleeps on a condition variable
 * until the earliest held occurrence is due (plus SCHED_SLACK_MS), a poll is owed, or
 * scheduler_note brings news. Polls read only the part of the window not read yet (keyset on
 * (fire_at, id)); every SCHED_FULL_READ_MS a full read of the window also picks up what other
 * replicas created or moved inside it, and what is overdue. The timerheap's dedupe set makes the
 * repeated reads harmless. */
#include "scheduler.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cond.h"
#include "db.h"
#include "dbclock.h"
#include "log.h"
#include "members.h"
#include "thread.h"
#include "timefmt.h"
#include "timerheap.h"

struct scheduler {
    pthread_t thread;
    pthread_mutex_t mu; /* guards stop, inbox, n_inbox, inbox_lost */
    pthread_cond_t
        cv; /* signalled by scheduler_note, scheduler_reshard, scheduler_stop; CLOCK_MONOTONIC */
    bool stop;
    struct reminder_key inbox[SCHED_INBOX_MAX];
    size_t n_inbox;
    bool inbox_lost; /* the inbox overflowed: a full read is owed */
    atomic_size_t size;
    char *database_url;
    int64_t window_ms, poll_ms;
    struct dispatch *d;
    struct members *members;
    /* Below: the thread's own. */
    struct db *db;
    bool db_down;
    unsigned long full_reads; /* reads that found the heap full since it last had room; 0: room */
    int64_t full_at, full_id; /* the lowest keyset position where one of them stopped */
    int64_t full_since_ms;    /* monotonic: when the first of them did */
    struct timerheap h;
    int64_t read_at, read_id; /* keyset position up to which the window has been read */
    int64_t next_poll_ms;     /* monotonic */
    int64_t next_full_ms;     /* monotonic */
    struct reminder_key page[DB_DUE_BATCH_MAX];
    struct reminder_key out[SCHED_HANDOUT_MAX];
    struct reminder_key news[SCHED_INBOX_MAX];
    unsigned seed; /* for the hand-out rotation */
};

/* Adds one page of rows to the heap; returns -1 when the heap is full. */
static int
hold(struct scheduler *s, const struct reminder_key *k, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (timerheap_add(&s->h, &k[i]) < 0)
            return -1;
    return 0;
}

/* A read stopped at a full heap at keyset position (at, id): what lies from there waits for a
 * read that starts there or before to find room. Said once when that starts, as an outage is:
 * under sustained overload every poll stops here. */
static void
heap_full(struct scheduler *s, int64_t at, int64_t id)
{
    if (s->full_reads++ == 0 || at < s->full_at || (at == s->full_at && id < s->full_id)) {
        s->full_at = at;
        s->full_id = id;
    }
    if (s->full_reads > 1)
        return;
    s->full_since_ms = timefmt_mono_ms();
    LOG_WARN("sched: %d occurrences held (the heap is full); the rest of the window waits for "
             "room, read again every poll",
             SCHED_HEAP_MAX);
}

/* A read from (at, id) went through to its end: when it started where the heap was found full,
 * or before, the overload is over. */
static void
heap_room(struct scheduler *s, int64_t at, int64_t id)
{
    if (s->full_reads == 0 || at > s->full_at || (at == s->full_at && id > s->full_id))
        return;
    LOG_INFO("sched: room in the heap again, after %lu reads found it full over %lld ms",
             s->full_reads, (long long)(timefmt_mono_ms() - s->full_since_ms));
    s->full_reads = 0;
}

static bool
db_ready(struct scheduler *s)
{
    char err[DB_ERR_MAX];

    if (s->db != NULL)
        return true;
    if ((s->db = db_open_in_order(s->database_url, err, sizeof err)) != NULL)
        return true;
    if (!s->db_down)
        LOG_WARN("sched: database unavailable, retrying every poll: %s", err);
    s->db_down = true;
    return false;
}

/* Submits out[0..n) in dispatch batches, starting at a random batch and wrapping around. Replicas
 * that hold the same occurrences (one wrote them through its API and another owns their shard, or
 * a shard is changing owner) hold them in the same order; when many fall due at once, different
 * starting points let each replica claim whole batches of its own instead of all of them fighting
 * over the same ones, so the fire statements stay full and the burst is shared. */
static void
submit_rotated(struct scheduler *s, size_t n)
{
    size_t batches = (n + DISPATCH_BATCH_MAX - 1) / DISPATCH_BATCH_MAX;
    size_t first = batches > 1 ? (size_t)rand_r(&s->seed) % batches : 0;

    for (size_t b = 0; b < batches; b++) {
        size_t at = ((first + b) % batches) * DISPATCH_BATCH_MAX;
        size_t len = n - at < DISPATCH_BATCH_MAX ? n - at : DISPATCH_BATCH_MAX;
        dispatch_submit(s->d, &s->out[at], len); /* refusals are counted there; recon fires them */
    }
}

/* Hands every occurrence due by now to dispatch, SCHED_HANDOUT_MAX at a time. */
static void
hand_out_due(struct scheduler *s, int64_t now)
{
    const struct reminder_key *top;
    size_t n = 0;

    while ((top = timerheap_peek(&s->h)) != NULL && top->fire_at_ms + SCHED_SLACK_MS <= now) {
        timerheap_pop(&s->h, now, &s->out[n++]);
        if (n == SCHED_HANDOUT_MAX) {
            submit_rotated(s, n);
            n = 0;
        }
    }
    if (n > 0)
        submit_rotated(s, n);
}

/* Reads pending occurrences from the keyset position (at, id) up to until into the heap, page by
 * page. Returns 0 when everything up to until was read, -1 on a database error or a full heap
 * (the position then stays where the last complete page ended). */
static int
read_window(struct scheduler *s, int64_t at, int64_t id, int64_t until)
{
    struct shard_set owned;
    int64_t from_at = at, from_id = id;
    size_t n;

    members_shards(s->members, &owned);
    for (;;) {
        enum db_status st =
            db_reminder_due_batch(s->db, &owned, at, id, until, s->page, DB_DUE_BATCH_MAX, &n);
        if (st != DB_ONE_RESULT) {
            if (!s->db_down)
                LOG_WARN("sched: reading due reminders failed: %s", db_errmsg(s->db));
            s->db_down = true;
            return -1;
        }
        if (s->db_down)
            LOG_INFO("sched: database available again");
        s->db_down = false;
        if (hold(s, s->page, n) != 0) {
            heap_full(s, at, id);
            return -1;
        }
        hand_out_due(s, dbclock_now_ms()); /* what fell due meanwhile waits one page, not all */
        if (n > 0 &&
            (s->page[n - 1].fire_at_ms > s->read_at || (s->page[n - 1].fire_at_ms == s->read_at &&
                                                        s->page[n - 1].reminder_id > s->read_id))) {
            s->read_at = s->page[n - 1].fire_at_ms;
            s->read_id = s->page[n - 1].reminder_id;
        }
        if (n < DB_DUE_BATCH_MAX) {
            heap_room(s, from_at, from_id);
            return 0;
        }
        at = s->page[n - 1].fire_at_ms;
        id = s->page[n - 1].reminder_id;
    }
}

static void
poll_db(struct scheduler *s, bool full)
{
    int64_t until = dbclock_now_ms() + s->window_ms;

    if (!db_ready(s))
        return;
    /* The position is past the window's end when the clock's estimate moved back: a replica that
     * started without a database goes by its own clock until the first sample of the database's
     * (dbclock.h), and that one may run ahead. Polls read on from the position, so what others
     * wrote between the window's end and it would wait for the next full read
     * (SCHED_FULL_READ_MS), or the reconciler's sweep (a replica 5 s ahead, before the reconciler
     * sampled as it starts, fired its first second of occurrences 0.7-1.1 s late). Read on from the
     * window's end instead (every row at it included). */
    if (s->read_at > until) {
        s->read_at = until;
        s->read_id = 0;
    }
    if (full ? read_window(s, INT64_MIN, 0, until) : read_window(s, s->read_at, s->read_id, until))
        return;
    if (until > s->read_at) {
        s->read_at = until; /* all read through until: rows due later come with the next poll */
        s->read_id = INT64_MAX;
    }
}

/* Takes what scheduler_note brought; returns true when a full read is owed (the inbox overflowed,
 * the heap was full, or scheduler_reshard asked for one). */
static bool
take_news(struct scheduler *s)
{
    size_t n;
    bool lost;
    int64_t until = dbclock_now_ms() + s->window_ms;

    pthread_mutex_lock(&s->mu);
    n = s->n_inbox;
    memcpy(s->news, s->inbox, n * sizeof *s->news);
    s->n_inbox = 0;
    lost = s->inbox_lost;
    s->inbox_lost = false;
    pthread_mutex_unlock(&s->mu);
    for (size_t i = 0; i < n; i++)
        if (s->news[i].fire_at_ms <= until && timerheap_add(&s->h, &s->news[i]) < 0)
            lost = true;
    return lost;
}

/* Waits until the next due occurrence, the next poll, news or stop. Returns false on stop. */
static bool
wait_next(struct scheduler *s)
{
    const struct reminder_key *top = timerheap_peek(&s->h);
    int64_t mono = timefmt_mono_ms(), until = s->next_poll_ms;
    struct timespec ts;
    bool go;

    if (top != NULL) {
        int64_t due_in = top->fire_at_ms + SCHED_SLACK_MS - dbclock_now_ms();
        if (mono + due_in < until)
            until = mono + due_in;
    }
    ts = cond_deadline(until - mono);
    pthread_mutex_lock(&s->mu);
    while (!s->stop && s->n_inbox == 0 && !s->inbox_lost)
        if (pthread_cond_timedwait(&s->cv, &s->mu, &ts) == ETIMEDOUT)
            break;
    go = !s->stop;
    pthread_mutex_unlock(&s->mu);
    return go;
}

static void *
scheduler_thread(void *arg)
{
    struct scheduler *s = arg;

    thread_set_name("tocsin-sched");

    do {
        int64_t mono = timefmt_mono_ms(), now;
        bool full = take_news(s) || mono >= s->next_full_ms;

        if (full || mono >= s->next_poll_ms) {
            poll_db(s, full);
            s->next_poll_ms = mono + s->poll_ms;
            if (full)
                s->next_full_ms = mono + SCHED_FULL_READ_MS;
        }
        now = dbclock_now_ms();
        hand_out_due(s, now);
        timerheap_forget(&s->h, now - SCHED_FORGET_MS);
        atomic_store(&s->size, timerheap_size(&s->h));
    } while (wait_next(s));
    return NULL;
}

static void
destroy(struct scheduler *s)
{
    db_close(s->db);
    timerheap_fini(&s->h);
    free(s->database_url);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

struct scheduler *
scheduler_start(const struct scheduler_opts *opts)
{
    struct scheduler *s = calloc(1, sizeof *s);

    if (s == NULL)
        return NULL;
    if (pthread_mutex_init(&s->mu, NULL) != 0) {
        free(s);
        return NULL;
    }
    cond_init_monotonic(&s->cv);
    atomic_init(&s->size, 0);
    s->window_ms = opts->window_ms;
    s->poll_ms = opts->poll_ms;
    s->d = opts->dispatch;
    s->members = opts->members;
    s->seed = (unsigned)timefmt_now_ms() ^ (unsigned)getpid();
    s->read_at = INT64_MIN;
    s->database_url = strdup(opts->database_url);
    if (s->database_url == NULL || timerheap_init(&s->h, SCHED_HEAP_MAX) != 0 ||
        pthread_create(&s->thread, NULL, scheduler_thread, s) != 0) {
        destroy(s);
        return NULL;
    }
    return s;
}

/* Only what is due within the window is noted: take_news would drop the rest, and a poll reads it
 * once the window reaches it (it was committed before this note, so a poll that ran without
 * seeing it ended its window before now + window_ms). Waking the thread for nothing cost a context
 * switch per create, most of them for meetings hours ahead (bench/create.sh). */
void
scheduler_note(struct scheduler *s, const struct reminder_key *k, size_t n)
{
    if (s == NULL || n == 0)
        return;
    int64_t until = dbclock_now_ms() + s->window_ms;
    bool news = false;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < n; i++) {
        if (k[i].fire_at_ms > until)
            continue;
        if (s->n_inbox == SCHED_INBOX_MAX) {
            s->inbox_lost = true;
            news = true;
            break;
        }
        s->inbox[s->n_inbox++] = k[i];
        news = true;
    }
    if (news)
        pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void
scheduler_reshard(struct scheduler *s)
{
    if (s == NULL)
        return;
    pthread_mutex_lock(&s->mu);
    s->inbox_lost = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

size_t
scheduler_size(struct scheduler *s)
{
    return s == NULL ? 0 : atomic_load(&s->size);
}

void
scheduler_stop(struct scheduler *s)
{
    if (s == NULL)
        return;
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    destroy(s);
}
