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
    char *secret_old;      /* the one it replaced, while the rotation's overlap lasts; else NULL */
    char *p256dh, *auth;   /* push: the subscription's keys */
    char *recipient;       /* push, email: the participant id */
    char *address;         /* email: the address */
    char *target;          /* the webhook id, push subscription id or participant id */
    int64_t expires_at_ms; /* push: the subscription's expiry, 0 = none */
    bool target_gone;      /* webhook deleted or subscription removed: record failed, never send */
    bool target_disabled;  /* with target_gone: the webhook is turned off, not deleted */
    bool given;            /* the owner was given it (fire statement), not leased by this claim */
};

/* Delivery leases belong to owners (migrations/011): a worker is an owner, named
 * "<instance>/<worker>/<token>" (a token per registration, so an owner that lapsed never comes
 * back to life under the same name), with one lease row renewed while it runs. A row it holds
 * names it in lease_owner. */
#define DB_OUTBOX_OWNER_MAX 160
/* Registers owner with a lease of lease_ms, and forgets owners lapsed for an hour that hold
 * nothing. On a direct connection (db_tracks_backend) the lease also ends with the connection's
 * backend: a killed replica's rows are orphans as soon as its connections are closed. */
enum db_status db_outbox_owner_register(struct db *db, const char *owner, int64_t lease_ms);
/* A renewal finds the lease lapsed when less than this is left of it. */
#define DB_OUTBOX_RENEW_MARGIN_MS 250
#define DB_OUTBOX_RENEW_MARGIN_TEXT "250"
/* Extends owner's lease to lease_ms from now: ONE_RESULT, or NO_RESULTS when it had lapsed (or had
 * less than DB_OUTBOX_RENEW_MARGIN_MS left), or was taken on a connection other than this one's
 * (its rows may be another worker's already; it must register under a new name). */
enum db_status db_outbox_owner_renew(struct db *db, const char *owner, int64_t lease_ms);
/* Gives back every row owner still holds (due at once, no attempt counted) and ends its lease:
 * a worker stopping with nothing in flight. */
enum db_status db_outbox_owner_leave(struct db *db, const char *owner);

/* What a lease statement takes and skips (db_outbox_claim); the arrays are borrowed. */
struct db_outbox_claim_args {
    const char *owner;
    bool orphans;
    const char *const *exclude; /* receivers skipped, n_exclude (at most DB_OUTBOX_EXCLUDE_MAX) */
    size_t n_exclude;
    const int64_t *tenants; /* tenants skipped, n_tenants (at most DB_OUTBOX_EXCLUDE_MAX) */
    size_t n_tenants;
    const int64_t *held; /* rows the caller holds, n_held */
    size_t n_held;
};
/* Takes up to max (<= DB_OUTBOX_CLAIM_MAX) rows for owner, skipping the rows of the receivers in
 * exclude[0..n_exclude) (their circuits are open or their share of the in-flight slots is taken)
 * and of the tenants in tenants[0..n_tenants) (they hold their share of the caller's slots):
 * first rows of owners whose lease lapsed or whose backend is gone (a dead replica's, so they do
 * not wait behind a backlog; looked for only when orphans is true: a probe per owner of held rows;
 * never one in held[0..n_held), which the caller may still have out under an earlier name),
 * then the rows owner was given, does not hold yet (not in held[0..n_held]) and that are due
 * (written owned by the fire statement, read without a write; a row handed over in memory is due
 * DB_FIRE_HANDOVER_GRACE_MS after its fire), then due rows nobody holds, in order. The first and
 * the last become owner's. A held row is outside the due range's index (outbox_pending_due), so
 * that range holds only rows anyone may take, however many are held. *n rows into out; free each
 * with db_outbox_item_fini. */
enum db_status db_outbox_claim(struct db *db, const struct db_outbox_claim_args *a,
                               struct db_outbox_item *out, size_t max, size_t *n);
void db_outbox_item_fini(struct db_outbox_item *it);
/* The attempts kept of each delivery (delivery_attempts, migrations/020): the statement that
 * records one more deletes the oldest. */
#define DB_OUTBOX_ATTEMPTS_KEPT 20
#define DB_OUTBOX_ATTEMPTS_KEPT_TEXT "20"

