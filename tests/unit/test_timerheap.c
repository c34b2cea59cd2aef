/* test_timerheap.c -- the scheduler's heap and dedupe set: order by (fire_at, id), duplicates
 * refused while queued or retired, the capacity bound, forgetting, and a randomized run checked
 * against sorting. */
#include "check.h"
#include "timerheap.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RANDOM_N 20000

static const struct {
    int64_t id, at;
    int want; /* timerheap_add result on a heap of capacity 4 */
} adds[] = {
    {5, 300, 1}, {3, 100, 1},  {3, 100, 0}, /* duplicate while queued */
    {4, 100, 1},                            /* same time, larger id: after (3,100) */
    {3, 200, 1},                            /* same id, other time: another occurrence */
    {9, 50, -1},                            /* full */
    {0, 10, -1}, {-1, 10, -1},              /* not a database id */
};

static void
test_table(void)
{
    static const int64_t order[][2] = {{3, 100}, {4, 100}, {3, 200}, {5, 300}};
    struct timerheap h;
    struct reminder_key k;

    CHECK(timerheap_init(&h, 4) == 0, "init");
    for (size_t i = 0; i < sizeof adds / sizeof adds[0]; i++) {
        struct reminder_key a = {adds[i].id, adds[i].at};
        int got = timerheap_add(&h, &a);
        CHECK(got == adds[i].want, "add #%zu: got %d want %d", i, got, adds[i].want);
    }
    CHECK(timerheap_size(&h) == 4, "size %zu", timerheap_size(&h));
    for (size_t i = 0; i < 4; i++) {
        CHECK(timerheap_peek(&h) != NULL && timerheap_peek(&h)->reminder_id == order[i][0],
              "peek #%zu", i);
        CHECK(timerheap_pop(&h, 1000 + (int64_t)i, &k) == 0 && k.reminder_id == order[i][0] &&
                  k.fire_at_ms == order[i][1],
              "pop #%zu: got (%" PRId64 ",%" PRId64 ")", i, k.reminder_id, k.fire_at_ms);
    }
    CHECK(timerheap_pop(&h, 0, &k) == -1 && timerheap_peek(&h) == NULL, "empty pop");
    k = (struct reminder_key){3, 100};
    CHECK(timerheap_add(&h, &k) == 0, "retired occurrence accepted again");
    CHECK(timerheap_forget(&h, 1002) == 2, "forget the two retired before 1002");
    CHECK(timerheap_add(&h, &k) == 1, "forgotten occurrence refused");
    k = (struct reminder_key){3, 200};
    CHECK(timerheap_add(&h, &k) == 0, "(3,200) retired at 1002 forgotten too early");
    timerheap_fini(&h);
    CHECK(timerheap_init(&h, 0) == -1, "capacity 0 accepted");
    timerheap_fini(&h);
    CHECK(timerheap_init(&h, (size_t)TIMERHEAP_CAPACITY_MAX + 1) == -1, "capacity max+1 accepted");
    timerheap_fini(&h);
}

/* A full retired ring forgets its oldest entry to make room. */
static void
test_ring_full(void)
{
    struct timerheap h;
    struct reminder_key k;

    CHECK(timerheap_init(&h, 2) == 0, "init");
    for (int64_t id = 1; id <= 3; id++) {
        k = (struct reminder_key){id, id};
        CHECK(timerheap_add(&h, &k) == 1, "add %" PRId64, id);
        CHECK(timerheap_pop(&h, id, &k) == 0, "pop %" PRId64, id);
    }
    k = (struct reminder_key){1, 1};
    CHECK(timerheap_add(&h, &k) == 1, "oldest retired not forgotten by a full ring");
    k = (struct reminder_key){3, 3};
    CHECK(timerheap_add(&h, &k) == 0, "newest retired forgotten");
    timerheap_fini(&h);
}

static int
cmp(const void *a, const void *b)
{
    const struct reminder_key *x = a, *y = b;

    if (x->fire_at_ms != y->fire_at_ms)
        return x->fire_at_ms < y->fire_at_ms ? -1 : 1;
    return (x->reminder_id > y->reminder_id) - (x->reminder_id < y->reminder_id);
}

/* Random keys with many duplicates: pops come out sorted and unique; forgetting everything empties
 * the set (each key is accepted again). */
static void
test_random(void)
{
    static struct reminder_key in[RANDOM_N], want[RANDOM_N];
    struct timerheap h;
    struct reminder_key k;
    size_t n_want = 0, n_added = 0;

    srand(7);
    CHECK(timerheap_init(&h, RANDOM_N) == 0, "init");
    for (size_t i = 0; i < RANDOM_N; i++) {
        in[i] = (struct reminder_key){1 + rand() % 3000, rand() % 1000};
        n_added += timerheap_add(&h, &in[i]) == 1;
    }
    memcpy(want, in, sizeof in);
    qsort(want, RANDOM_N, sizeof want[0], cmp);
    for (size_t i = 0; i < RANDOM_N; i++)
        if (i == 0 || cmp(&want[i], &want[n_want - 1]) != 0)
            want[n_want++] = want[i];
    CHECK(n_added == n_want, "added %zu unique %zu", n_added, n_want);
    for (size_t i = 0; i < n_want; i++)
        if (timerheap_pop(&h, 1, &k) != 0 || cmp(&k, &want[i]) != 0) {
            CHECK(0, "pop #%zu out of order", i);
            break;
        }
    CHECK(timerheap_forget(&h, 2) == n_want, "forget all");
    for (size_t i = 0; i < n_want; i++)
        if (timerheap_add(&h, &want[i]) != 1) {
            CHECK(0, "re-add #%zu refused after forget", i);
            break;
        }
    timerheap_fini(&h);
}

int
main(void)
{
    test_table();
    test_ring_full();
    test_random();
    return check_summary("test_timerheap");
}
