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
    "  FROM reminders r WHERE r.meeting_id = " m " AND r.original_start IS NULL" \
    "  AND r.participant IS NULL)"

/* A series' reminders: its definitions, each with its next firing (the earliest pending row of
 * any occurrence; when none is pending, the latest occurrence's row; id 0 when it has no row). */
#define MEETING_SERIES_REMINDERS(m) \
    "(SELECT string_agg(concat_ws(',', coalesce(x.id, 0), d.mb," \
    "                             coalesce(" DB_MS("x.fire_at") ", 0), coalesce(x.status, 'pending')," \
    "                             coalesce(" DB_MS("x.fired_at") ", 0), d.ch), ';' ORDER BY d.mb DESC)" \
    "  FROM series s CROSS JOIN LATERAL unnest(s.reminder_minutes, s.reminder_channels) AS d(mb, ch)" \
    "  LEFT JOIN LATERAL (" \
    "   (SELECT q.id, q.fire_at, q.status, q.fired_at FROM reminders q" \
    "    WHERE q.meeting_id = " m " AND q.original_start IS NOT NULL AND q.participant IS NULL" \
    "    AND q.minutes_before = d.mb" \
    "    AND q.status = 'pending' ORDER BY q.fire_at LIMIT 1)" \
    "   UNION ALL" \
    "   (SELECT q.id, q.fire_at, q.status, q.fired_at FROM reminders q" \
    "    WHERE q.meeting_id = " m " AND q.original_start IS NOT NULL AND q.participant IS NULL" \
    "    AND q.minutes_before = d.mb" \
    "    ORDER BY q.original_start DESC LIMIT 1)" \
    "   LIMIT 1) x ON true" \
    "  WHERE s.meeting_id = " m ")"

/* A series' rule as "rrule|exdate_ms,...|rdate_ms,...|count_until_ms" (the last empty when the
 * series has none, or one computed for another version of the meeting; NULL for a single
 * meeting). */
#define MEETING_RECURRENCE(m) \
    "(SELECT concat_ws('|', s.rrule," \
    "   coalesce((SELECT string_agg(" DB_MS("x") "::text, ',' ORDER BY x) FROM unnest(s.exdates) x), '')," \
    "   coalesce((SELECT string_agg(" DB_MS("x") "::text, ',' ORDER BY x) FROM unnest(s.rdates) x), '')," \
    "   coalesce(CASE WHEN s.count_until_version = (SELECT v.version FROM meetings v" \
    "     WHERE v.id = s.meeting_id) THEN " DB_MS("s.count_until") "::text END, ''))" \
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

/* An occurrence's own reminders (q), for MEETING_FOR_COLUMNS. */
#define OCCURRENCE_REMINDERS \
    "(SELECT string_agg(concat_ws(',', q.id, q.minutes_before, " DB_MS("q.fire_at") "," \
    "                              q.status, coalesce(" DB_MS("q.fired_at") ", 0), q.channels)," \
    "                    ';' ORDER BY q.minutes_before DESC)" \
    "  FROM reminders q WHERE q.meeting_id = m.id AND q.original_start = r.original_start" \
    "  AND q.participant IS NULL)"

/* The meeting a reminder's notification shows, in enum meeting_col order through
 * COL_ORIGINAL_START: a single meeting as MEETING_COLUMNS reads it, a series' occurrence as that
 * occurrence (its start, end, title and own reminders; the original start set). For a
 * participant's own reminder (migrations/029) its reminders are that reminder alone: the one that
 * reached them, in place of the meeting's, which they do not get. The aliases m,
 * s, r and ov are MEETING_FOR_JOINS'. */
#define MEETING_FOR_COLUMNS \
    "m.id, m.version, " DB_MS("m.created_at") ", " DB_MS("m.updated_at") "," \
    " coalesce(ov.title, m.title), m.description, m.time_zone, m.location," \
    " CASE WHEN r.id IS NULL THEN " DB_MS("m.starts_at") " ELSE " DB_MS("r.starts_at") " END," \
    " CASE WHEN r.id IS NULL THEN " DB_MS("m.ends_at") \
    "  WHEN ov.ends_at IS NOT NULL THEN " DB_MS("ov.ends_at") \
    "  ELSE " DB_MS("r.starts_at + (m.ends_at - m.starts_at)") " END," \
    " m.participants, m.metadata," \
    " CASE WHEN own.packed IS NOT NULL THEN own.packed" \
    "  WHEN r.id IS NOT NULL THEN " OCCURRENCE_REMINDERS \
    "  WHEN s.meeting_id IS NULL THEN " MEETING_SINGLE_REMINDERS("m.id") \
    "  ELSE " MEETING_SERIES_REMINDERS("m.id") " END," \
    " m.organizer_id, CASE WHEN s.meeting_id IS NOT NULL THEN " MEETING_RECURRENCE("m.id") " END," \
    " " DB_MS("r.original_start")
