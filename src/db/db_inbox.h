/* db_inbox.h -- a participant's inbox marks (migrations/025): read and archived per item, every
 * item up to a seq marked read, the unread count. A change that changes something also writes an
 * `inbox` stream event for the participant (DB_STREAM_INBOX, its body stored), whose head the
 * caller hands to the hubs as a fire's. Implemented in db_inbox.c. */
#ifndef TOCSIN_DB_INBOX_H
#define TOCSIN_DB_INBOX_H

#include <stdint.h>

#include "db.h"
#include "db_stream.h"

/* What a change left: the item's marks (or, for db_inbox_read_up_to, the time it marked them),
 * the reader's unread count after it (items neither read nor archived), how many items it marked
 * (db_inbox_read_up_to), and the seq of the stream event that tells of it (0: nothing changed,
 * no event). */
struct db_inbox_change {
    int64_t read_at_ms, archived_at_ms; /* -1: unset */
    int64_t unread_count;
    int64_t marked;
    int64_t event_seq;
};

/* Sets the reader's marks on item seq: read and archived each -1 (leave), 0 (clear) or 1 (set;
 * a mark already set keeps its time). ONE_RESULT; NO_RESULTS when the reader has no such item
 * (another participant's, a meeting that no longer lists the reader, outside the token's
 * meetings, or none); or the error. */
enum db_status db_inbox_mark(struct db *db, int64_t tenant_id, const struct db_stream_reader *who,
                             int64_t seq, int read, int archived, struct db_inbox_change *out);
/* Marks read every item of the reader with seq <= up_to that was unread. ONE_RESULT (also when
 * there was nothing to mark) or the error. */
enum db_status db_inbox_read_up_to(struct db *db, int64_t tenant_id,
                                   const struct db_stream_reader *who, int64_t up_to,
                                   struct db_inbox_change *out);
/* The reader's unread count into *count. */
enum db_status db_inbox_unread(struct db *db, int64_t tenant_id, const struct db_stream_reader *who,
                               int64_t *count);

#endif
