/* db_webhook.h -- webhooks: a tenant's receivers. Implemented in db_webhook.c; the outbox rows
 * that deliver to them are db_outbox.h's. */
#ifndef TOCSIN_DB_WEBHOOK_H
#define TOCSIN_DB_WEBHOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "meeting.h"

#define WEBHOOKS_PER_TENANT_MAX 100

struct db_webhook {
    char id[MEETING_ID_LEN + 1];
    char *url;
    char *description; /* NULL when none */
    char *secret;      /* only filled by db_webhook_insert's caller; never read back in lists */
    int64_t created_at_ms;
    int64_t disabled_at_ms; /* 0 while it is enabled */
    /* Its health from its attempts (delivery_attempts): those of the last hour by outcome, the
     * latest of each (0: none kept), the latest failure's error (NULL: none) and whether
     * DB_WEBHOOK_OPEN_FAILURES failed since the last success, the latest within
     * DB_WEBHOOK_OPEN_MS (a breaker open, as each replica's would be). */
    int64_t ok_1h, failed_1h, last_success_ms, last_failure_ms;
    const char *last_error;
    bool open;
};

/* The circuit breaker's threshold and longest hold (deliver_policy.h), as the health reads
 * them. */
#define DB_WEBHOOK_OPEN_FAILURES 5
#define DB_WEBHOOK_OPEN_FAILURES_TEXT "5"
#define DB_WEBHOOK_OPEN_MS 300000
#define DB_WEBHOOK_OPEN_MS_TEXT "300000"

/* Inserts w (id, url, description, secret set by the caller) unless the tenant has
 * WEBHOOKS_PER_TENANT_MAX live ones: ONE_RESULT (created_at_ms filled) or NO_RESULTS (cap). Runs
 * its own transaction, which takes db_tenant_lock first: the cap holds under concurrency. */
enum db_status db_webhook_insert(struct db *db, int64_t tenant_id, struct db_webhook *w);
typedef void (*db_webhook_row_fn)(void *arg, const struct db_webhook *w);
/* Calls fn for each live webhook of the tenant, oldest first (secret NULL). */
enum db_status db_webhook_list(struct db *db, int64_t tenant_id, db_webhook_row_fn fn, void *arg);
/* The tenant's live webhook id: fn once (secret NULL); NO_RESULTS when there is none. */
enum db_status db_webhook_get(struct db *db, int64_t tenant_id, const char *id,
                              db_webhook_row_fn fn, void *arg);
/* A change of a live webhook: each field NULL (or set_description false, disabled -1) to leave
 * it as it is; disabled 1 turns it off (its disabled_at kept when it was off already), 0 on. */
struct db_webhook_change {
    const char *url;
    bool set_description;
    const char *description; /* NULL clears it (with set_description) */
    int disabled;            /* -1, 0 or 1 */
};
/* Applies c to the tenant's live webhook id and calls fn with the result; NO_RESULTS when there
 * is no such webhook. */
enum db_status db_webhook_update(struct db *db, int64_t tenant_id, const char *id,
                                 const struct db_webhook_change *c, db_webhook_row_fn fn,
                                 void *arg);
/* Turns off every live webhook whose attempts have failed without one success for after_s
 * seconds (its latest attempt failed, and the first failure since its latest success, or ever,
 * is that old), at most DB_WEBHOOK_DISABLE_BATCH a call; fn for each one turned off (its id and
 * tenant, the start of its failures), *n how many. */
#define DB_WEBHOOK_DISABLE_BATCH 1000
typedef void (*db_webhook_disabled_fn)(void *arg, const char *id, int64_t tenant_id,
                                       int64_t failing_since_ms);
enum db_status db_webhook_disable_failing(struct db *db, int64_t after_s, db_webhook_disabled_fn fn,
                                          void *arg, int64_t *n);
/* Replaces the secret of the tenant's live webhook id with secret; the one it had signs beside it
 * for overlap_s seconds (one it had kept from a rotation before is dropped), until
 * *previous_until_ms. NO_RESULTS when there is no such webhook. */
enum db_status db_webhook_rotate(struct db *db, int64_t tenant_id, const char *id,
                                 const char *secret, int64_t overlap_s, int64_t *previous_until_ms);
/* Soft-deletes one: ONE_RESULT, or NO_RESULTS when the tenant has no such live webhook. */
enum db_status db_webhook_delete(struct db *db, int64_t tenant_id, const char *id);

#endif
