/* ratelimit.c -- the token buckets of ratelimit.h. A bucket is its "theoretical arrival time"
 * (GCRA): the instant it will be full again. A take moves it one interval (1 s / rate) later,
 * from now if it was full; it is refused when that would put it more than burst intervals ahead
 * of now. A zeroed slot is a full bucket (its time is long past), so the table starts empty
 * without a flag per slot. */
#include "ratelimit.h"

#include <pthread.h>
#include <stdlib.h>

#include "panic.h"

#define NS_PER_S 1000000000LL
#define SETS (RATELIMIT_ENTRIES / RATELIMIT_WAYS)
_Static_assert((SETS & (SETS - 1)) == 0, "a power of two of sets: a mask picks one");

struct slot {
    int64_t key;
    int64_t full_at_ns; /* when the bucket is full again; at or before now: it is full */
};

struct set {
    pthread_mutex_t lock; /* guards s */
    struct slot s[RATELIMIT_WAYS];
};

struct ratelimit {
    int64_t interval_ns; /* one token's worth of time */
    int64_t depth_ns;    /* burst tokens' worth: how far ahead of now a bucket may run */
    struct set sets[SETS];
};

struct ratelimit *
ratelimit_new(int64_t rate_per_s, int64_t burst)
{
    struct ratelimit *rl;

    if (rate_per_s < 1 || rate_per_s > RATELIMIT_RATE_MAX || burst < 1 ||
        burst > RATELIMIT_BURST_MAX || (rl = calloc(1, sizeof *rl)) == NULL)
        return NULL;
    rl->interval_ns = NS_PER_S / rate_per_s;
    rl->depth_ns = burst * rl->interval_ns;
    for (size_t i = 0; i < SETS; i++)
        pthread_mutex_init(&rl->sets[i].lock, NULL);
    return rl;
}

void
ratelimit_free(struct ratelimit *rl)
{
    if (rl == NULL)
        return;
    for (size_t i = 0; i < SETS; i++)
        pthread_mutex_destroy(&rl->sets[i].lock);
    free(rl);
}

/* splitmix64's finalizer: consecutive keys (database ids) spread over all sets. */
static uint64_t
mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* key's slot in set: its own, else one whose bucket is full (the same as none), else the one
 * closest to full, which its key loses. */
static struct slot *
slot_of(struct set *set, int64_t key, int64_t now_ns)
{
    struct slot *pick = &set->s[0];

    for (size_t i = 0; i < RATELIMIT_WAYS; i++) {
        struct slot *s = &set->s[i];
        if (s->key == key)
            return s;
        if (s->full_at_ns < pick->full_at_ns)
            pick = s;
    }
    if (pick->full_at_ns > now_ns)
        pick->full_at_ns = now_ns; /* a bucket taken over starts full */
    pick->key = key;
    return pick;
}

int64_t
ratelimit_take(struct ratelimit *rl, int64_t key, int64_t now_ns)
{
    struct set *set = &rl->sets[mix((uint64_t)key) & (SETS - 1)];
    int64_t wait_ns = 0;

    TOCSIN_ASSERT(now_ns >= 0);
    pthread_mutex_lock(&set->lock);
    struct slot *s = slot_of(set, key, now_ns);
    int64_t next = (s->full_at_ns > now_ns ? s->full_at_ns : now_ns) + rl->interval_ns;
    if (next - now_ns > rl->depth_ns)
        wait_ns = next - now_ns - rl->depth_ns;
    else
        s->full_at_ns = next;
    pthread_mutex_unlock(&set->lock);
    return wait_ns;
}
