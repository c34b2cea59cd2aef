/* wakeq.h -- a bound on suspended connections resumed at once. libmicrohttpd serves every
 * connection resumed since its thread last looked before any request that arrived meanwhile on
 * that thread, so a fan-out that resumed 10,000 streams at once put a whole share of them ahead
 * of every API request on every HTTP thread. The hub resumes through a wakeq instead: at most
 * `max` connections hold a slot (resumed, their reader not called yet); the others wait in order
 * of their wake-up and are resumed, in batches, whenever half the slots have been given back, so
 * each HTTP thread has a few streams to serve per turn and a request waits for those, not for the
 * fan-out.
 *
 * A slot comes back when the reader runs (wakeq_served) or the connection closes (wakeq_forget).
 * A connection whose reader cannot run (its socket is full) would hold its slot for as long; when
 * connections wait and no slot came back for `stall_ms`, wakeq_tick forgets every slot held, so
 * slow readers can delay the others by that much at most, never stop them.
 *
 * Thread-safe: one lock per queue, taken after any lock of the caller's; resume is called with
 * it held and must not block or call back into the queue. */
#ifndef TOCSIN_WAKEQ_H
#define TOCSIN_WAKEQ_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One connection's place; zeroed before its first wakeq_wake, owned by the queue while queued. */
struct wakeq_node {
    void (*resume)(void *conn);
    void *conn;
    struct wakeq_node *prev, *next; /* in the queue */
    bool queued, waking;
    unsigned gen; /* the queue's generation when its slot was taken */
    /* Queued or holding a slot. Written under the queue's lock, read without it by wakeq_served:
     * a reader that was not woken (most reads: a stream's first frames, or the rest of a large
     * backlog) gives nothing back, and does not take the one lock every HTTP thread shares. */
    atomic_bool held;
};

struct wakeq {
    pthread_mutex_t mu;
    struct wakeq_node *head, *tail; /* waiting for a slot, oldest first */
    size_t max, waking, queued;
    unsigned gen;        /* bumped when a stall forgets the slots held */
    int64_t progress_ms; /* monotonic: the last slot given back, or the queue starting to fill */
    int64_t stall_ms;
};

void wakeq_init(struct wakeq *q, size_t max, int64_t stall_ms);
void wakeq_fini(struct wakeq *q);

/* Resumes n's connection now if a slot is free, else queues it. n is not queued or waking
 * already (the caller resumes a connection only once per suspension). */
void wakeq_wake(struct wakeq *q, struct wakeq_node *n, int64_t now_ms);
/* n's reader ran: its slot, if it held one, is given back (wakeq.c: refill). Takes the lock only
 * when n was woken since its last give-back. */
void wakeq_served(struct wakeq *q, struct wakeq_node *n, int64_t now_ms);
/* n's connection closes: out of the queue, and its slot given back. */
void wakeq_forget(struct wakeq *q, struct wakeq_node *n, int64_t now_ms);
/* Called now and then: after stall_ms without progress while connections wait, forgets the
 * slots held and resumes the waiting ones up to max. Returns how many slots it forgot. */
size_t wakeq_tick(struct wakeq *q, int64_t now_ms);

/* How many connections wait for a slot and how many slots are held (for tests). */
void wakeq_counts(struct wakeq *q, size_t *waiting, size_t *held);

#endif
