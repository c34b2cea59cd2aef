/* deliver.h -- delivery: worker threads that lease due outbox rows (any replica's, once their
 * lease ran out) and keep many requests in flight at once (outbound.h: signed webhook POSTs, Web
 * Push messages, emails), each worker with its own PostgreSQL connection. A receiver (a webhook, a
 * push service's origin, the SMTP server) gets at most its share of a worker's in-flight
 * slots, and after repeated failures its circuit opens: its rows wait, without spending attempts,
 * while the other receivers' deliveries go on. Each answer is recorded within a few milliseconds
 * (delivered, retried later with exponential backoff and jitter, honouring Retry-After, or failed
 * after the last attempt), so a killed replica repeats on the wire at most what was in flight.
 * Everything is in the outbox, so a restart resumes where the last process stopped. The loop is
 * deliver.c; the lease deliver_lease.c; recording answers deliver_record.c; the receiver policy
 * deliver_policy.c (pure, its own header). */
#ifndef TOCSIN_DELIVER_H
#define TOCSIN_DELIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "channel.h"

/* A worker holds its rows under one lease of DELIVER_LEASE_MS (db_outbox.h), renewed every
 * DELIVER_RENEW_MS whatever it holds: the rows of a killed replica are anyone's again as soon as
 * its PostgreSQL connections are closed (on a direct connection), within DELIVER_LEASE_MS
 * otherwise, and an idle worker looks every DELIVER_POLL_MS, so they move on within the sum
 * (under 2 s). */
#define DELIVER_LEASE_MS 1500
#define DELIVER_RENEW_MS 500
/* A renewal that failed (the database is down) is tried again this long after, not at once: a
 * worker that retried on every round spun on a whole core through an outage. */
#define DELIVER_RENEW_RETRY_MS 250
/* Rows the fire statement may give one worker beyond what it loaded: past this, a replica's fires
 * are written for any worker of any replica, so a replica whose receivers are slow does not
 * hoard a burst the others could send. */
#define DELIVER_GIVEN_MAX 16384
#define DELIVER_POLL_MS 250 /* idle workers look for due rows this often */
/* A worker takes the webhook rows a fire hands it in memory (db_fire.h) only within this long of
 * the fire statement's start, under the name they were written for: its lease statement brings
 * it a given row only once due, DB_FIRE_HANDOVER_GRACE_MS after the fire, so a row it takes from
 * the handover cannot have come with an earlier lease too. Later ones are left to that lease. */
#define DELIVER_HANDOVER_AGE_MAX_MS 1000
/* Delivered answers are recorded together in one statement: once DELIVER_RECORD_MAX wait (the
 * answers of one round go in together, so a statement may hold more), the oldest after waiting
 * DELIVER_RECORD_LINGER_MS at most, at once when nothing else is in flight. Until then an answer
 * keeps its slot of the receiver's share and counts in tocsin_deliveries_in_flight: a kill sends
 * again at most a share per receiver and worker. */
#define DELIVER_RECORD_MAX 128
#define DELIVER_RECORD_LINGER_MS 5
/* The receivers' shares, circuits, Retry-After holds and the retry backoff, with their bounds
 * (DELIVER_CIRCUIT_*, DELIVER_BACKOFF_MAX_MS): deliver_policy.h. */

struct deliver_opts {
    const char *database_url;
    const char *instance_id; /* lease owners are "<instance_id>/<worker>" */
    int workers;
    int concurrency;      /* a worker's slots: rows in flight or queued, but a receiver's rows
                           * beyond its hold cap wait without one
                           * (deliver_policy_hold_cap, _held_max) */
    int per_receiver;     /* of those, at most this many for one receiver */
    int per_push_service; /* the same for a push service (one origin of Web Push endpoints) */
    int tenant_share_pct; /* of the slots, one tenant's rows take at most this percentage, and
                           * it has at most that many requests in flight (1..100; 0 = 100) */
    int64_t retry_base_ms;
    int64_t timeout_ms;
    int max_attempts;
    struct channel_opts channel; /* strings borrowed: they must outlive delivery */
};

struct deliver;

/* Starts opts->workers threads (connecting lazily). NULL when out of memory or a thread cannot
 * start. */
struct deliver *deliver_start(const struct deliver_opts *opts);
struct db_fire_handover;

/* The owner to give a fire's outbox rows to (a dispatch_owner_fn; arg is the struct deliver): the
 * registered worker that was given the fewest rows it has not loaded, under DELIVER_GIVEN_MAX;
 * *handover while it was given fewer than its slots (a burst beyond them is leased as room
 * frees up). Thread-safe, never blocks for long. */
int deliver_owner_for(void *arg, char *out, size_t cap, bool *handover);
/* Hands the rows handed (NULL: none; taken) to the worker they were given, and wakes it, or every
 * worker when they were written for anyone (a dispatch_fired_fn; arg is the struct deliver). A
 * worker handed all its rows does not run its lease statement for them. Thread-safe, never
 * blocks for long. */
void deliver_notify(void *arg, const char *owner, const int64_t *outbox_ids, size_t n,
                    struct db_fire_handover *handed);
/* Requests in flight in this process (for /metrics). Thread-safe. */
size_t deliver_in_flight(void);
/* Stops taking rows, gives back the rows not sent yet (another replica, or the next process,
 * sends them), lets the requests in flight finish (bounded by the request timeout plus a second)
 * and records them, joins the workers and frees d. NULL ok. */
void deliver_stop(struct deliver *d);

#endif
