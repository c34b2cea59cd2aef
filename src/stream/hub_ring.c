/* hub_ring.c -- a tenant's ring of its HUB_RING_MAX most recent events (hub_internal.h), by seq:
 * slot seq % HUB_RING_MAX. It always holds a run of consecutive seqs that ends at the tenant's
 * last_seen (ring_n of them, perhaps none), so a stream whose cursor is within the run resumes
 * without a read, and a fan-out keeps each event once for all its streams. The hub thread writes
 * it, under h->mu; any thread holding h->mu reads it. Pure: the locking is the caller's. */
#include "hub_internal.h"

#include <stdlib.h>

#include "panic.h"

struct hub_event *
hub_ring_at(struct hub_tenant *t, int64_t seq)
{
    TOCSIN_ASSERT(t->ring_n <= HUB_RING_MAX);
    if (t->ring == NULL || seq > t->last_seen || seq <= t->last_seen - (int64_t)t->ring_n)
        return NULL;
    struct hub_event *e = &t->ring[seq % HUB_RING_MAX];
    TOCSIN_ASSERT(e->seq == seq); /* every slot of the run holds its own seq */
    return e;
}

bool
hub_ring_alloc(struct hub_tenant *t)
{
    return t->ring != NULL || (t->ring = calloc(HUB_RING_MAX, sizeof *t->ring)) != NULL;
}

void
hub_ring_put(struct hub_tenant *t, struct hub_event *e)
{
    struct hub_event *slot = &t->ring[e->seq % HUB_RING_MAX];

    hub_event_clear(slot);
    *slot = *e;
}

struct hub_event *
hub_ring_push(struct hub_tenant *t, struct hub_event *e)
{
    TOCSIN_ASSERT(t->ring != NULL && e->seq > t->last_seen);
    struct hub_event *slot = &t->ring[e->seq % HUB_RING_MAX];
    bool next = e->seq == t->last_seen + 1;

    hub_ring_put(t, e);
    t->ring_n = next && t->ring_n < HUB_RING_MAX ? t->ring_n + 1 : next ? HUB_RING_MAX : 1;
    t->last_seen = slot->seq;
    return slot;
}

void
hub_ring_clear(struct hub_tenant *t)
{
    for (size_t k = 0; t->ring != NULL && k < HUB_RING_MAX; k++)
        hub_event_clear(&t->ring[k]);
    t->ring_n = 0;
}

void
hub_ring_free(struct hub_tenant *t)
{
    hub_ring_clear(t);
    free(t->ring);
    t->ring = NULL;
}
