/* wakeq.c -- the bounded resume queue of wakeq.h. */
#include "wakeq.h"

#include <string.h>

#include "panic.h"

void
wakeq_init(struct wakeq *q, size_t max, int64_t stall_ms)
{
    memset(q, 0, sizeof *q);
    pthread_mutex_init(&q->mu, NULL);
    q->max = max > 0 ? max : 1;
    q->stall_ms = stall_ms;
}

void
wakeq_fini(struct wakeq *q)
{
    pthread_mutex_destroy(&q->mu);
}

/* Gives n a slot and resumes it. q->mu held. */
static void
take_slot(struct wakeq *q, struct wakeq_node *n)
{
    TOCSIN_ASSERT(q->waking < q->max); /* the callers look first */
    q->waking++;
    n->waking = true;
    n->gen = q->gen;
    n->resume(n->conn);
}

static void
unlink_node(struct wakeq *q, struct wakeq_node *n)
{
    TOCSIN_ASSERT(n->queued && q->queued > 0);
    if (n->prev != NULL)
        n->prev->next = n->next;
    else
        q->head = n->next;
    if (n->next != NULL)
        n->next->prev = n->prev;
    else
        q->tail = n->prev;
    n->prev = n->next = NULL;
    n->queued = false;
    q->queued--;
}

/* Resumes the oldest waiting connections while slots are free. q->mu held. */
static void
fill_slots(struct wakeq *q)
{
    while (q->waking < q->max && q->head != NULL) {
        struct wakeq_node *n = q->head;
        unlink_node(q, n);
        take_slot(q, n);
    }
}

/* Gives n's slot back, if it still counts. q->mu held. */
static void
give_back(struct wakeq *q, struct wakeq_node *n, int64_t now_ms)
{
    if (!n->waking)
        return;
    n->waking = false;
    atomic_store_explicit(&n->held, false, memory_order_release);
    if (n->gen == q->gen) {
        q->waking--;
        q->progress_ms = now_ms;
    }
}

void
wakeq_wake(struct wakeq *q, struct wakeq_node *n, int64_t now_ms)
{
    pthread_mutex_lock(&q->mu);
    /* Linked twice, the list would loop: a broken promise of the caller's stops here. */
    TOCSIN_ASSERT(!n->queued && !n->waking);
    /* Before the resume: the reader it leads to must see it. */
    atomic_store_explicit(&n->held, true, memory_order_release);
    if (q->waking < q->max && q->head == NULL) {
        take_slot(q, n);
    } else {
        if (q->head == NULL)
            q->progress_ms = now_ms; /* a stall counts from here, not from an old give-back */
        n->queued = true;
        n->next = NULL;
        n->prev = q->tail;
        if (q->tail != NULL)
            q->tail->next = n;
        else
            q->head = n;
        q->tail = n;
        q->queued++;
    }
    pthread_mutex_unlock(&q->mu);
}

/* Refills once half the slots are back: the resumes go out in batches, and libmicrohttpd walks a
 * thread's suspended connections once per batch that reaches it, not once per resume. */
static void
refill(struct wakeq *q)
{
    if (q->waking <= q->max / 2)
        fill_slots(q);
}

void
wakeq_served(struct wakeq *q, struct wakeq_node *n, int64_t now_ms)
{
    /* Not woken: nothing to give back. A node is woken only while its connection is suspended,
     * so not during this read, and the resume that ran this reader came after held was set. */
    if (!atomic_load_explicit(&n->held, memory_order_acquire))
        return;
    pthread_mutex_lock(&q->mu);
    give_back(q, n, now_ms);
    refill(q);
    pthread_mutex_unlock(&q->mu);
}

void
wakeq_forget(struct wakeq *q, struct wakeq_node *n, int64_t now_ms)
{
    pthread_mutex_lock(&q->mu);
    if (n->queued)
        unlink_node(q, n);
    give_back(q, n, now_ms);
    atomic_store_explicit(&n->held, false, memory_order_release);
    refill(q);
    pthread_mutex_unlock(&q->mu);
}

size_t
wakeq_tick(struct wakeq *q, int64_t now_ms)
{
    size_t forgot = 0;

    pthread_mutex_lock(&q->mu);
    if (q->head != NULL && now_ms - q->progress_ms >= q->stall_ms) {
        forgot = q->waking;
        q->gen++; /* the slots held no longer count; their give-backs are ignored */
        q->waking = 0;
        q->progress_ms = now_ms;
        fill_slots(q);
    }
    pthread_mutex_unlock(&q->mu);
    return forgot;
}

void
wakeq_counts(struct wakeq *q, size_t *waiting, size_t *held)
{
    pthread_mutex_lock(&q->mu);
    *waiting = q->queued;
    *held = q->waking;
    pthread_mutex_unlock(&q->mu);
}
