/* db_sched.h -- what the precision scheduler (scheduler.c) and the reconciler's overdue sweep
 * (recon.c) read: pending occurrences of live meetings in (fire_at, id) order, keyset paged.
 * Implemented in db_sched.c. */
#ifndef TOCSIN_DB_SCHED_H
#define TOCSIN_DB_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "meeting.h"

#define DB_DUE_BATCH_MAX 5000 /* rows per page: a burst of 50,000 due together is 10 pages */

/* Pending occurrences of live meetings with fire_at <= until_ms, strictly after the keyset position
 * (after_fire_at_ms, after_id) in (fire_at, id) order; pass INT64_MIN, 0 to start from the
 * earliest (overdue ones included). At most max (clamped to DB_DUE_BATCH_MAX) rows into out;
 * ONE_RESULT whenever the query ran, *n_out == 0 for an empty page. */
enum db_status db_reminder_due_batch(struct db *db, int64_t after_fire_at_ms, int64_t after_id,
                                     int64_t until_ms, struct reminder_key *out, size_t max,
                                     size_t *n_out);

#endif
