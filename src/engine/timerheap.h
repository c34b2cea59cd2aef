/* timerheap.h -- the scheduler's memory: a bounded min-heap of reminder occurrences ordered by
 * (fire_at, id), with a hash set that remembers every occurrence queued or recently handed out so
 * the same (id, fire_at) is handed out once however often the database returns it. Pure: no
 * threads, no I/O; one owner (scheduler.c's thread). */
#ifndef TOCSIN_TIMERHEAP_H
#define TOCSIN_TIMERHEAP_H

#include <stddef.h>
#include <stdint.h>

#include "meeting.h"

#define TIMERHEAP_CAPACITY_MAX (1u << 22) /* occurrences queued at once */

struct timerheap_retired {
    struct reminder_key k;
    int64_t at_ms; /* when it was popped */
};

struct timerheap {
    size_t capacity;                /* heap and retired ring each hold at most this many */
    size_t n;                       /* queued in heap */
    struct reminder_key *heap;      /* capacity entries, heap[0] the earliest */
    struct timerheap_retired *ring; /* popped occurrences, oldest at ring_head */
    size_t ring_head, ring_n;
    struct reminder_key *set; /* open addressing, linear probing; reminder_id 0 = empty */
    size_t set_mask;          /* set size - 1 (a power of two >= 4 * capacity) */
};

/* Allocates for capacity (1..TIMERHEAP_CAPACITY_MAX) occurrences. 0, or -1 (bad capacity, out of
 * memory: h is then safe to pass to timerheap_fini). */
int timerheap_init(struct timerheap *h, size_t capacity);
/* Frees the arrays; accepts a zeroed or failed-init struct. */
void timerheap_fini(struct timerheap *h);

/* Queues k unless the same (id, fire_at) is queued or retired. Returns 1 when added, 0 when known,
 * -1 when the heap is full or k->reminder_id <= 0 (database ids start at 1). */
int timerheap_add(struct timerheap *h, const struct reminder_key *k);
/* The earliest queued occurrence, or NULL when empty. Valid until the next add or pop. */
const struct reminder_key *timerheap_peek(const struct timerheap *h);
/* Removes the earliest occurrence into *out and retires it at now_ms: it stays known (add returns
 * 0 for it) until timerheap_forget drops it. A full ring forgets its oldest entry early, which at
 * worst lets a duplicate through. Returns 0, or -1 when empty. */
int timerheap_pop(struct timerheap *h, int64_t now_ms, struct reminder_key *out);
/* Forgets occurrences retired before cutoff_ms, so the database can hand them out again (e.g. one
 * whose fire failed and is still pending). Returns how many it forgot. */
size_t timerheap_forget(struct timerheap *h, int64_t cutoff_ms);
/* Queued occurrences. */
size_t timerheap_size(const struct timerheap *h);

#endif
