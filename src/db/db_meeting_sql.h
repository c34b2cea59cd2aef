/* db_meeting_sql.h -- the meeting columns every meeting read selects, shared by db_meeting*.c and
 * db_series.c, and the functions that read them back. Only db*.c include this. */
#ifndef TOCSIN_DB_MEETING_SQL_H
#define TOCSIN_DB_MEETING_SQL_H

#include "db_internal.h"

/* clang-format off */

/* A single meeting's reminders packed as "id,minutes_before,fire_at_ms,status,fired_at_ms,
 * channels;..." by minutes_before descending. */
#define MEETING_SINGLE_REMINDERS(m) \
    "(SELECT string_agg(concat_ws(',', r.id, r.minutes_before, " DB_MS("r.fire_at") "," \
    "                              r.status, coalesce(" DB_MS("r.fired_at") ", 0), r.channels)," \
    "                    ';' ORDER BY r.minutes_before DESC)" \
    "  FROM reminders r WHERE r.meeting_id = " m " AND r.original_start IS NULL)"

/* A series' reminders: its definitions, each with its next firing (the earliest pending row of
 * any occurrence; when none is pending, the latest occurrence's row; id 0 when it has no row). */
#define MEETING_SERIES_REMINDERS(m) \
    "(SELECT string_agg(concat_ws(',', coalesce(x.id, 0), d.mb," \
    "                             coalesce(" DB_MS("x.fire_at") ", 0), coalesce(x.status, 'pending')," \
    "                             coalesce(" DB_MS("x.fired_at") ", 0), d.ch), ';' ORDER BY d.mb DESC)" \
    "  FROM series s CROSS JOIN LATERAL unnest(s.reminder_minutes, s.reminder_channels) AS d(mb, ch)" \
    "  LEFT JOIN LATERAL (" \
    "   (SELECT q.id, q.fire_at, q.status, q.fired_at FROM reminders q" \
    "    WHERE q.meeting_id = " m " AND q.original_start IS NOT NULL AND q.minutes_before = d.mb" \
    "    AND q.status = 'pending' ORDER BY q.fire_at LIMIT 1)" \
    "   UNION ALL" \
    "   (SELECT q.id, q.fire_at, q.status, q.fired_at FROM reminders q" \
    "    WHERE q.meeting_id = " m " AND q.original_start IS NOT NULL AND q.minutes_before = d.mb" \
    "    ORDER BY q.original_start DESC LIMIT 1)" \
    "   LIMIT 1) x ON true" \
    "  WHERE s.meeting_id = " m ")"

/* A series' rule as "rrule|exdate_ms,...|rdate_ms,..." (NULL for a single meeting). */
#define MEETING_RECURRENCE(m) \
    "(SELECT concat_ws('|', s.rrule," \
    "   coalesce((SELECT string_agg(" DB_MS("x") "::text, ',' ORDER BY x) FROM unnest(s.exdates) x), '')," \
    "   coalesce((SELECT string_agg(" DB_MS("x") "::text, ',' ORDER BY x) FROM unnest(s.rdates) x), ''))" \
    "  FROM series s WHERE s.meeting_id = " m ")"

#define MEETING_REMINDERS(m) \
    "CASE WHEN EXISTS (SELECT 1 FROM series s WHERE s.meeting_id = " m ")" \
    " THEN " MEETING_SERIES_REMINDERS(m) " ELSE " MEETING_SINGLE_REMINDERS(m) " END"

/* The meeting columns shared by get and list, in enum meeting_col order. */
#define MEETING_COLUMNS \
    "m.id, m.version, " DB_MS("m.created_at") ", " DB_MS("m.updated_at") ", m.title," \
    " m.description, m.time_zone, m.location, " DB_MS("m.starts_at") ", " DB_MS("m.ends_at") "," \
    " m.participants, m.metadata, " MEETING_REMINDERS("m.id") ", m.organizer_id, " \
    MEETING_RECURRENCE("m.id")

/* clang-format on */

enum meeting_col {
    COL_ID,
    COL_VERSION,
    COL_CREATED,
    COL_UPDATED,
    COL_TITLE,
    COL_DESCRIPTION,
    COL_TIME_ZONE,
    COL_LOCATION,
    COL_STARTS,
    COL_ENDS,
    COL_PARTICIPANTS,
    COL_METADATA,
    COL_REMINDERS,
    COL_ORGANIZER,
    COL_RECURRENCE,
    COL_ORIGINAL_START /* only in db_meeting_get_many_for's rows: the occurrence they show */
};

/* Fills a fresh m from a row of MEETING_COLUMNS (and COL_ORIGINAL_START when the result has
 * it). 0, or -1 (out of memory, malformed). */
int db_meeting_fill(const PGresult *res, int row, struct meeting *m);
/* The error of a row db_meeting_fill could not read, on db ("<what>: cannot read the row of
 * meeting <id> ..."): it cannot tell running out of memory from a value it cannot parse, so both
 * are named. Returns DB_HARD_ERROR. */
enum db_status db_meeting_unreadable(struct db *db, const char *what, const PGresult *res, int row);
/* Appends the meetings of res (rows of MEETING_COLUMNS) to out, grown by db_meeting_list's own
 * layout. ONE_RESULT, or DB_HARD_ERROR with out holding what was read (db_meeting_list_fini it). */
enum db_status db_meeting_list_append(struct db *db, PGresult *res, struct db_meeting_list *out);

#endif
