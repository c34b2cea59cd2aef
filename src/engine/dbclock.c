/* dbclock.c -- the estimate of dbclock.h. Samples come from one thread (the reconciler), readers
 * from any: the samples are the writer's, the chosen offset is one atomic. */
#include "dbclock.h"

#include <stdatomic.h>

#include "timefmt.h"

static atomic_int_fast64_t offset_ms; /* database minus local, at the round trip's middle */
static atomic_int_fast64_t floor_ms;  /* database minus local, at its end: the least it can be */

/* The writer's window of samples (only the reconciler touches it: recon_start, then its thread). A
 * sample bounds the offset to [lo, hi]: the database read its clock somewhere inside the round
 * trip. */
static struct {
    int64_t offset, lo, hi, rtt;
} window[DBCLOCK_WINDOW];
static int filled, next, best;

void
dbclock_observe(int64_t local_before_ms, int64_t db_ms, int64_t local_after_ms)
{
    int64_t rtt = local_after_ms - local_before_ms;

    if (rtt < 0 || rtt > DBCLOCK_RTT_MAX_MS)
        return;
    /* 1 ms either way for the truncation of the readings to whole milliseconds. */
    int64_t lo = db_ms - local_after_ms - 1, hi = db_ms - local_before_ms + 1;
    /* Bounds that exclude the kept sample's: a clock was stepped (NTP, by hand) since. The older
     * samples describe the old offset, and the one with the shortest round trip would go on
     * deciding for up to DBCLOCK_WINDOW samples: ahead of the database after a step forward of
     * this clock (offers refused), behind it after one back (offers late). Start again here. */
    if (filled > 0 && (lo > window[best].hi || hi < window[best].lo))
        filled = next = 0;
    window[next].offset = db_ms - (local_before_ms + rtt / 2);
    window[next].lo = lo;
    window[next].hi = hi;
    window[next].rtt = rtt;
    next = (next + 1) % DBCLOCK_WINDOW;
    if (filled < DBCLOCK_WINDOW)
        filled++;
    best = 0;
    for (int i = 1; i < filled; i++)
        if (window[i].rtt < window[best].rtt)
            best = i;
    atomic_store(&offset_ms, window[best].offset);
    atomic_store(&floor_ms, window[best].lo);
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
