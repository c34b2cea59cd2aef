/* dbclock.h -- this replica's estimate of PostgreSQL's clock. The fire statement decides by the
 * database's now() (db_fire.c), so the scheduler and dispatch time their hand-outs by the same
 * clock: a replica whose own clock runs ahead neither offers reminders early (they would be
 * refused and wait for the next sweep) nor fires them early. The estimate is the database time
 * of a sample minus the local time at its middle, kept from the sample with the shortest round
 * trip of the last DBCLOCK_WINDOW samples. Lock-free; any thread. */
#ifndef TOCSIN_DBCLOCK_H
#define TOCSIN_DBCLOCK_H

#include <stdint.h>

#define DBCLOCK_WINDOW 8       /* samples the best one is chosen from */
#define DBCLOCK_SAMPLE_MS 5000 /* how often the reconciler takes a sample */
#define DBCLOCK_RTT_MAX_MS 200 /* a sample with a longer round trip is ignored */

/* Takes one sample: local wall-clock ms before the query, the database's clock_timestamp() in ms,
 * local ms after it. */
void dbclock_observe(int64_t local_before_ms, int64_t db_ms, int64_t local_after_ms);
/* The database's time now, by the estimate (the local clock until a sample was taken). */
int64_t dbclock_now_ms(void);
/* Local clock minus the database's, in ms (the clock-skew metric). */
int64_t dbclock_skew_ms(void);

#endif
