/* db_delivery.h -- the outbox as an operator sees it: the tenant-wide search of deliveries
 * (GET /v1/deliveries) and one delivery with its attempts (GET /v1/deliveries/{id}). The rows are
 * the outbox's (db_outbox.h's struct db_delivery), each with its meeting's title. Implemented in
 * db_delivery.c. */
#ifndef TOCSIN_DB_DELIVERY_H
#define TOCSIN_DB_DELIVERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "db_outbox.h"
#include "meeting.h"

#define DB_DELIVERY_Q_MAX DB_SEARCH_Q_MAX /* bytes of a search's q */
#define DB_DELIVERY_RECOVER_MAX 50000     /* rows one recover queues again */
#define DB_DELIVERY_STATUS_MAX 12         /* a status's name and its NUL */

/* A search: every field optional (NULL, 0 or the "no bound" value), all of them together. */
struct db_delivery_query {
    const char *status;     /* pending, delivered, failed, skipped */
    const char *channel;    /* webhook, stream, push, email */
    const char *webhook_id; /* a valid uuid */
    const char *meeting_id; /* a valid uuid */
    int64_t from_ms, to_ms; /* fire_at in [from, to); INT64_MIN / INT64_MAX when absent */
    const char *q;          /* a substring, at most DB_DELIVERY_Q_MAX bytes of UTF-8 */
    int64_t before_id;      /* rows with a smaller id only; INT64_MAX from the newest */
    size_t limit;           /* 1..DB_LIST_LIMIT_MAX */
};

/* The tenant's outbox rows that match query, newest (highest id) first, at most query->limit of
 * them: fn is called for each, its pointers valid during the call; *more says whether others
 * follow. DB_ONE_RESULT (also for no rows) or the error. */
enum db_status db_delivery_search(struct db *db, int64_t tenant_id,
                                  const struct db_delivery_query *query, db_delivery_row_fn fn,
                                  void *arg, bool *more);

/* One attempt of a delivery (delivery_attempts, migrations/020); pointers valid during the call
 * that hands it over. */
struct db_delivery_attempt {
    int n; /* the delivery's attempt count after it */
    int64_t at_ms, duration_ms;
    const char *outcome; /* delivered, failed */
    int http_status;     /* 0 when there was no answer */
    const char *error;   /* NULL when none */
    const char *instance;
};
typedef void (*db_delivery_attempt_fn)(void *arg, const struct db_delivery_attempt *a);

/* The tenant's delivery id: fn once with it, then afn for each of its kept attempts (at most
 * DB_OUTBOX_ATTEMPTS_KEPT), oldest first, all read in one statement. NO_RESULTS when the tenant
 * has no such delivery. */
enum db_status db_delivery_get(struct db *db, int64_t tenant_id, int64_t id, db_delivery_row_fn fn,
                               db_delivery_attempt_fn afn, void *arg);

/* Queues the tenant's delivery id again, due now for any worker of any replica (the outbox's
 * claim gives it to one), if it is failed or delivered and not on the stream (written with the
 * fire, never sent by a worker). NO_RESULTS when the tenant has no such delivery; otherwise
 * ONE_RESULT with the status it had in was (pending or a stream row: nothing changed, *queued
 * false). */
enum db_status db_delivery_retry(struct db *db, int64_t tenant_id, int64_t id,
                                 char was[DB_DELIVERY_STATUS_MAX], bool *queued);

/* Queues again, in fire order, the failed deliveries of the tenant's live webhook webhook_id
 * (a valid uuid) whose reminders fired at or after since_ms: at most DB_DELIVERY_RECOVER_MAX of
 * them, the oldest, so that a call that queued that many is made again for the rest. Rows another
 * recover holds are left to it. NO_RESULTS when the tenant has no such webhook; otherwise
 * ONE_RESULT with *queued, none when the webhook is turned off (*disabled). */
enum db_status db_delivery_recover(struct db *db, int64_t tenant_id, const char *webhook_id,
                                   int64_t since_ms, int64_t *queued, bool *disabled);

#endif
