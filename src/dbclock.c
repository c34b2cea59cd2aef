/* dbclock.c -- the estimate of dbclock.h. Samples come from one thread (the reconciler), readers
 * from any: the samples are the writer's, the chosen offset is one atomic. */
#include "dbclock.h"

#include <stdatomic.h>

#include "timefmt.h"

static atomic_int_fast64_t offset_ms; /* database minus local, at the round trip's middle */
static atomic_int_fast64_t floor_ms;  /* database minus local, at its end: the least it can be */

/* The writer's window of samples (only the reconciler's thread touches it). */
static struct {
    int64_t offset, floor, rtt;
} window[DBCLOCK_WINDOW];
static int filled, next;

void
dbclock_observe(int64_t local_before_ms, int64_t db_ms, int64_t local_after_ms)
{
    int64_t rtt = local_after_ms - local_before_ms;

    if (rtt < 0 || rtt > DBCLOCK_RTT_MAX_MS)
        return;
    window[next].offset = db_ms - (local_before_ms + rtt / 2);
    /* 1 ms less for the truncation of both readings to whole milliseconds. */
    window[next].floor = db_ms - local_after_ms - 1;
    window[next].rtt = rtt;
    next = (next + 1) % DBCLOCK_WINDOW;
    if (filled < DBCLOCK_WINDOW)
        filled++;
    int best = 0;
    for (int i = 1; i < filled; i++)
        if (window[i].rtt < window[best].rtt)
            best = i;
    atomic_store(&offset_ms, window[best].offset);
    atomic_store(&floor_ms, window[best].floor);
}

int64_t
dbclock_now_ms(void)
{
    return timefmt_now_ms() + atomic_load(&floor_ms);
}

int64_t
dbclock_skew_ms(void)
{
    return -atomic_load(&offset_ms);
}
