/* cond.h -- condition variables whose timed waits run on CLOCK_MONOTONIC, so that a step of the
 * wall clock (NTP, an operator) neither stretches nor cuts a thread's sleep. Every thread that
 * sleeps on a condition variable with a timeout (queue, scheduler, recon, members, hub,
 * retention, the HTTP limits sweeper) sets it up and computes its deadline here. */
#ifndef TOCSIN_COND_H
#define TOCSIN_COND_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* pthread_cond_init with the monotonic clock. Cannot fail on Linux (the clock id is valid and
 * glibc's init allocates nothing); asserted. Undone with pthread_cond_destroy. */
void cond_init_monotonic(pthread_cond_t *cv);

/* The CLOCK_MONOTONIC time ms milliseconds from now (now for ms <= 0), the absolute deadline
 * that pthread_cond_timedwait takes on a cv from cond_init_monotonic. Computed once before a
 * wait loop, it keeps spurious wake-ups from extending the wait. */
struct timespec cond_deadline(int64_t ms);

#endif
