/* test_hub_ring.c -- a tenant's ring of recent events: pushed heads make a run of consecutive
 * seqs that ends at last_seen (from an empty ring, from a head read with no ring, across a gap,
 * which starts the run again, and past HUB_RING_MAX, which drops the oldest); events outside the
 * run are not found; a backfill (older events put below the run) extends it down; a clear
 * empties it and frees what the slots held (under ASan a leak fails the test). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hub_internal.h"

#define PUSH_MAX 8

/* An event as a read leaves it: the slots own their frames. */
static struct hub_event
event(int64_t seq)
{
    struct hub_event e = {.seq = seq};

    e.frame = strdup("id: 1\n\n");
    e.frame_len = strlen(e.frame);
    return e;
}

static void
push_range(struct hub_tenant *t, int64_t from, int64_t to)
{
    for (int64_t seq = from; seq <= to; seq++) {
        struct hub_event e = event(seq);
        struct hub_event *slot = hub_ring_push(t, &e);
        CHECK(slot == hub_ring_at(t, seq), "seq %lld: push returns its slot", (long long)seq);
    }
}

/* Every seq of the run is found, holding itself; the ones just outside are not. */
static void
check_run(struct hub_tenant *t, size_t n, int64_t last, size_t i)
{
    CHECK(t->ring_n == n && t->last_seen == last, "case %zu: ring_n %zu, last_seen %lld", i,
          t->ring_n, (long long)t->last_seen);
    for (int64_t seq = last - (int64_t)n + 1; seq <= last; seq++) {
        const struct hub_event *e = hub_ring_at(t, seq);
        CHECK(e != NULL && e->seq == seq && e->frame != NULL, "case %zu: seq %lld held", i,
              (long long)seq);
    }
    CHECK(hub_ring_at(t, last - (int64_t)n) == NULL, "case %zu: below the run", i);
    CHECK(hub_ring_at(t, last + 1) == NULL, "case %zu: past the head", i);
}

static void
test_push(void)
{
    static const struct {
        int64_t head; /* last_seen before the first push (a head read, ring empty) */
        int64_t push[PUSH_MAX];
        size_t n_push;
        int64_t range_from, range_to; /* then these, one by one (from > to: none) */
        size_t want_n;
        int64_t want_last;
    } cases[] = {
        {0, {1, 2, 3}, 3, 1, 0, 3, 3},
        {100, {101}, 1, 1, 0, 1, 101},
        {100, {102}, 1, 1, 0, 1, 102}, /* a gap after the head: the run starts again */
        {0, {1, 2, 3, 5, 6}, 5, 1, 0, 2, 6},
        {0, {1, 2, 3, 9}, 4, 1, 0, 1, 9},
        {0, {0}, 0, 1, HUB_RING_MAX, HUB_RING_MAX, HUB_RING_MAX},         /* exactly full */
        {0, {0}, 0, 1, HUB_RING_MAX + 5, HUB_RING_MAX, HUB_RING_MAX + 5}, /* oldest dropped */
        {0, {0}, 0, 1, 3 * HUB_RING_MAX + 1, HUB_RING_MAX, 3 * HUB_RING_MAX + 1},
        {HUB_RING_MAX - 2, {0}, 0, HUB_RING_MAX - 1, HUB_RING_MAX + 2, 4, HUB_RING_MAX + 2},
    };

    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct hub_tenant t = {.last_seen = cases[i].head};

        CHECK(hub_ring_at(&t, cases[i].head) == NULL, "case %zu: no ring yet", i);
        CHECK(hub_ring_alloc(&t) && hub_ring_alloc(&t), "case %zu: alloc (twice)", i);
        for (size_t k = 0; k < cases[i].n_push; k++) {
            struct hub_event e = event(cases[i].push[k]);
            hub_ring_push(&t, &e);
        }
        push_range(&t, cases[i].range_from, cases[i].range_to);
        check_run(&t, cases[i].want_n, cases[i].want_last, i);
        hub_ring_clear(&t);
        CHECK(t.ring_n == 0 && t.ring != NULL, "case %zu: cleared, storage kept", i);
        CHECK(hub_ring_at(&t, cases[i].want_last) == NULL, "case %zu: nothing after clear", i);
        hub_ring_free(&t);
        CHECK(t.ring == NULL, "case %zu: freed", i);
    }
}

/* What backfill_ring does with the events just older than the run: puts them below it, then
 * counts them in. The slots it reuses may hold events from before a gap (a run that started
 * again); a put frees those. */
static void
test_backfill(void)
{
    static const struct {
        int64_t stale_to, head; /* 1..stale_to pushed, then head alone (a gap) */
        size_t fill;            /* then this many put below head */
    } cases[] = {
        {8, 11, 2},
        {8, HUB_RING_MAX + 5, 4}, /* slots 1..4 reused: their old events freed */
        {HUB_RING_MAX, 2 * HUB_RING_MAX, HUB_RING_MAX - 1}, /* every slot reused: full again */
        {0, 5, 0},
    };

    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct hub_tenant t = {0};
        int64_t head = cases[i].head;

        CHECK(hub_ring_alloc(&t), "case %zu: alloc", i);
        push_range(&t, 1, cases[i].stale_to);
        push_range(&t, head, head);
        CHECK(t.ring_n == 1, "case %zu: the run starts again at the gap", i);
        for (int64_t seq = head - (int64_t)cases[i].fill; seq < head; seq++) {
            struct hub_event e = event(seq);
            hub_ring_put(&t, &e);
        }
        t.ring_n += cases[i].fill;
        check_run(&t, 1 + cases[i].fill, head, i);
        hub_ring_free(&t);
    }
}

int
main(void)
{
    test_push();
    test_backfill();
    return check_summary("test_hub_ring");
}
