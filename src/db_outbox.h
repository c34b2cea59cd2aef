/* db_outbox.h -- the outbox as delivery sees it: leasing due rows, fixing their payload, recording
 * each attempt, the per-meeting delivery list and the backlog gauge. The fire statement
 * (db_fire.c) writes the rows. Implemented in db_outbox.c. */
#ifndef TOCSIN_DB_OUTBOX_H
#define TOCSIN_DB_OUTBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "meeting.h"

#define DB_OUTBOX_CLAIM_MAX 256   /* rows one lease statement takes */
#define DB_OUTBOX_EXCLUDE_MAX 512 /* receivers a lease statement may skip */

/* A leased row. Strings are malloc'ed (NULL when absent); db_outbox_item_fini frees them. */
struct db_outbox_item {
    int64_t id, tenant_id, reminder_id, fire_at_ms;
    int attempts;     /* before this one */
    unsigned channel; /* CHANNEL_WEBHOOK, CHANNEL_PUSH or CHANNEL_EMAIL */
    char meeting_id[MEETING_ID_LEN + 1];
    char *receiver;        /* the unit of isolation: a webhook id, a push service origin, "smtp" */
    char *payload;         /* NULL until the first recorded attempt stores the body it sent */
    char *url;             /* webhook URL or push endpoint */
    char *secret;          /* webhook secret ("" for others) */
    char *p256dh, *auth;   /* push: the subscription's keys */
    char *recipient;       /* push, email: the participant id */
    char *address;         /* email: the address */
    char *target;          /* the webhook id, push subscription id or participant id */
    int64_t expires_at_ms; /* push: the subscription's expiry, 0 = none */
    bool target_gone;      /* webhook deleted or subscription removed: record failed, never send */
};

/* Leases up to max (<= DB_OUTBOX_CLAIM_MAX) due pending rows to owner for lease_ms, skipping the
 * rows of the receivers in exclude[0..n_exclude) (their circuits are open or their share of the
 * in-flight slots is taken). A lease moves next_attempt_at to its end, so a held row is simply
 * not due: the claim's index range on (next_attempt_at, id) holds only rows anyone may take,
 * however many are leased (filtering leased rows instead made each claim walk past all of them:
 * quadratic in a burst). Rows whose lease ran out (their owner died) come first, so a killed
 * replica's rows do not wait behind a backlog. *n rows into out; free each with
 * db_outbox_item_fini. */
enum db_status db_outbox_claim(struct db *db, const char *owner, int64_t lease_ms,
                               const char *const *exclude, size_t n_exclude,
                               struct db_outbox_item *out, size_t max, size_t *n);
void db_outbox_item_fini(struct db_outbox_item *it);
/* Marks rows delivered (one statement), with the HTTP status of their last attempt; bodies_json is
 * a JSON array of the n bodies sent, stored where the row has none yet (its first attempt). */
enum db_status db_outbox_delivered(struct db *db, const int64_t *ids, const int *status, size_t n,
                                   const char *bodies_json);

/* One failed attempt to record. */
struct db_outbox_failure {
    int64_t id;
    int http_status;  /* 0 when there was no answer */
    int64_t retry_ms; /* the next attempt after this delay */
    bool give_up;     /* failed for good now (target or meeting gone, or it can never succeed) */
};
/* Records failed attempts (one statement): each row is retried after its delay, or becomes
 * 'failed' at attempt max_attempts or when it gives up. errors_json and bodies_json are JSON
 * arrays of the n reasons and bodies (null: none sent), a body stored where the row has none yet,
 * so every retry sends the same bytes. *n_failed: how many became 'failed'. */
enum db_status db_outbox_failed(struct db *db, const struct db_outbox_failure *f, size_t n,
                                const char *errors_json, const char *bodies_json, int max_attempts,
                                size_t *n_failed);
/* Extends the lease of rows ids[0..n) that owner still holds to lease_ms from now. */
enum db_status db_outbox_renew(struct db *db, const char *owner, const int64_t *ids, size_t n,
                               int64_t lease_ms);
/* Gives back rows owner holds and did not send: due again after delay_ms (0: at once, for any
 * worker of any replica), no attempt counted. */
enum db_status db_outbox_release(struct db *db, const char *owner, const int64_t *ids, size_t n,
                                 int64_t delay_ms);
/* The number of outbox rows still to deliver (status pending), for /metrics. */
enum db_status db_outbox_backlog(struct db *db, int64_t *n);

struct db_delivery {
    int64_t id, reminder_id, fire_at_ms, next_attempt_at_ms, delivered_at_ms; /* 0 = never */
    unsigned channel;
    char webhook_id[MEETING_ID_LEN + 1]; /* "" unless a webhook row */
    const char *recipient;               /* push, email: the participant id; else NULL */
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
