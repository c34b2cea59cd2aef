/* deliver_policy.c -- the receiver policy of deliver_policy.h: shares and hold caps, circuits,
 * Retry-After holds and retry backoff. Pure state transitions on the time given: the worker loop
 * (deliver.c) logs what changed and gives rows back (deliver_lease.c). */
#include "deliver_policy.h"

#include "panic.h"

/* A worker's slots (TOCSIN_DELIVERY_CONCURRENCY) bound the rows it holds, but one receiver's rows
 * take at most its hold cap of them: a fraction of the slots, or its share when larger. A lease
 * may bring one receiver more rows than that (a burst the fire statement gave this worker, read
 * in id order); they wait in its queue without a slot, and it is left out of leases while it
 * holds its share, so a slow receiver's backlog never keeps the worker from other receivers'
 * rows. Cutting the lease per receiver instead cost PostgreSQL each lease's whole window of given
 * rows (twice its CPU in a 50,000 burst). With the defaults (256 slots, shares 16 and 64) a
 * receiver takes 64 slots at most. */
#define HOLD_DIVISOR 4

size_t
deliver_policy_hold_cap(int concurrency, size_t share)
{
    size_t part = (size_t)concurrency / HOLD_DIVISOR;

    return share > part ? share : part > 0 ? part : 1;
}

/* Slots taken count every receiver at its cap at most, and they never pass the slots, so fewer
 * than HOLD_DIVISOR * 2 receivers hold more than their cap at once (a cap is at least a
 * HOLD_DIVISOR-th of the slots, rounded down), each with at most one lease's rows beyond it: it is
 * left out of leases from then on. A bound, not a guess: a lease never asks for more than fits. */
size_t
deliver_policy_held_max(int concurrency, size_t lease_max)
{
    return (size_t)concurrency + (size_t)HOLD_DIVISOR * 2 * lease_max;
}

void
deliver_policy_init(struct deliver_policy *p, size_t share, int concurrency)
{
    TOCSIN_ASSERT(share >= 1); /* the settings' lower bound */
    *p = (struct deliver_policy){.share = share,
                                 .hold = deliver_policy_hold_cap(concurrency, share)};
}

/* A probe is out only on a half-open circuit: one that opened and whose time ran out. */
static void
check(const struct deliver_policy *p)
{
    TOCSIN_ASSERT(p->sending <= p->share);
    TOCSIN_ASSERT(!p->probing || (p->open_until_ms != 0 && p->sending <= 1));
}

/* Nothing may be sent: a Retry-After hold, or an open circuit whose time has not run out. */
static bool
shut(const struct deliver_policy *p, int64_t now)
{
    return now < p->hold_until_ms || (p->open_until_ms != 0 && now < p->open_until_ms);
}

enum deliver_circuit
deliver_policy_circuit(const struct deliver_policy *p, int64_t now)
{
    if (shut(p, now))
        return DELIVER_CIRCUIT_OPEN;
    return p->open_until_ms != 0 ? DELIVER_CIRCUIT_HALF_OPEN : DELIVER_CIRCUIT_CLOSED;
}

bool
deliver_policy_failing(const struct deliver_policy *p, int64_t now)
{
    return now >= p->hold_until_ms && p->open_until_ms != 0 && now < p->open_until_ms;
}

bool
deliver_policy_may_send(const struct deliver_policy *p, int64_t now)
{
    if (shut(p, now))
        return false;
    if (p->open_until_ms != 0) /* half open */
        return !p->probing && p->sending == 0;
    return p->sending < p->share;
}

bool
deliver_policy_left_out(const struct deliver_policy *p, int64_t now)
{
    return shut(p, now) || p->sending + p->queued >= (p->open_until_ms != 0 ? 1 : p->share);
}

bool
deliver_policy_at_cap(const struct deliver_policy *p)
{
    return p->sending + p->queued >= p->hold;
}

size_t
deliver_policy_beyond(const struct deliver_policy *p)
{
    size_t h = p->sending + p->queued;

    return h > p->hold ? h - p->hold : 0;
}

bool
deliver_policy_idle(const struct deliver_policy *p, int64_t now)
{
    return p->sending == 0 && p->queued == 0 && p->open_until_ms == 0 && p->failures == 0 &&
           now >= p->hold_until_ms;
}

void
deliver_policy_queue(struct deliver_policy *p)
{
    p->queued++;
}

void
deliver_policy_unqueue(struct deliver_policy *p)
{
    TOCSIN_ASSERT(p->queued > 0);
    p->queued--;
}

/* Half open: the first request that goes out decides. A row that cannot even start (its
 * subscription's keys are bad, say) is never counted here, so it says nothing of the receiver:
 * the next one is the probe. */
void
deliver_policy_sent(struct deliver_policy *p, int64_t now)
{
    TOCSIN_ASSERT(deliver_policy_may_send(p, now));
    p->sending++;
    if (p->open_until_ms != 0)
        p->probing = true;
    check(p);
}

