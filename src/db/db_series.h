/* db_series.h -- the statements of recurring meetings (migrations/008): the series row, the
 * occurrence reminder rows a window of occurrences asks for and the reconciler's batches
 * (db_series.c), the overrides (db_override.c) and the reads of occurrence rows
 * (db_occurrence.c). series_sync.c decides what to write. tenant_id or a meeting id scopes every
 * statement. The reads that show occurrences as meetings are db.h's (db_meeting_get_many_for,
 * db_meeting_list_range). */
#ifndef TOCSIN_DB_SERIES_H
#define TOCSIN_DB_SERIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "meeting.h"
#include "series.h"

/* ---- the series row, its occurrence rows, the reconciler's batches (db_series.c) ---- */

/* A growable list of reminder keys (a series' write can touch hundreds). */
struct db_series_keys {
    size_t n, cap;
    struct reminder_key *k; /* malloc'ed; db_series_keys_fini */
};
void db_series_keys_fini(struct db_series_keys *l);

/* Writes the series row of m (a series): rule, dates, reminder definitions, its COUNT rule's
 * UNTIL equivalent (m->recurrence->count_until_ms when has_count_until, else none) for the
 * meeting's version m->version (reads ignore it at any other version), its last
 * original start (INT64_MAX: none, the rule never ends), and the window materialised: covered_to,
 * and extend_after, when the reconciler extends it again. */
enum db_status db_series_put(struct db *db, int64_t tenant_id, const struct meeting *m,
                             int64_t last_start, int64_t covered_to, int64_t extend_after);
/* Removes the series row and the overrides of meeting_id (it became a single meeting). */
enum db_status db_series_drop(struct db *db, const char *meeting_id);

/* Brings the occurrence rows of meeting_id in line with rows (series_rows_build's, distinct by
 * original start and minutes_before): new ones inserted pending (cancelled for a cancelled
 * occurrence), changed ones updated (a changed fire time makes a fired row pending again, as a
 * rescheduled single meeting's does). With reconcile, the rows of occurrences that start (or
 * originally started) at lo or later and are not in rows are deleted when pending or cancelled;
 * fired and missed rows stay as history. Pending keys that stopped existing are appended to gone,
 * pending rows written to fresh (either may be NULL). Use inside a transaction that holds the
 * meeting's row lock. */
enum db_status db_series_sync(struct db *db, int64_t tenant_id, const char *meeting_id,
                              const struct series_rows *rows, int64_t lo, bool reconcile,
                              struct db_series_keys *gone, struct db_series_keys *fresh);

/* The reconciler's share: up to max (<= DB_SERIES_BATCH_MAX) ids of live series of the shards in
 * shards whose extend_after has come (the database's clock), soonest first. Series rows of
 * deleted meetings met on the way are removed. */
#define DB_SERIES_BATCH_MAX 100
struct shard_set;
struct db_series_due {
    char id[MEETING_ID_LEN + 1];
    int64_t tenant_id;
    int64_t covered_to;
};
enum db_status db_series_due(struct db *db, const struct shard_set *shards, size_t max,
                             struct db_series_due *out, size_t *n);
/* The live series among ids[0..n) (n <= DB_SERIES_BATCH_MAX) as the reconciler expands them:
 * reminders are the series' definitions (ids 0), not their next firings. */
enum db_status db_series_load(struct db *db, const char *const *ids, size_t n,
                              struct db_meeting_list *out);
/* One series' extension in the reconciler's batch. */
struct db_series_extension {
    const struct meeting *m; /* the series as it was read (its version is checked) */
    int64_t tenant_id;
    struct series_rows rows;
    int64_t covered_to, extend_after;
};
/* In one transaction: locks the meetings of ext[0..n) (in id order), and for each whose version
 * is still the one read, inserts its rows (existing ones are left: a writer of that version
 * wrote the same), moves its window and stores its COUNT rule's UNTIL equivalent when m has it;
 * *written counts the rows inserted, *skipped the series a writer changed meanwhile (it
 * materialised them itself). */
enum db_status db_series_extend(struct db *db, struct db_series_extension *ext, size_t n,
                                size_t *written, size_t *skipped);

/* ---- overrides (db_override.c) ---- */

/* An override with the meeting it belongs to. */
struct db_override {
    char meeting_id[MEETING_ID_LEN + 1];
    struct series_override ov;
};
struct db_override_list {
    size_t n;
    struct db_override *o; /* malloc'ed; sorted by meeting id, then original start */
};
void db_override_list_fini(struct db_override_list *l);
/* The overrides of the meetings ids[0..n) (n <= DB_GET_MANY_MAX). */
enum db_status db_override_list(struct db *db, const char *const *ids, size_t n,
                                struct db_override_list *out);
/* Writes ov for meeting_id (replacing what it had); an override that overrides nothing is
 * deleted instead. */
enum db_status db_override_put(struct db *db, const char *meeting_id,
                               const struct series_override *ov);
/* Deletes the overrides of meeting_id at originals[0..n). */
enum db_status db_override_delete(struct db *db, const char *meeting_id, const int64_t *originals,
                                  size_t n);

/* ---- occurrence reminder rows (db_occurrence.c) ---- */

/* The reminder rows of meeting_id's occurrences at originals[0..n) (n <= DB_GET_MANY_MAX). */
struct db_occurrence_reminder {
    int64_t original_start_ms;
    struct reminder r;
};
struct db_occurrence_reminders {
    size_t n;
    struct db_occurrence_reminder *r; /* malloc'ed; sorted by original start, minutes desc */
};
void db_occurrence_reminders_fini(struct db_occurrence_reminders *l);
enum db_status db_occurrence_reminders(struct db *db, const char *meeting_id,
                                       const int64_t *originals, size_t n,
                                       struct db_occurrence_reminders *out);

#endif
