/* retention.h -- removes what tocsin keeps only for a while: stored idempotent responses,
 * delivered and failed outbox rows, deleted meetings (with their reminders and those reminders'
 * outbox rows) and stream events, each past its own age (TOCSIN_RETENTION_*). One thread per
 * replica with its own PostgreSQL connection; only the replica that owns shard 0 (members.h)
 * purges, so with many replicas one of them does the work (two at once during a membership
 * change only share it: every statement skips rows the other holds). A pass every interval
 * deletes in batches of at most `batch` rows, one short statement each, pausing between them, so
 * no lock is held for long and the API's writes go on. Each pass also turns off the webhooks that
 * have failed without one success for TOCSIN_WEBHOOK_DISABLE_AFTER_S (a warning each, and
 * tocsin_webhooks_disabled_total). */
#ifndef TOCSIN_RETENTION_H
#define TOCSIN_RETENTION_H

#include <stdint.h>

#include "db_retention.h"

#define RETENTION_PAUSE_MS 20 /* between two batches: other work gets the database */

struct members;

struct retention_opts {
    const char *database_url;
    struct members *members; /* NULL: this replica always purges */
    int64_t interval_ms;
    int batch;                          /* rows per statement, 1..DB_RETENTION_BATCH_MAX */
    int64_t keep_s[DB_RETENTION_KINDS]; /* how long each kind is kept */
    int64_t webhook_disable_after_s;    /* a webhook failing this long is turned off */
};

struct retention;

/* Starts the thread; its first pass is one interval after the start. NULL when it cannot. */
struct retention *retention_start(const struct retention_opts *opts);
/* Stops the thread (a pass under way ends after its current batch) and frees r. NULL ok. */
void retention_stop(struct retention *r);

#endif
