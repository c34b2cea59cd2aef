/* deliver_policy.h -- the delivery workers' receiver policy (deliver.h), with no network, no
 * database and no clock of its own: every function is given the time (monotonic milliseconds).
 * A receiver's share of a worker's in-flight slots and its hold cap of the rows the worker holds,
 * its circuit (closed, open after repeated failures, half open: one probe decides), a Retry-After
 * hold, and the retry delay of a failed attempt (exponential backoff with jitter). One worker
 * thread owns each struct deliver_policy; nothing here locks. */
#ifndef TOCSIN_DELIVER_POLICY_H
#define TOCSIN_DELIVER_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DELIVER_BACKOFF_MAX_MS 14400000 /* a retry waits at most 4 h */
#define DELIVER_JITTER_PCT 20           /* each retry delay is spread by up to this percentage */
/* The circuit of a receiver opens after DELIVER_CIRCUIT_FAILURES failed attempts in a row that
 * show the receiver in trouble (channel_receiver_trouble: no answer, an HTTP 429 or 5xx, an SMTP
 * 4xx or 53x), for DELIVER_CIRCUIT_OPEN_MS, doubling each time a probe fails, up to
 * DELIVER_CIRCUIT_OPEN_MAX_MS; then one probe request decides. */
#define DELIVER_CIRCUIT_FAILURES 5
#define DELIVER_CIRCUIT_OPEN_MS 5000
#define DELIVER_CIRCUIT_OPEN_MAX_MS 300000

/* An answer that took at least this percentage of the request timeout counts against its
 * receiver as a failure does (deliver_policy_slow), success or not: a receiver that answers 2xx
 * just under the timeout holds a slot for most of it, and never tripped a circuit that way. */
#define DELIVER_SLOW_PCT 50

/* One receiver's state (a webhook, a push service or the SMTP server: the unit of isolation), as
 * one worker sees it. The worker keeps the counts with deliver_policy_queue/_unqueue/_sent/
 * _answered; the fields are read-only elsewhere. */
struct deliver_policy {
    size_t share;          /* requests it may have in flight (deliver_opts) */
    size_t hold;           /* of its rows held, how many take the worker's slots (hold cap) */
    size_t sending;        /* requests out, answered and not recorded included */
    size_t queued;         /* rows held for it, not sent yet */
    int failures;          /* failed attempts in a row (channel_receiver_trouble) */
    int64_t open_until_ms; /* circuit open until (monotonic); 0 = closed, passed = half open */
    int64_t open_ms;       /* how long it opened last */
    int64_t hold_until_ms; /* Retry-After: nothing before (monotonic), whatever answers meanwhile */
    bool probing;          /* half open: one request decides */
};

enum deliver_circuit {
    DELIVER_CIRCUIT_CLOSED,    /* up to its share in flight */
    DELIVER_CIRCUIT_OPEN,      /* nothing sent: failures in a row, or a Retry-After hold */
    DELIVER_CIRCUIT_HALF_OPEN, /* one probe request at a time decides */
};

/* What an answer did (deliver_policy_note): the caller logs it and gives the receiver's queued
 * rows back due when it may take requests again. */
enum deliver_policy_change {
    DELIVER_POLICY_SAME,   /* nothing the caller must act on */
    DELIVER_POLICY_CLOSED, /* it had been open or half open and is closed now */
    DELIVER_POLICY_OPENED, /* it opened for open_ms */
    DELIVER_POLICY_HELD,   /* it asked to wait (Retry-After): a hold began or grew */
};

/* A receiver's hold cap: of the rows a worker holds, how many of one receiver's take its slots
 * (the rest wait in its queue without one). At least 1. Pure. */
size_t deliver_policy_hold_cap(int concurrency, size_t share);
/* The rows a worker with `concurrency` slots may hold when one lease brings at most lease_max
 * rows: its slots and the rows beyond their receivers' hold caps. Pure. */
size_t deliver_policy_held_max(int concurrency, size_t lease_max);
/* A new receiver's state in p: nothing held, a closed circuit, share (>= 1) requests in flight
 * at most, its hold cap from the worker's concurrency. */
void deliver_policy_init(struct deliver_policy *p, size_t share, int concurrency);

