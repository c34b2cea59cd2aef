/* deliver.h -- delivery workers: threads, each with its own PostgreSQL connection and HTTP client,
 * that lease due outbox rows (any replica's, once their lease ran out), POST each signed
 * notification (webhook.h, webhook_sign.h) and record the attempt: delivered, retried later with
 * exponential backoff and jitter, or failed after the last attempt. Everything is in the outbox,
 * so a restart resumes where the last process stopped. */
#ifndef TOCSIN_DELIVER_H
#define TOCSIN_DELIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A worker leases a batch for DELIVER_LEASE_MS and renews the lease every DELIVER_RENEW_MS, also
 * while a slow receiver keeps a request waiting: a worker that dies holds its rows for at most
 * DELIVER_LEASE_MS. Requests of one batch start within DELIVER_BATCH_WINDOW_MS of its claim; the
 * rest are given back so that other workers take them. */
#define DELIVER_LEASE_MS 3000
#define DELIVER_RENEW_MS 1000
#define DELIVER_BATCH_WINDOW_MS 10000
#define DELIVER_POLL_MS 250             /* idle workers look for due rows this often */
#define DELIVER_BACKOFF_MAX_MS 14400000 /* a retry waits at most 4 h */
#define DELIVER_JITTER_PCT 20           /* each retry delay is spread by up to this percentage */

struct deliver_opts {
    const char *database_url;
    const char *instance_id; /* the fire statement leases new rows to this name */
    int workers;
    int64_t retry_base_ms;
    int64_t timeout_ms;
    int max_attempts;
    bool allow_private;
};

struct deliver;

/* Starts opts->workers threads (connecting lazily). NULL when out of memory or a thread cannot
 * start. */
struct deliver *deliver_start(const struct deliver_opts *opts);
/* Wakes the workers: rows were just written (a dispatch_fired_fn; arg is the struct deliver).
 * Thread-safe, never blocks for long. */
void deliver_notify(void *arg, const int64_t *outbox_ids, size_t n);
/* The delay before retry number `attempt` (1 = the first retry): base * 2^(attempt-1), capped,
 * spread by +-DELIVER_JITTER_PCT with the random value r in [0, 1). Pure; exposed for tests. */
int64_t deliver_backoff_ms(int64_t base_ms, int attempt, double r);
/* Stops taking rows, lets each worker finish the request it is sending (bounded by the HTTP
 * timeout), gives back the leases of the rows it did not send, joins the workers and frees d.
 * Those rows stay pending: another replica, or the next process, sends them. NULL ok. */
void deliver_stop(struct deliver *d);

#endif
