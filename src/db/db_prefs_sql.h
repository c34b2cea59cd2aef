/* db_prefs_sql.h -- the SQL that applies a participant's preferences (migrations/028) to the
 * push or email row a statement writes: the fire's (db_fire.c) and a snooze's (db_snooze.c). */
#ifndef TOCSIN_DB_PREFS_SQL_H
#define TOCSIN_DB_PREFS_SQL_H

/* clang-format off */
/* For a row `a` (with tenant_id and starts_at, the occurrence's start) going to participant `who`
 * on `channel` (push or email), due at `at`: d.why is `preference` when they turned the channel
 * off, `quiet_hours` when their quiet hours hold at `at` and end at or after the start; either
 * makes the row `skipped`, never sent. A row due inside quiet hours that end before the start
 * waits for that end (d.e). The quiet end is a STRICT function: a participant without preferences
 * (no row, all NULL) costs no call. */
#define PREF_JOIN(who, channel, at)                                                                \
    " LEFT JOIN participant_prefs pp ON pp.tenant_id = a.tenant_id AND pp.participant = " who      \
    " CROSS JOIN LATERAL (SELECT q.e, CASE WHEN NOT coalesce(pp." channel ", true)"               \
    "  THEN 'preference' WHEN q.e >= a.starts_at THEN 'quiet_hours' END AS why"                    \
    "  FROM (SELECT tocsin_quiet_end(pp.quiet_zone, pp.quiet_start, pp.quiet_end, " at ") AS e) q) d"
/* The outbox columns status, attempts, delivered_at, next_attempt_at, lease_owner, last_error of
 * that row: a row that waits for quiet hours to end is nobody's yet (lease_owner NULL), so
 * whichever worker's lease finds it due sends it; one sent at `at` is owner's. */
#define PREF_COLUMNS(at, owner)                                                                    \
    "CASE WHEN d.why IS NULL THEN 'pending' ELSE 'skipped' END, 0, NULL::timestamptz,"            \
    " coalesce(d.e, " at "), CASE WHEN d.why IS NULL AND d.e IS NULL THEN " owner " END, d.why"
/* clang-format on */

#endif