/* The circuit's state at now; a Retry-After hold counts as open. */
enum deliver_circuit deliver_policy_circuit(const struct deliver_policy *p, int64_t now);
/* Whether its circuit is open after failures in a row (not for a Retry-After hold) at now: the
 * rows given to this worker for it go to other workers, whose own circuits decide for them; a
 * receiver that asked to wait keeps its rows until the hold ends. */
bool deliver_policy_failing(const struct deliver_policy *p, int64_t now);
/* Room for one more request now: a closed circuit under the share, or a half-open one with no
 * probe out and nothing else in flight. */
bool deliver_policy_may_send(const struct deliver_policy *p, int64_t now);
/* Whether the receiver's rows must not be leased now: its circuit is open, or what it holds
 * (sent and queued) fills its share (one row when half open). */
bool deliver_policy_left_out(const struct deliver_policy *p, int64_t now);
/* Whether what it holds fills its hold cap (it is left out of leases first). */
bool deliver_policy_at_cap(const struct deliver_policy *p);
/* The rows it holds beyond its hold cap, which take no slot of the worker. */
size_t deliver_policy_beyond(const struct deliver_policy *p);
/* Whether there is nothing to remember: no rows, a closed circuit, no failures, no hold. */
bool deliver_policy_idle(const struct deliver_policy *p, int64_t now);

/* A row was queued for the receiver. */
void deliver_policy_queue(struct deliver_policy *p);
/* A queued row left the queue (to be sent, given back or dropped). At least one was queued. */
void deliver_policy_unqueue(struct deliver_policy *p);
/* A request started at now, which deliver_policy_may_send allowed: it takes one slot of the
 * share; on a half-open circuit it is the probe. */
void deliver_policy_sent(struct deliver_policy *p, int64_t now);
/* A request's slot comes back (its failure was taken, its delivery recorded). Returns whether
 * what the receiver holds fell below its share here: its rows may be leased again. */
bool deliver_policy_answered(struct deliver_policy *p);

/* Accounts one answer (or its absence) at now: broken when it says the receiver itself is in
 * trouble; hold_ms > 0 when it also asked to be left alone that long (Retry-After on a 429 or
 * 5xx, looked at only when broken). A success closes the circuit but ends no Retry-After hold: it
 * answers a request sent before the receiver asked to wait. The DELIVER_CIRCUIT_FAILURES-th
 * failure in a row of a closed circuit, or a failed probe, opens it (DELIVER_POLICY_OPENED); a
 * failure while it is open leaves it as it is. A hold longer than the one on (DELIVER_POLICY_HELD)
 * sends nothing until it ends, whatever answers meanwhile: the circuit is open that long at
 * least, and the first request after it is the probe; the failure that asked for it opens no
 * shorter circuit. *wait_ms: for OPENED and HELD, how long from now the queued rows must wait
 * (the caller gives them back due then, without spending attempts); else 0. */
enum deliver_policy_change deliver_policy_note(struct deliver_policy *p, bool broken,
                                               int64_t hold_ms, int64_t now, int64_t *wait_ms);

/* Whether an answer that took took_ms of a request timeout of timeout_ms is slow
 * (DELIVER_SLOW_PCT): it counts toward the receiver's circuit like a failure. Pure. */
bool deliver_policy_slow(int64_t took_ms, int64_t timeout_ms);

/* A tenant's share of a worker's `concurrency` slots at pct percent (TOCSIN_DELIVERY_TENANT_SHARE,
 * 1..100): the rows of one tenant a worker holds that take slots, and the requests it has in
 * flight at most. At least 1. Pure. */
size_t deliver_policy_tenant_share(int concurrency, int pct);

/* The delay before retry number `attempt` (1 = the first retry): base * 2^(attempt-1), capped at
 * DELIVER_BACKOFF_MAX_MS, spread by +-DELIVER_JITTER_PCT with the random value r in [0, 1). Pure.
 */
int64_t deliver_policy_backoff_ms(int64_t base_ms, int attempt, double r);
/* The delay before the next attempt of a row after its attempt number `attempt` failed:
 * deliver_policy_backoff_ms, or the receiver's Retry-After (retry_after_s, 0 = none) when
 * later. Pure. */
int64_t deliver_policy_retry_ms(int64_t base_ms, int attempt, double r, int64_t retry_after_s);
/* Whether a row fails for good with its attempt number `attempt` (1 = the first): when it gives
 * up (the request can never succeed) or that was the last of max_attempts. Pure. */
bool deliver_policy_final(int attempt, int max_attempts, bool give_up);

#endif
