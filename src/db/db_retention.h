/* db_retention.h -- the purge statements of retention (retention.h): each deletes at most one
 * batch of one kind of old rows, in one short statement (its own transaction), oldest first, and
 * skips rows another transaction holds (SKIP LOCKED), so it never waits on the API or delivery
 * and two replicas purging at once never wait on each other. */
#ifndef TOCSIN_DB_RETENTION_H
#define TOCSIN_DB_RETENTION_H

#include <stdint.h>

#include "db.h"

#define DB_RETENTION_BATCH_MAX 10000

enum db_retention_kind {
    DB_RETENTION_IDEMPOTENCY,   /* stored idempotent responses, by created_at */
    DB_RETENTION_DELIVERIES,    /* delivered and failed outbox rows, by created_at (the fire),
                                   and delivery attempts, by their time */
    DB_RETENTION_MEETINGS,      /* deleted meetings, by deleted_at, with their reminders and
                                   those reminders' outbox rows (ON DELETE CASCADE) */
    DB_RETENTION_STREAM_EVENTS, /* stream events, by fired_at; stream_heads.purged_through
                                   rises to the highest seq removed, in the same statement */
    DB_RETENTION_KINDS
};

/* The kind's name in metrics and logs ("idempotency_keys", ...). */
const char *db_retention_name(enum db_retention_kind k);
/* Deletes up to batch (1..DB_RETENTION_BATCH_MAX) rows of kind k older than older_than_s
 * seconds by the database's clock; *purged is how many went. ONE_RESULT whenever it ran. */
enum db_status db_retention_purge(struct db *db, enum db_retention_kind k, int64_t older_than_s,
                                  int batch, int64_t *purged);

#endif
