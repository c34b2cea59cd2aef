/* test_ratelimit.c -- the token buckets of ratelimit.h on a clock of our own: a burst and no
 * more, the refill at the rate and the wait it announces, keys apart, the bounds of
 * ratelimit_new, the table's eviction (the key closest to full goes, a key in debt stays), and
 * exactly a burst taken from one key by threads at once. */
#include <pthread.h>
#include <stdlib.h>

#include "check.h"
#include "ratelimit.h"

#define NS_PER_S 1000000000LL
#define THREADS 8
#define TAKES_PER_THREAD 20000
#define EVICT_KEYS (16 * RATELIMIT_ENTRIES)

static void
check_burst_and_refill(void)
{
    struct ratelimit *rl = ratelimit_new(10, 5); /* a token every 100 ms, 5 deep */
    int64_t t = 1000 * NS_PER_S, interval = NS_PER_S / 10;

    for (int i = 0; i < 5; i++)
        CHECK(ratelimit_take(rl, 42, t) == 0, "take %d of the burst", i);
    int64_t wait = ratelimit_take(rl, 42, t);
    CHECK(wait == interval, "the sixth waits one interval: %lld", (long long)wait);
    CHECK(ratelimit_take(rl, 42, t + interval - 1) == 1, "1 ns before it: still 1 ns to wait");
    CHECK(ratelimit_take(rl, 42, t + interval) == 0, "one token back after one interval");
    CHECK(ratelimit_take(rl, 42, t + interval) == interval, "and only one");
    CHECK(ratelimit_take(rl, 7, t) == 0, "another key has its own bucket");
    /* Idle long enough, the bucket is full again, never fuller. */
    int64_t later = t + 60 * NS_PER_S;
    for (int i = 0; i < 5; i++)
        CHECK(ratelimit_take(rl, 42, later) == 0, "after a minute, take %d", i);
    CHECK(ratelimit_take(rl, 42, later) > 0, "a full bucket holds the burst, no more");
    /* A clock read by another thread a little earlier: no token is made up. */
    CHECK(ratelimit_take(rl, 42, later - interval) > 0, "an earlier now after a refusal");
    ratelimit_free(rl);
}

static void
check_bounds(void)
{
    struct ratelimit *rl;

    CHECK(ratelimit_new(0, 1) == NULL, "rate 0");
    CHECK(ratelimit_new(1, 0) == NULL, "burst 0");
    CHECK(ratelimit_new(RATELIMIT_RATE_MAX + 1, 1) == NULL, "rate past its bound");
    CHECK(ratelimit_new(1, RATELIMIT_BURST_MAX + 1) == NULL, "burst past its bound");
    rl = ratelimit_new(RATELIMIT_RATE_MAX, RATELIMIT_BURST_MAX);
    CHECK(rl != NULL, "both at their bounds");
    CHECK(ratelimit_take(rl, 1, 0) == 0, "now 0 is a time like any");
    ratelimit_free(rl);
    ratelimit_free(NULL);
}

/* Keys 1..EVICT_KEYS each take their one token, a nanosecond apart: every set sees many more
 * keys in debt than it has slots. The first key was closest to full when pushed out, so it
 * starts again from a full bucket; the last keys are still held, in debt. */
static void
check_eviction(void)
{
    struct ratelimit *rl = ratelimit_new(1, 1);
    int64_t t = NS_PER_S;

    for (int64_t k = 1; k <= EVICT_KEYS; k++)
        CHECK(ratelimit_take(rl, k, t + k) == 0, "key %lld's first take", (long long)k);
    CHECK(ratelimit_take(rl, 1, t + EVICT_KEYS + 1) == 0, "the oldest key was pushed out");
    int held = 0;
    for (int64_t k = EVICT_KEYS - RATELIMIT_WAYS + 1; k <= EVICT_KEYS; k++)
        held += ratelimit_take(rl, k, t + EVICT_KEYS + 1) > 0;
    CHECK(held == RATELIMIT_WAYS, "the %d newest keys are kept in debt: %d", RATELIMIT_WAYS, held);
    ratelimit_free(rl);
}

struct racer {
    struct ratelimit *rl;
    int taken;
};

static void *
race(void *arg)
{
    struct racer *r = arg;

    for (int i = 0; i < TAKES_PER_THREAD; i++)
        r->taken += ratelimit_take(r->rl, 99, NS_PER_S) == 0;
    return NULL;
}

static void
check_threads(void)
{
    struct ratelimit *rl = ratelimit_new(1, 1000);
    struct racer r[THREADS];
    pthread_t th[THREADS];
    int total = 0;

    for (int i = 0; i < THREADS; i++) {
        r[i] = (struct racer){rl, 0};
        CHECK(pthread_create(&th[i], NULL, race, &r[i]) == 0, "thread %d", i);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        total += r[i].taken;
    }
    CHECK(total == 1000, "threads at once took exactly the burst: %d", total);
    ratelimit_free(rl);
}

int
main(void)
{
    check_burst_and_refill();
    check_bounds();
    check_eviction();
    check_threads();
    return check_summary("test_ratelimit");
}
