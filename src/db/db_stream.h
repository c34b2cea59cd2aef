/* db_stream.h -- the live stream's statements: tenants' heads, events after a cursor, and the
 * inbox (a participant's latest events). The events are written by the fire statement
 * (db_fire.c). Implemented in db_stream.c. */
#ifndef TOCSIN_DB_STREAM_H
#define TOCSIN_DB_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "meeting.h"

#define DB_STREAM_HEADS_MAX 1000   /* tenants per heads statement */
#define DB_STREAM_EVENTS_MAX 1024  /* events per events statement */
#define DB_STREAM_SUB_MAX 200      /* characters of a participant id (PARTICIPANT_ID_MAX) */
#define DB_STREAM_AUDIENCE_MAX 501 /* participants plus the organizer */
#define DB_STREAM_MTG_MAX 100      /* meeting ids a reader's token may name (JWT_MTG_MAX) */

/* A tenant's stream head and the highest seq retention has purged (0 = none). */
struct db_stream_head {
    int64_t tenant_id, seq, purged_through;
};

/* What a stream event is (the kind column, migrations/025). */
enum db_stream_kind {
    DB_STREAM_REMINDER = 0, /* a fired occurrence: an inbox item, its body built when read */
    DB_STREAM_INBOX = 1,    /* a change of one participant's inbox state, its body stored */
};

/* One stream event as stored: the occurrence that fired (or whose inbox item changed) and who
 * may see it. */
struct db_stream_event {
    int64_t seq;
    int64_t reminder_id, fire_at_ms, fired_at_ms;
    char meeting_id[MEETING_ID_LEN + 1];
    char *audience_json; /* JSON array of participant ids, malloc'ed */
    enum db_stream_kind kind;
    char *data; /* DB_STREAM_INBOX: its JSON body, malloc'ed; else NULL */
    /* The reader's marks on the item (reads with a reader only), -1 when unset. */
    int64_t read_at_ms, archived_at_ms;
};

/* The heads of tenants ids[0..n) (n <= DB_STREAM_HEADS_MAX) into out; a tenant that never had
 * an event gets seq 0. ONE_RESULT or an error. */
enum db_status db_stream_heads(struct db *db, const int64_t *ids, size_t n,
                               struct db_stream_head *out);

/* A filter on one yes-or-no property of an inbox item; the zero value takes every item. */
enum db_inbox_filter { DB_INBOX_ANY = 0, DB_INBOX_NO, DB_INBOX_YES };

/* Who reads a participant's events: the participant id, and the meetings its token is limited
 * to (n_mtg == 0: any). Borrowed. items_only keeps the reminders (the inbox's items) and leaves
 * the inbox changes out (a stream's resume wants both); unread and archived filter the items by
 * the reader's marks. */
struct db_stream_reader {
    const char *sub;
    const char (*mtg)[MEETING_ID_LEN + 1];
    size_t n_mtg; /* <= DB_STREAM_MTG_MAX */
    bool items_only;
    enum db_inbox_filter unread, archived;
};

/* Events of a tenant with after < seq <= until, ascending, at most max (<= DB_STREAM_EVENTS_MAX).
 * who NULL: every event (along the primary key). Else only those the reader may see: its
 * participant in the audience (by the audience index), the meeting among its token's, and the
 * meeting, not deleted, listing it now as organizer or participant. *n events into out; free
 * each with db_stream_event_fini. ONE_RESULT (also for none) or an error. */
enum db_status db_stream_events(struct db *db, int64_t tenant_id, int64_t after, int64_t until,
                                const struct db_stream_reader *who, size_t max,
                                struct db_stream_event *out, size_t *n);
/* The newest max events of a tenant that who may see (as db_stream_events), in ascending order.
 * Both fill read_at_ms and archived_at_ms with who's marks. */
enum db_status db_stream_latest(struct db *db, int64_t tenant_id,
                                const struct db_stream_reader *who, size_t max,
                                struct db_stream_event *out, size_t *n);
void db_stream_event_fini(struct db_stream_event *ev);

#endif
