/* db_stream_sql.h -- the SQL that the reads of one participant's events share: the stream's
 * resumes and the inbox (db_stream.c) and the inbox's marks (db_inbox.c). */
#ifndef TOCSIN_DB_STREAM_SQL_H
#define TOCSIN_DB_STREAM_SQL_H

/* clang-format off */
/* One reader's events: found by the audience index (migrations/017; the expression as there),
 * then kept only when the token's meetings ($mtg, NULL: any) hold the event's and the meeting
 * still lists the reader as organizer or participant, so that pages and resumes are full of what
 * the reader may see. The planner must start from the index: ordered by seq itself it walks the
 * primary key backwards instead, testing every event of the tenant for a reader who has few
 * (hence seq + 0), and the membership test written as a join (EXISTS) made it start from the
 * tenant's meetings when there are few, reading all of them per call once there are many. As a
 * scalar subquery it is a probe by the meeting's key for each event found, after the others. */
#define READER_WHERE(sub, mtg) \
    " e.tenant_id = $1::bigint" \
    " AND tocsin_audience_keys(e.tenant_id, e.audience)" \
    "  @> ARRAY[tocsin_audience_key($1::bigint, " sub "::text)]" \
    " AND (" mtg "::uuid[] IS NULL OR e.meeting_id = ANY (" mtg "::uuid[]))" \
    " AND coalesce((SELECT m.organizer_id = " sub "::text OR m.participant_ids @> ARRAY[" sub "::text]" \
    "  FROM meetings m WHERE m.id = e.meeting_id AND m.tenant_id = e.tenant_id" \
    "  AND m.deleted_at IS NULL), false)"

/* A reader's marks on each item (migrations/025), after EVENT_COLUMNS; none for the hub's reads. */
#define MARK_COLUMNS "coalesce(" DB_MS("s.read_at") ", -1), coalesce(" DB_MS("s.archived_at") ", -1)"
#define MARKS_JOIN(sub) \
    " LEFT JOIN inbox_state s ON s.tenant_id = e.tenant_id AND s.participant = " sub "::text" \
    "  AND s.seq = e.seq"
/* The reader's filters: $kind (NULL: both kinds), $unread and $archived (NULL: either). */
#define READER_FILTERS(kind, unread, archived) \
    " AND (" kind "::smallint IS NULL OR e.kind = " kind "::smallint)" \
    " AND (" unread "::bool IS NULL OR (s.read_at IS NULL) = " unread "::bool)" \
    " AND (" archived "::bool IS NULL OR (s.archived_at IS NOT NULL) = " archived "::bool)"

/* clang-format on */

#include <stdbool.h>

#include "db_stream.h"
#include "strbuf.h"

/* The reader's token's meetings as a uuid[] literal in b, or NULL (any meeting) when it names
 * none; *oom when b ran out of memory. */
const char *db_stream_mtg_param(struct strbuf *b, const struct db_stream_reader *who, bool *oom);

#endif
