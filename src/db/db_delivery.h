/* db_delivery.h -- the outbox as an operator sees it: the tenant-wide search of deliveries
 * (GET /v1/deliveries). The rows are the outbox's (db_outbox.h's struct db_delivery), each with
 * its meeting's title. Implemented in db_delivery.c. */
#ifndef TOCSIN_DB_DELIVERY_H
#define TOCSIN_DB_DELIVERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "db_outbox.h"
#include "meeting.h"

#define DB_DELIVERY_Q_MAX 200 /* bytes of a search's q */

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

#endif
