/* ratelimit.h -- token buckets by 64-bit key (tenants, in http_rate.c), in memory, bounded and
 * thread-safe. Each bucket refills at rate_per_s tokens a second up to burst tokens; a take
 * costs one. A bucket is kept as one time (GCRA, the generic cell rate algorithm: the instant the
 * bucket will be full again), so a full bucket and no bucket are the same thing.
 *
 * The table is bounded: RATELIMIT_ENTRIES slots in sets of RATELIMIT_WAYS, a key always in the set
 * its hash names. A new key takes a slot whose bucket is full again; when none is, it takes the
 * one closest to full, whose key thereby starts again from a full bucket later. So the limits
 * hold exactly while at most RATELIMIT_WAYS keys of one set are below full at once (keys that
 * took a token within the last burst / rate seconds), and past that the least indebted of them
 * get up to one extra burst each time they are pushed out: the table never grows, and the number
 * of keys is not bounded by us. */
#ifndef TOCSIN_RATELIMIT_H
#define TOCSIN_RATELIMIT_H

#include <stdint.h>

#define RATELIMIT_WAYS 8       /* slots of one set, searched in order */
#define RATELIMIT_ENTRIES 8192 /* slots in all: about 24 bytes each and a lock per set */
#define RATELIMIT_RATE_MAX 1000000
#define RATELIMIT_BURST_MAX 1000000
_Static_assert(RATELIMIT_ENTRIES % RATELIMIT_WAYS == 0, "whole sets");

struct ratelimit;

/* A table of buckets refilling at rate_per_s (1..RATELIMIT_RATE_MAX) up to burst
 * (1..RATELIMIT_BURST_MAX) tokens. NULL when out of memory or a value is out of range. Free with
 * ratelimit_free. */
struct ratelimit *ratelimit_new(int64_t rate_per_s, int64_t burst);
void ratelimit_free(struct ratelimit *rl);

/* Takes a token of key's bucket at now_ns (a monotonic clock; calls may come out of order, as
 * from several threads). Returns 0 when there was one, else the nanoseconds until there will be
 * one (> 0): nothing is taken then. Thread-safe; a lock per set, held for a few comparisons. */
int64_t ratelimit_take(struct ratelimit *rl, int64_t key, int64_t now_ns);

#endif