/* The joins of MEETING_FOR_COLUMNS (m, s, r, ov, own) for the meeting mid and reminder rid, when
 * cond; join is how the live meeting is joined ("CROSS JOIN LATERAL": a row without one is gone;
 * "LEFT JOIN LATERAL" with on " ON true": its columns are NULL), the rest outer. */
#define MEETING_FOR_JOINS(join, mid, rid, cond, on) \
    " " join " (SELECT * FROM meetings m WHERE " cond " AND m.id = " mid \
    "  AND " DB_FILTER("m.deleted_at IS NULL") " LIMIT 1) m" on \
    " LEFT JOIN LATERAL (SELECT s.meeting_id FROM series s WHERE s.meeting_id = m.id LIMIT 1) s" \
    "  ON true" \
    " LEFT JOIN LATERAL (SELECT * FROM reminders r WHERE s.meeting_id IS NOT NULL AND r.id = " rid \
    "  AND r.meeting_id = m.id AND r.original_start IS NOT NULL LIMIT 1) r ON true" \
    " LEFT JOIN LATERAL (SELECT * FROM occurrence_overrides ov WHERE ov.meeting_id = m.id" \
    "  AND ov.original_start = r.original_start LIMIT 1) ov ON true" \
    " LEFT JOIN LATERAL (SELECT concat_ws(',', o.id, o.minutes_before, " DB_MS("o.fire_at") "," \
    "  o.status, coalesce(" DB_MS("o.fired_at") ", 0), o.channels) AS packed FROM reminders o" \
    "  WHERE m.id IS NOT NULL AND o.id = " rid " AND o.participant IS NOT NULL LIMIT 1) own ON true"

/* The bytes of a meeting's texts (m a row of meetings): what its representation grows with, and
 * what its row takes in memory once read (db_meeting_fill copies them). The json columns go
 * through text to count what they hold, not what compression left of it on disk. */
#define MEETING_TEXT_BYTES(m) \
    "(octet_length(" m ".title) + coalesce(octet_length(" m ".description), 0)" \
    " + coalesce(octet_length(" m ".location), 0) + octet_length(" m ".participants::text)" \
    " + coalesce(octet_length(" m ".metadata::text), 0))"

/* A page of meetings within a byte bound: pick is a query of "m.id, m.starts_at, <its
 * MEETING_TEXT_BYTES> AS b" in (starts_at, id) order, at most limit + 1 rows (the candidates);
 * the first are read while the texts before them stay under bytes, at most limit. Each row has
 * MEETING_COLUMNS, a NULL original start, and the number of candidates (COL_CANDIDATES): more
 * of them than rows read means another page. Only the rows read are fetched whole. */
#define MEETING_PAGE(pick, limit, bytes) \
    "SELECT " MEETING_COLUMNS ", NULL::bigint, p.n FROM (" \
    "  SELECT k.id, k.starts_at, count(*) OVER () AS n, row_number() OVER w AS rn," \
    "         sum(k.b) OVER w - k.b AS before" \
    "  FROM (" pick ") k WINDOW w AS (ORDER BY k.starts_at, k.id)) p" \
    " JOIN meetings m ON m.id = p.id" \
    " WHERE p.rn <= " limit " AND p.before < " bytes \
    " ORDER BY p.starts_at, p.id"

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
    COL_ORIGINAL_START, /* only in db_meeting_get_many_for's rows: the occurrence they show */
    COL_CANDIDATES      /* only in a MEETING_PAGE: its candidates */
};

/* A MEETING_PAGE's rows into out (fresh, or holding meetings already: appended): whether there
 * are more is set from the candidates, for a page of at most limit. ONE_RESULT, or HARD_ERROR
 * when out of memory or a row is malformed (out is then freed). */
enum db_status db_meeting_page_read(struct db *db, const PGresult *res, size_t limit,
                                    struct db_meeting_list *out);
/* The $ parameters of a page: limit + 1 candidates, bytes_max (none: the largest). */
void db_meeting_page_params(const struct db_list_query *q, char limit[DB_I64_BUF],
                            char bytes[DB_I64_BUF]);

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
