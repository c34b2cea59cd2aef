/* queue.h -- a bounded, blocking, multi-producer multi-consumer queue of fixed-size items; it
 * carries due reminder keys from the scheduler, the expiry listener and the reconciler's sweep to
 * the dispatch thread. Items are copied in and out. */
#ifndef TOCSIN_QUEUE_H
#define TOCSIN_QUEUE_H

#include <stddef.h>
#include <stdint.h>

struct queue;

/* A queue of at most capacity items of item_size bytes. NULL when out of memory. */
struct queue *queue_new(size_t item_size, size_t capacity);
/* Frees q; no thread may be using it. Accepts NULL. */
void queue_free(struct queue *q);
/* Copies up to n items in without blocking; returns how many fit (the rest are the caller's to
 * drop or retry: every producer here has a database-driven fallback). 0 once closed. */
size_t queue_push(struct queue *q, const void *items, size_t n);
/* Waits up to timeout_ms (-1 = forever) for at least one item, then copies out up to max items
 * without waiting further. Returns the count; 0 on timeout or when closed and empty. */
size_t queue_pop(struct queue *q, void *out, size_t max, int64_t timeout_ms);
/* Wakes every waiter; later pushes are refused, pops drain what is left. */
void queue_close(struct queue *q);
/* Items currently queued (for metrics). */
size_t queue_depth(struct queue *q);

#endif
