/* db_webhook.h -- webhooks (per tenant receivers) and the outbox as delivery sees it: claiming due
 * rows, fixing their payload, recording each attempt, and the per-meeting delivery list.
 * Implemented in db_webhook.c. */
#ifndef TOCSIN_DB_WEBHOOK_H
#define TOCSIN_DB_WEBHOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "meeting.h"

#define WEBHOOKS_PER_TENANT_MAX 100
#define DB_OUTBOX_CLAIM_MAX 64 /* rows one delivery worker takes at a time */

struct db_webhook {
    char id[MEETING_ID_LEN + 1];
    char *url;
    char *description; /* NULL when none */
    char *secret;      /* only filled by db_webhook_insert's caller; never read back in lists */
    int64_t created_at_ms;
};

/* Inserts w (id, url, description, secret set by the caller) unless the tenant has
 * WEBHOOKS_PER_TENANT_MAX live ones: ONE_RESULT (created_at_ms filled) or NO_RESULTS (cap). */
enum db_status db_webhook_insert(struct db *db, int64_t tenant_id, struct db_webhook *w);
typedef void (*db_webhook_row_fn)(void *arg, const struct db_webhook *w);
/* Calls fn for each live webhook of the tenant, oldest first (secret NULL). */
enum db_status db_webhook_list(struct db *db, int64_t tenant_id, db_webhook_row_fn fn, void *arg);
/* Soft-deletes one: ONE_RESULT, or NO_RESULTS when the tenant has no such live webhook. */
enum db_status db_webhook_delete(struct db *db, int64_t tenant_id, const char *id);

struct db_outbox_item {
    int64_t id, tenant_id, reminder_id, fire_at_ms;
    int attempts; /* before this one */
    char meeting_id[MEETING_ID_LEN + 1];
    char *payload; /* NULL until the first recorded attempt stores the body it sent */
    char *url, *secret;
    bool webhook_deleted;
};

/* Leases up to max (<= DB_OUTBOX_CLAIM_MAX) due pending rows to owner for lease_ms. A lease moves
 * next_attempt_at to its end, so a held row is simply not due: the claim's index range on
 * (next_attempt_at, id) holds only rows anyone may take, however many are leased (filtering
 * leased rows instead made each claim walk past all of them: quadratic in a burst). *n rows into
 * out; free each with db_outbox_item_fini. */
enum db_status db_outbox_claim(struct db *db, const char *owner, int64_t lease_ms,
                               struct db_outbox_item *out, size_t max, size_t *n);
void db_outbox_item_fini(struct db_outbox_item *it);
/* Marks rows delivered (one statement), with the HTTP status of their last attempt; bodies_json is
 * a JSON array of the n bodies sent, stored where the row has none yet (its first attempt). */
enum db_status db_outbox_delivered(struct db *db, const int64_t *ids, const int *status, size_t n,
                                   const char *bodies_json);
/* Extends the lease of rows ids[0..n) that owner still holds to lease_ms from now. */
enum db_status db_outbox_renew(struct db *db, const char *owner, const int64_t *ids, size_t n,
                               int64_t lease_ms);
/* Gives back the lease of rows `owner` holds but did not send (stopping, or too little lease left
 * for another request): any worker of any replica may take them at once. */
enum db_status db_outbox_release(struct db *db, const char *owner, const int64_t *ids, size_t n);
/* Records a failed attempt: retried at now + retry_ms, or 'failed' when this was attempt
 * max_attempts (or give_up). body (NULL when none was sent) is stored if the row has none yet, so
 * every retry sends the same bytes. */
enum db_status db_outbox_failed(struct db *db, int64_t id, int http_status, const char *error,
                                int64_t retry_ms, int max_attempts, bool give_up, const char *body);

struct db_delivery {
    int64_t id, reminder_id, fire_at_ms, next_attempt_at_ms, delivered_at_ms; /* 0 = never */
    char webhook_id[MEETING_ID_LEN + 1];
    char status[12];
    int attempts, last_status; /* last_status 0 = none */
    char *last_error;          /* NULL when none */
};
typedef void (*db_delivery_row_fn)(void *arg, const struct db_delivery *d);
/* The outbox rows of one of the tenant's live meetings, oldest first.
 * NO_RESULTS when the tenant has no such meeting. */
enum db_status db_meeting_deliveries(struct db *db, int64_t tenant_id, const char *meeting_id,
                                     db_delivery_row_fn fn, void *arg);

#endif