/* A receiver whose rows filled its share (sent and queued: excluded from leases) has a slot
 * again: rows for it can be leased now, not at the next poll, or the slot idles until then. The
 * total falls by one per answer (a queued row that starts moves within it), so it passes the
 * share exactly here. */
bool
deliver_policy_answered(struct deliver_policy *p)
{
    TOCSIN_ASSERT(p->sending > 0);
    return p->sending-- + p->queued == p->share;
}

/* The circuit's part of an answer: a success closes it, failures in a row open it. */
static enum deliver_policy_change
circuit_note(struct deliver_policy *p, bool broken, int64_t now)
{
    if (!broken) {
        bool was_open = p->open_until_ms != 0;
        p->failures = 0;
        p->open_until_ms = p->open_ms = 0;
        p->probing = false;
        return was_open ? DELIVER_POLICY_CLOSED : DELIVER_POLICY_SAME;
    }
    p->failures++;
    if (!p->probing && (p->open_until_ms != 0 || p->failures < DELIVER_CIRCUIT_FAILURES))
        return DELIVER_POLICY_SAME;
    p->open_ms = p->probing ? p->open_ms * 2 : DELIVER_CIRCUIT_OPEN_MS;
    if (p->open_ms < DELIVER_CIRCUIT_OPEN_MS) /* after a shorter Retry-After hold */
        p->open_ms = DELIVER_CIRCUIT_OPEN_MS;
    if (p->open_ms > DELIVER_CIRCUIT_OPEN_MAX_MS)
        p->open_ms = DELIVER_CIRCUIT_OPEN_MAX_MS;
    p->open_until_ms = now + p->open_ms;
    p->probing = false;
    return DELIVER_POLICY_OPENED;
}

/* A Retry-After of ms: 0 when it changes nothing (a hold as long is on), else how long from now
 * the queue must wait (the circuit may be open longer than the hold). Delaying only the row that
 * got the answer sent the rest of the queue into the same refusal, so the whole receiver waits. */
static int64_t
hold_off(struct deliver_policy *p, int64_t ms, int64_t now)
{
    if (ms <= 0 || p->hold_until_ms >= now + ms)
        return 0;
    p->hold_until_ms = now + ms;
    if (p->open_until_ms < now + ms)
        p->open_until_ms = now + ms;
    if (p->open_ms < ms)
        p->open_ms = ms;
    p->probing = false;
    return p->open_until_ms - now;
}

/* The hold comes first: the other way round, the failure that opened the circuit gave the queue
 * back due in DELIVER_CIRCUIT_OPEN_MS, before the time asked for. After a hold the circuit is
 * open with no probe out, so the failure leaves it as it is. */
enum deliver_policy_change
deliver_policy_note(struct deliver_policy *p, bool broken, int64_t hold_ms, int64_t now,
                    int64_t *wait_ms)
{
    check(p);
    int64_t held = broken ? hold_off(p, hold_ms, now) : 0;
    enum deliver_policy_change c = circuit_note(p, broken, now);

    if (held > 0) {
        TOCSIN_ASSERT(c == DELIVER_POLICY_SAME);
        *wait_ms = held;
        return DELIVER_POLICY_HELD;
    }
    *wait_ms = c == DELIVER_POLICY_OPENED ? p->open_ms : 0;
    return c;
}

bool
deliver_policy_slow(int64_t took_ms, int64_t timeout_ms)
{
    return took_ms * 100 >= timeout_ms * DELIVER_SLOW_PCT;
}

/* Rounded down, so that the shares of 100 / pct tenants never pass the slots: the tenant that
 * fills its share leaves the rest to the others. */
size_t
deliver_policy_tenant_share(int concurrency, int pct)
{
    size_t share = (size_t)concurrency * (size_t)pct / 100;

    return share > 0 ? share : 1;
}

int64_t
deliver_policy_backoff_ms(int64_t base_ms, int attempt, double r)
{
    int64_t d = base_ms;

    for (int i = 1; i < attempt && d < DELIVER_BACKOFF_MAX_MS; i++)
        d *= 2;
    if (d > DELIVER_BACKOFF_MAX_MS)
        d = DELIVER_BACKOFF_MAX_MS;
    return d + (int64_t)((double)d * DELIVER_JITTER_PCT / 100.0 * (2.0 * r - 1.0));
}

int64_t
deliver_policy_retry_ms(int64_t base_ms, int attempt, double r, int64_t retry_after_s)
{
    int64_t delay = deliver_policy_backoff_ms(base_ms, attempt, r);

    if (retry_after_s * 1000 > delay) /* the receiver asked for a later retry */
        delay = retry_after_s * 1000;
    return delay;
}

bool
deliver_policy_final(int attempt, int max_attempts, bool give_up)
{
    return give_up || attempt >= max_attempts;
}
