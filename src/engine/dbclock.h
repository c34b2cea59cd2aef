/* dbclock.h -- this replica's estimate of PostgreSQL's clock. The fire statement decides by the
 * database's now() (db_fire.c), so the scheduler and dispatch time their hand-outs by the same
 * clock: a replica whose own clock runs ahead neither offers reminders early (they would be
 * refused, their claims would hold them back, and they would wait for the claim to lapse and the
 * next sweep) nor fires them early. Of the last DBCLOCK_WINDOW samples the one with the shortest
 * round trip is kept. Its database time was read somewhere inside the round trip, so "now" is the
 * least the database's clock can be (as if it was read at the round trip's end): an offer is never
 * early by the database's judgement, and late by at most that round trip. The skew is the middle
 * estimate. A sample whose bounds exclude the kept one's means a clock was stepped: the window
 * starts again from it. Lock-free: the reconciler takes the samples (recon_start the first, then
 * its thread), any thread reads. */
#ifndef TOCSIN_DBCLOCK_H
#define TOCSIN_DBCLOCK_H

#include <stdint.h>

#define DBCLOCK_WINDOW 8       /* samples the best one is chosen from */
#define DBCLOCK_SAMPLE_MS 5000 /* how often the reconciler takes a sample */
#define DBCLOCK_RTT_MAX_MS 200 /* a sample with a longer round trip is ignored */

/* Takes one sample: local wall-clock ms before the query, the database's clock_timestamp() in ms,
 * local ms after it. */
void dbclock_observe(int64_t local_before_ms, int64_t db_ms, int64_t local_after_ms);
/* The least the database's time can be now (the local clock until a sample was taken: the
 * reconciler takes one as it starts, before the scheduler). */
int64_t dbclock_now_ms(void);
/* Local clock minus the database's, in ms (the clock-skew metric). */
int64_t dbclock_skew_ms(void);

#endif
