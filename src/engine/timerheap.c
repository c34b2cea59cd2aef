/* timerheap.c -- binary min-heap on (fire_at, id) plus an open-addressing hash set with
 * backward-shift deletion (no tombstones, so probe lengths stay short however long the process
 * runs). The set is sized at least four times the capacity, so its load stays <= 1/2 with the heap
 * and the retired ring both full. */
#include "timerheap.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "panic.h"

static bool
before(const struct reminder_key *a, const struct reminder_key *b)
{
    if (a->fire_at_ms != b->fire_at_ms)
        return a->fire_at_ms < b->fire_at_ms;
    return a->reminder_id < b->reminder_id;
}

static bool
same(const struct reminder_key *a, const struct reminder_key *b)
{
    return a->reminder_id == b->reminder_id && a->fire_at_ms == b->fire_at_ms;
}

/* splitmix64 finaliser over both fields: ids and times are sequential, the mask takes low bits. */
static size_t
slot_of(const struct timerheap *h, const struct reminder_key *k)
{
    uint64_t x = (uint64_t)k->reminder_id * 0x9e3779b97f4a7c15ULL ^ (uint64_t)k->fire_at_ms;

    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return (size_t)x & h->set_mask;
}

/* The slot holding k, or the empty slot where it would go. */
static size_t
find(const struct timerheap *h, const struct reminder_key *k)
{
    size_t i = slot_of(h, k);

    while (h->set[i].reminder_id != 0 && !same(&h->set[i], k))
        i = (i + 1) & h->set_mask;
    return i;
}

/* Removes k from the set, shifting later members of the probe run back into the hole. */
static void
set_remove(struct timerheap *h, const struct reminder_key *k)
{
    size_t hole = find(h, k), i = hole;

    TOCSIN_ASSERT(h->set[hole].reminder_id != 0); /* a retired key is in the set until forgotten */
    for (;;) {
        i = (i + 1) & h->set_mask;
        if (h->set[i].reminder_id == 0)
            break;
        size_t home = slot_of(h, &h->set[i]);
        /* Move set[i] into the hole unless its home lies cyclically in (hole, i]. */
        bool stays = hole <= i ? (hole < home && home <= i) : (hole < home || home <= i);
        if (!stays) {
            h->set[hole] = h->set[i];
            hole = i;
        }
    }
    h->set[hole].reminder_id = 0;
}

int
timerheap_init(struct timerheap *h, size_t capacity)
{
    size_t size = 1;

    memset(h, 0, sizeof *h);
    if (capacity == 0 || capacity > TIMERHEAP_CAPACITY_MAX)
        return -1;
    while (size < 4 * capacity)
        size <<= 1;
    h->capacity = capacity;
    h->set_mask = size - 1;
    h->heap = calloc(capacity, sizeof *h->heap);
    h->ring = calloc(capacity, sizeof *h->ring);
    h->set = calloc(size, sizeof *h->set);
    return h->heap && h->ring && h->set ? 0 : -1;
}

void
timerheap_fini(struct timerheap *h)
{
    free(h->heap);
    free(h->ring);
    free(h->set);
    memset(h, 0, sizeof *h);
}

static void
sift_up(struct timerheap *h, size_t i)
{
    struct reminder_key k = h->heap[i];

    while (i > 0 && before(&k, &h->heap[(i - 1) / 2])) {
        h->heap[i] = h->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->heap[i] = k;
}

static void
sift_down(struct timerheap *h, size_t i)
{
    struct reminder_key k = h->heap[i];

    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && before(&h->heap[c + 1], &h->heap[c]))
            c++;
        if (!before(&h->heap[c], &k))
            break;
        h->heap[i] = h->heap[c];
        i = c;
    }
    h->heap[i] = k;
}

int
timerheap_add(struct timerheap *h, const struct reminder_key *k)
{
    if (k->reminder_id <= 0)
        return -1;
    size_t s = find(h, k);
    if (h->set[s].reminder_id != 0)
        return 0;
    if (h->n == h->capacity)
        return -1;
    h->set[s] = *k;
    h->heap[h->n] = *k;
    sift_up(h, h->n++);
    return 1;
}

const struct reminder_key *
timerheap_peek(const struct timerheap *h)
{
    return h->n > 0 ? &h->heap[0] : NULL;
}

static void
forget_oldest(struct timerheap *h)
{
    set_remove(h, &h->ring[h->ring_head].k);
    h->ring_head = (h->ring_head + 1) % h->capacity;
    h->ring_n--;
}

int
timerheap_pop(struct timerheap *h, int64_t now_ms, struct reminder_key *out)
{
    if (h->n == 0)
        return -1;
    *out = h->heap[0];
    h->heap[0] = h->heap[--h->n];
    if (h->n > 0)
        sift_down(h, 0);
    if (h->ring_n == h->capacity)
        forget_oldest(h);
    struct timerheap_retired *r = &h->ring[(h->ring_head + h->ring_n) % h->capacity];
    r->k = *out;
    r->at_ms = now_ms;
    h->ring_n++;
    return 0;
}

size_t
timerheap_forget(struct timerheap *h, int64_t cutoff_ms)
{
    size_t n = 0;

    while (h->ring_n > 0 && h->ring[h->ring_head].at_ms < cutoff_ms) {
        forget_oldest(h);
        n++;
    }
    return n;
}

size_t
timerheap_size(const struct timerheap *h)
{
    return h->n;
}