/* Marks rows delivered (one statement), with the HTTP status of their last attempt; recorded[i]
 * tells whether ids[i] was recorded by this call (false: another answer for it was recorded
 * already). Each recorded row's attempt (duration_ms[i], sent by instance) is written by the same
 * statement. The body sent is not stored: a body is kept only for retries (db_outbox_failed),
 * which must send the same bytes. */
enum db_status db_outbox_delivered(struct db *db, const int64_t *ids, const int *status,
                                   const int64_t *duration_ms, size_t n, const char *instance,
                                   bool *recorded);

/* One failed attempt to record. */
struct db_outbox_failure {
    int64_t id;
    int http_status;  /* 0 when there was no answer */
    int64_t retry_ms; /* the next attempt after this delay */
    bool give_up;     /* failed for good now (target or meeting gone, or it can never succeed) */
    bool recorded; /* set by db_outbox_failed: the row was still the owner's, the attempt counts */
    int64_t duration_ms; /* from the request's start to its answer; 0 when none went out */
};
/* Records failed attempts (one statement) of rows owner still holds: each is retried after its
 * delay, or becomes 'failed' at attempt max_attempts or when it gives up. A row another worker
 * took over meanwhile (owner's lease lapsed while its request was out) is left to that worker:
 * recording the failure would free the row under a request in flight, for a third worker to send
 * again. errors_json and bodies_json are JSON arrays of the n reasons and bodies (null: none
 * sent), a body stored where the row has none yet, so every retry sends the same bytes.
 * *n_failed: how many became 'failed'; each f[i].recorded says whether its row was the owner's.
 * Each recorded attempt (sent by instance) is written by the same statement. */
enum db_status db_outbox_failed(struct db *db, const char *owner, const char *instance,
                                struct db_outbox_failure *f, size_t n, const char *errors_json,
                                const char *bodies_json, int max_attempts, size_t *n_failed);
/* Gives back rows owner holds and did not send: due again after delay_ms (0: at once, for any
 * worker of any replica), no attempt counted. */
enum db_status db_outbox_release(struct db *db, const char *owner, const int64_t *ids, size_t n,
                                 int64_t delay_ms);
/* Gives the rows owner was given (by the fire statement) for receivers[0..n) and that are due to
 * any worker, as they are (no attempt counted, still due): their circuits are open in owner,
 * not necessarily in the others. Never a row in held[0..n_held) (the owner's requests out), nor
 * one not due yet (a handed row owner may still take in memory). *passed: how many. */
enum db_status db_outbox_pass_on(struct db *db, const char *owner, const char *const *receivers,
                                 size_t n, const int64_t *held, size_t n_held, int64_t *passed);
/* The number of outbox rows still to deliver (status pending), for /metrics. */
enum db_status db_outbox_backlog(struct db *db, int64_t *n);
/* How long, in milliseconds, the longest-waiting row that is due and held by no worker has been
 * due (0 when none is), for /metrics. Rows of receivers whose circuit is open wait there too. */
enum db_status db_outbox_oldest_due(struct db *db, int64_t *ms);

struct db_delivery {
    int64_t id, reminder_id, fire_at_ms, next_attempt_at_ms, delivered_at_ms; /* 0 = never */
    unsigned channel;
    char webhook_id[MEETING_ID_LEN + 1]; /* "" unless a webhook row */
    const char *recipient;               /* push, email: the participant id; else NULL */
    char status[12];
    int attempts, last_status; /* last_status 0 = none */
    char *last_error;          /* NULL when none */
    char meeting_id[MEETING_ID_LEN + 1];
    const char *meeting_title; /* the tenant-wide search's rows only; NULL when purged */
};
typedef void (*db_delivery_row_fn)(void *arg, const struct db_delivery *d);
/* A page of them: after the row after_id (0: from the first), at most limit rows (1..
 * DB_LIST_LIMIT_MAX); more is set when others follow. */
struct db_delivery_page {
    int64_t after_id;
    size_t limit;
    bool more;
};
/* The outbox rows of one of the tenant's live meetings, oldest first, a page of them: fn is called
 * for each, its pointers valid during the call. NO_RESULTS when the tenant has no such meeting. */
enum db_status db_outbox_deliveries(struct db *db, int64_t tenant_id, const char *meeting_id,
                                    struct db_delivery_page *page, db_delivery_row_fn fn,
                                    void *arg);

#endif
