/* scheduler.h -- the precision scheduler: one thread per replica that keeps the reminder
 * occurrences due within the next window in a min-heap (timerheap.c), loaded from PostgreSQL, and
 * hands each to dispatch one millisecond after it is due. Redis's own expiry is late by seconds to
 * minutes once many keys carry a TTL; this is what makes lateness independent of how many reminders
 * are pending. Each replica reads the shards it owns (members.h), plus what its own API wrote;
 * dispatch's claim settles a shard that two replicas held for a moment. Owns its own database
 * connection. */
#ifndef TOCSIN_SCHEDULER_H
#define TOCSIN_SCHEDULER_H

#include <stddef.h>
#include <stdint.h>

#include "dispatch.h"
#include "meeting.h"

#define SCHED_HEAP_MAX 131072   /* occurrences held at once (13 MiB); beyond, they wait a poll */
#define SCHED_INBOX_MAX 4096    /* occurrences noted by scheduler_note between two wake-ups */
#define SCHED_FULL_READ_MS 5000 /* period of a full re-read of the window (others' changes) */
#define SCHED_FORGET_MS 30000   /* a handed-out occurrence is not handed out again for this long */
#define SCHED_SLACK_MS 1        /* handed out this long after its due millisecond, never before */
#define SCHED_HANDOUT_MAX 65536 /* occurrences handed out in one rotation (1 MiB) */

struct scheduler_opts {
    const char *database_url;
    int64_t window_ms;         /* load what is due within now + window_ms */
    int64_t poll_ms;           /* how often the window is extended from the database */
    struct dispatch *dispatch; /* borrowed; must outlive the scheduler */
    struct members *members;   /* which shards to read; NULL: all (borrowed, outlives it) */
};

struct scheduler;

/* Starts the thread; the database is connected lazily (down now is not an error). opts strings
 * are copied. NULL when out of memory or the thread cannot start. */
struct scheduler *scheduler_start(const struct scheduler_opts *opts);
/* Tells the scheduler about occurrences just written (created or moved) so that one due inside
 * the window already loaded is not left for the next full read. Thread-safe, never blocks for
 * long; occurrences beyond the window are ignored (a poll loads them). Accepts a NULL s. */
void scheduler_note(struct scheduler *s, const struct reminder_key *k, size_t n);
/* The owned shards changed: the window is read again in full (newly owned shards included, their
 * overdue occurrences too). Thread-safe. Accepts NULL. */
void scheduler_reshard(struct scheduler *s);
/* Occurrences currently held (for /metrics). Thread-safe. */
size_t scheduler_size(struct scheduler *s);
/* Stops the thread and frees s. Held occurrences stay pending in PostgreSQL. Accepts NULL. */
void scheduler_stop(struct scheduler *s);

#endif
