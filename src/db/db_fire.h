/* db_fire.h -- the fire statement: reminder occurrences pending -> fired (or missed) plus their
 * outbox rows, a whole batch in one statement (so one commit). The conditional UPDATE is what makes
 * "fired once" true across replicas, whatever Redis does. Implemented in db_fire.c. */
#ifndef TOCSIN_DB_FIRE_H
#define TOCSIN_DB_FIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "db_outbox.h"
#include "meeting.h"

#define DB_FIRE_BATCH_MAX 1024 /* occurrences per statement */

struct db_fire_item {
    int64_t reminder_id;
    int64_t fire_at_ms;
    enum reminder_status status; /* REMINDER_FIRED or REMINDER_MISSED */
    int64_t fired_at_ms;         /* the database's clock at the statement */
    int64_t lateness_ms;         /* fired_at_ms - fire_at_ms */
};

/* The webhook rows of one fire statement handed to their owner in memory, so that its delivery
 * worker sends them without a lease statement or a meeting read (deliver.h): each row as a lease
 * would have brought it (items[i], given, no payload yet) and the meeting its notification shows
 * (meetings[meeting_of[i]]), read by the fire statement itself, its fired reminders as they were
 * committed. Made by db_fire_batch, freed by db_fire_handover_free; the caller stamps owner and
 * started_ms. */
struct db_fire_handover {
    char owner[DB_OUTBOX_OWNER_MAX + 1]; /* the rows' lease_owner */
    int64_t started_ms;                  /* monotonic, taken before the statement was sent */
    size_t n, n_meetings;
    struct db_outbox_item *items;  /* n */
    size_t *meeting_of;            /* n */
    struct meeting *meetings;      /* n_meetings */
    struct db_fire_handover *next; /* for the receiver's list */
};
void db_fire_handover_free(struct db_fire_handover *h);

struct db_fire_result {
    size_t n; /* occurrences this statement changed; the others of the batch were stale */
    struct db_fire_item item[DB_FIRE_BATCH_MAX];
    size_t n_streams; /* tenants that got stream events in this statement */
    struct stream_head stream[DB_FIRE_BATCH_MAX];
    size_t n_outbox;
    int64_t *outbox_ids; /* n_outbox new outbox row ids, malloc'ed; freed by db_fire_result_fini */
    struct db_fire_handover *handover; /* NULL when none; the caller may take it */
};

/* A webhook row a fire statement writes for an owner that takes it in memory (handover_ms > 0)
 * is due this long after the fire: the lease statement does not bring an owner the rows it was
 * given before they are due (db_outbox_claim), so it never loads a row it is also being handed
 * unless the handover came later than this, which the owner refuses (deliver.h). Rows of an
 * owner that is gone are anyone's at once (orphans need not be due). */
#define DB_FIRE_HANDOVER_GRACE_MS 2000

/* Fires the occurrences k[0..n) (n <= DB_FIRE_BATCH_MAX, no duplicates) in one statement: each row
 * of reminders whose (id, fire_at) matches, whose status is pending, whose fire_at <= the
 * database's now() (never early, whatever this replica's clock says) and whose meeting is not
 * deleted becomes 'missed' when now() is past the meeting's start plus missed_grace_ms, else
 * 'fired', with fired_at = now(). Each fired one gets an outbox row per target of its reminder's
 * channels, due now and owned by the delivery worker owner names (db_outbox.h; NULL: free for any
 * replica's delivery workers): each live webhook of its tenant,
 * each push subscription of its participants and organizer, each participant with an email
 * address (only when email is true); on the stream channel, when its meeting has participants or
 * an organizer, a stream event with the next sequence number of its tenant (out->stream: the
 * highest per tenant) and an outbox row recorded delivered. An outbox row that exists already for
 * the occurrence and target (fired, rescheduled away and back) is not duplicated.
 * With an owner and handover_ms > 0 (at most DB_FIRE_HANDOVER_GRACE_MS), the rows for live
 * webhooks that are on are due handover_ms after the fire and come back in out->handover with the
 * meetings of their reminders (NULL when there are none, or when out of memory: the rows are then
 * leased once due). Occurrences that changed nothing are simply absent from out (stale, already
 * fired, deleted).
 * Runs in autocommit: ONE_RESULT means committed. out must be fresh (zeroed) or finalized; on any
 * status it may be passed to db_fire_result_fini. */
enum db_status db_fire_batch(struct db *db, const struct reminder_key *k, size_t n,
                             int64_t missed_grace_ms, bool email, const char *owner,
                             int64_t handover_ms, struct db_fire_result *out);
/* Frees out->outbox_ids and out->handover and empties out. */
void db_fire_result_fini(struct db_fire_result *out);

#endif
