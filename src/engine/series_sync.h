/* series_sync.h -- what keeps a series' occurrence rows in step with the series: the API's write
 * (a series created or changed, one occurrence overridden) and the reconciler's extension of the
 * window as time passes. Both compute rows with series.h and write them with db_series.h; both
 * are idempotent (rows are unique per occurrence and reminder), so replicas may overlap.
 *
 * Which replica extends which series: the one that owns the series' shard (the meeting id's first
 * byte, members.h), as reminders are shared out; a reshard can let two replicas extend one
 * series for a moment, which the unique rows and the version check make harmless. No lock is
 * held across the expansion (a batch of series is read, expanded without the database, then
 * written in one short transaction that locks the meetings and skips any a writer changed). */
#ifndef TOCSIN_SERIES_SYNC_H
#define TOCSIN_SERIES_SYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "db.h"
#include "db_series.h"
#include "meeting.h"

/* The settings a series' window follows. */
struct series_sync_params {
    int64_t window_ms;  /* TOCSIN_SERIES_WINDOW_S: occurrences materialised ahead */
    int64_t horizon_ms; /* TOCSIN_MIRROR_HORIZON_S */
    int64_t grace_ms;   /* TOCSIN_MISSED_GRACE_MS: how far back a write reaches */
};
struct series_sync_params series_sync_params_of(const struct config *cfg);

/* Original starts of overrides a series change dropped (their occurrence is gone). */
struct series_sync_dropped {
    size_t n;
    int64_t *at; /* malloc'ed; series_sync_dropped_fini */
};
void series_sync_dropped_fini(struct series_sync_dropped *d);

/* After m's meeting row was written, in the same transaction (which holds its row lock): for a
 * series, drops the overrides whose occurrence no longer exists (appended to dropped, which may
 * be NULL), writes the series row (with a COUNT rule's UNTIL equivalent, series_count_until,
 * computed from m's rule: whatever m->recurrence carries of it is not used) and brings the
 * occurrence rows from now - grace on in line;
 * for a single meeting that was a series (was_series), removes the series and its occurrences'
 * pending rows. Then re-plans its participants' own reminders (db_own.h). Keys of pending rows
 * that went away are appended to gone, new or moved ones to fresh. */
enum db_status series_sync_write(struct db *db, int64_t tenant_id, const struct meeting *m,
                                 bool was_series, const struct series_sync_params *p, int64_t now,
                                 struct db_series_keys *gone, struct db_series_keys *fresh,
                                 struct series_sync_dropped *dropped);

/* The reconciler's step: extends the windows of up to DB_SERIES_BATCH_MAX series of the shards
 * in shards (NULL: all) that are due, and stores the UNTIL equivalent of the COUNT rules among
 * them that have none yet (series stored before migration 018). *seen: series looked at (fewer than
 * DB_SERIES_BATCH_MAX: nothing more is due now); *rows: rows written. */
enum db_status series_sync_extend(struct db *db, const struct shard_set *shards,
                                  const struct series_sync_params *p, int64_t now, size_t *seen,
                                  size_t *rows);

#endif
