/* db_fire.h -- the fire statement: reminder occurrences pending -> fired (or missed) plus their
 * outbox rows, a whole batch in one statement (so one commit). The conditional UPDATE is what makes
 * "fired once" true across replicas, whatever Redis does. Implemented in db_fire.c. */
#ifndef TOCSIN_DB_FIRE_H
#define TOCSIN_DB_FIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "meeting.h"

#define DB_FIRE_BATCH_MAX 1024 /* occurrences per statement */

struct db_fire_item {
    int64_t reminder_id;
    int64_t fire_at_ms;
    enum reminder_status status; /* REMINDER_FIRED or REMINDER_MISSED */
    int64_t fired_at_ms;         /* the database's clock at the statement */
    int64_t lateness_ms;         /* fired_at_ms - fire_at_ms */
};

struct db_fire_result {
    size_t n; /* occurrences this statement changed; the others of the batch were stale */
    struct db_fire_item item[DB_FIRE_BATCH_MAX];
    size_t n_streams; /* tenants that got stream events in this statement */
    struct stream_head stream[DB_FIRE_BATCH_MAX];
    size_t n_outbox;
    int64_t *outbox_ids; /* n_outbox new outbox row ids, malloc'ed; freed by db_fire_result_fini */
};

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
 * Occurrences that changed nothing are simply absent from out (stale, already fired, deleted).
 * Runs in autocommit: ONE_RESULT means committed. out must be fresh (zeroed) or finalized; on any
 * status it may be passed to db_fire_result_fini. */
enum db_status db_fire_batch(struct db *db, const struct reminder_key *k, size_t n,
                             int64_t missed_grace_ms, bool email, const char *owner,
                             struct db_fire_result *out);
/* Frees out->outbox_ids and empties out. */
void db_fire_result_fini(struct db_fire_result *out);

#endif
