/* deliver_lease.c -- a delivery worker's lease (deliver_internal.h): one row of delivery_owners
 * under a name the worker registers, renews every DELIVER_RENEW_MS and publishes to the dispatch
 * thread (deliver_owner_for), the outbox rows it leases for the receivers that have room, and the
 * rows it gives back unsent. Runs on the worker's thread, with its connection. */
#include <stdio.h>

#include "db.h"
#include "db_outbox.h"
#include "deliver_internal.h"
#include "log.h"
#include "outbound.h"
#include "panic.h"
#include "timefmt.h"

_Static_assert(DELIVER_RENEW_MS + DB_OUTBOX_RENEW_MARGIN_MS < DELIVER_LEASE_MS,
               "a renewal on time finds its lease alive");

void
deliver_lease_publish(struct worker *w, const char *owner)
{
    pthread_mutex_lock(&w->pub_mu);
    snprintf(w->pub_owner, sizeof w->pub_owner, "%s", owner != NULL ? owner : "");
    atomic_store(&w->given, 0);
    atomic_store(&w->live, owner != NULL);
    pthread_mutex_unlock(&w->pub_mu);
}

/* Drops the rows queued and not sent: their lease may be gone, so another worker may send them. */
static void
drop_queued(struct worker *w)
{
    for (struct receiver *r = w->ready; r != NULL; r = r->next_ready) {
        struct job *j;
        while ((j = deliver_job_dequeue(r)) != NULL)
            deliver_job_drop(w, j);
    }
}

/* Registers the worker under a new name: the rows of an earlier name are orphans once it lapsed,
 * taken by whoever looks first (this worker included). */
static void
register_owner(struct worker *w, int64_t now)
{
    int64_t token = timefmt_now_ms();

    w->token = token > w->token ? token : w->token + 1;
    snprintf(w->owner, sizeof w->owner, "%s/%d/%lld", w->d->instance_id, w->index,
             (long long)w->token);
    if (db_outbox_owner_register(w->db, w->owner, DELIVER_LEASE_MS) != DB_ONE_RESULT) {
        deliver_db_lost(w, "cannot register a delivery lease");
        return;
    }
    w->registered = true;
    w->renewed_ms = now;
    deliver_lease_publish(w, w->owner);
}

/* Renews the worker's lease every DELIVER_RENEW_MS, and before anything else after a statement
 * failed (the connection may have been replaced, and with it the backend the lease names): one
 * row, however many rows it holds. When it had lapsed (the worker stalled for DELIVER_LEASE_MS,
 * or its backend is not the one that took it), the rows it holds may be another worker's now:
 * the queued ones are dropped and it starts again under a new name. When the renewal fails, the
 * queued rows are dropped too, and no rows are given to it until it works again. */
void
deliver_lease_renew(struct worker *w, int64_t now)
{
    if (!w->registered) {
        register_owner(w, now);
        return;
    }
    if ((now - w->renewed_ms < DELIVER_RENEW_MS && !w->db_down) || now < w->renew_retry_ms)
        return;
    switch (db_outbox_owner_renew(w->db, w->owner, DELIVER_LEASE_MS)) {
    case DB_ONE_RESULT:
        w->renewed_ms = now;
        w->renew_retry_ms = 0;
        deliver_db_back(w);
        if (!atomic_load(&w->live)) /* held back while the renewals failed */
            deliver_lease_publish(w, w->owner);
        return;
    case DB_NO_RESULTS:
        LOG_WARN("deliver: the lease of %s lapsed or its connection was replaced; its rows go to "
                 "whoever takes them first",
                 w->owner);
        deliver_lease_publish(w, NULL);
        drop_queued(w);
        w->registered = false;
        register_owner(w, now);
        return;
    case DB_SOFT_ERROR:
    case DB_HARD_ERROR:
        break;
    }
    deliver_db_lost(w, "cannot renew the delivery lease; dropping the rows not sent yet");
    w->renew_retry_ms = now + DELIVER_RENEW_RETRY_MS;
    if (now - w->renewed_ms >= DELIVER_LEASE_MS)
        deliver_lease_publish(w, NULL);
    drop_queued(w);
}

/* A test of one receiver's policy at now. */
typedef bool (*receiver_test)(const struct deliver_policy *p, int64_t now);

/* Appends to out[*n..max) the keys of w's receivers that pass test, in bucket order. */
static void
keys_where(const struct worker *w, receiver_test test, int64_t now, const char **out, size_t max,
           size_t *n)
{
    for (size_t b = 0; b < RECEIVER_BUCKETS && *n < max; b++)
        for (struct receiver *r = w->receivers[b]; r != NULL && *n < max; r = r->next)
            if (test(&r->pol, now))
                out[(*n)++] = r->key;
}

/* Left out of a lease (open, half open with a probe at hand, or a full share) but below the hold
 * cap: the receivers excluded() names after those at their cap. */
static bool
left_out_below_cap(const struct deliver_policy *p, int64_t now)
{
    return !deliver_policy_at_cap(p) && deliver_policy_left_out(p, now);
}

/* w->ids[0..n): the rows w holds (its requests out and queued), which no statement may take from
 * it. Returns n, w->n_held. */
static size_t
held_ids(struct worker *w)
{
    for (size_t i = 0; i < w->n_held; i++)
        w->ids[i] = w->held[i]->it.id;
    return w->n_held;
}

/* Receivers whose rows must not be leased now: a full share, an open circuit, a probe out. Those
 * holding their hold cap come first: past DB_OUTBOX_EXCLUDE_MAX the others may be leased again,
 * never they. Sets *beyond to the rows held beyond the receivers' caps (they take no slot). */
static size_t
excluded(const struct worker *w, int64_t now, const char **out, size_t max, size_t *beyond)
{
    size_t n = 0, held = 0;

    *beyond = 0;
    for (size_t b = 0; b < RECEIVER_BUCKETS; b++)
        for (struct receiver *r = w->receivers[b]; r != NULL; r = r->next) {
            held += r->pol.sending + r->pol.queued;
            *beyond += deliver_policy_beyond(&r->pol);
            if (deliver_policy_at_cap(&r->pol) && n < max)
                out[n++] = r->key;
        }
    /* Between rounds every row held is queued or sending for its receiver, and nothing else is. */
    TOCSIN_ASSERT(held == w->n_held);
    keys_where(w, left_out_below_cap, now, out, max, &n);
    return n;
}

/* Tenants whose rows must not be leased now: those holding their share of the slots. Sets
 * *beyond to the rows held beyond the tenants' shares (they take no slot). */
static size_t
tenants_full(const struct worker *w, int64_t *out, size_t max, size_t *beyond)
{
    size_t n = 0;

    *beyond = 0;
    for (size_t b = 0; b < TENANT_BUCKETS; b++)
        for (const struct tenant *t = w->tenants[b]; t != NULL; t = t->next) {
            if (t->held > w->d->tenant_share)
                *beyond += t->held - w->d->tenant_share;
            if (deliver_job_tenant_full(w, t) && n < max)
                out[n++] = t->id; /* past max, the rest may be leased: they wait queued */
        }
    return n;
}

/* The slots not taken: rows held beyond their receivers' hold caps, or beyond their tenants'
 * shares, take none. Either bound alone keeps what is in flight within the slots (a request
 * takes a slot under both), so the larger of the two is left out: counting both could count a
 * row twice, and the lease would bring rows with no slot to go to. */
static size_t
free_slots(const struct worker *w, size_t beyond_receivers, size_t beyond_tenants)
{
    size_t beyond = beyond_receivers > beyond_tenants ? beyond_receivers : beyond_tenants;
    size_t taken = w->n_held - beyond;

    return taken < (size_t)w->d->concurrency ? (size_t)w->d->concurrency - taken : 0;
}

size_t
deliver_lease_claim(struct worker *w, int64_t now, bool *more)
{
    const char *exclude[DB_OUTBOX_EXCLUDE_MAX];
    int64_t tenants[DB_OUTBOX_EXCLUDE_MAX];
    size_t beyond, beyond_t, n = 0;
    size_t n_ex = excluded(w, now, exclude, DB_OUTBOX_EXCLUDE_MAX, &beyond);
    size_t n_ten = tenants_full(w, tenants, DB_OUTBOX_EXCLUDE_MAX, &beyond_t);
    size_t room = free_slots(w, beyond, beyond_t);

    *more = false;
    if (room > w->max_held - w->n_held)
        room = w->max_held - w->n_held;
    if (room > DB_OUTBOX_CLAIM_MAX)
        room = DB_OUTBOX_CLAIM_MAX;
    if (room == 0 || !w->registered)
        return 0;
    size_t n_held = held_ids(w);
    /* Orphans at most once a poll: a dead replica's rows wait DELIVER_POLL_MS at most for some
     * worker's look, and a worker that leases often does not probe every owner each time. */
    bool orphans = now - w->orphans_ms >= DELIVER_POLL_MS;
    if (orphans)
        w->orphans_ms = now;
    struct db_outbox_claim_args a = {.owner = w->owner,
                                     .orphans = orphans,
                                     .exclude = exclude,
                                     .n_exclude = n_ex,
                                     .tenants = tenants,
                                     .n_tenants = n_ten,
                                     .held = w->ids,
                                     .n_held = n_held};
    if (db_outbox_claim(w->db, &a, w->claimed, room, &n) != DB_ONE_RESULT) {
        deliver_db_lost(w, "cannot lease outbox rows");
        return 0;
    }
    TOCSIN_ASSERT(n <= room); /* db_outbox_claim takes at most what it was asked */
    deliver_db_back(w);
    size_t given = 0;
    for (size_t i = 0; i < n; i++)
        given += w->claimed[i].given;
    deliver_lease_loaded(w, given);
    *more = n == room;
    return n;
}

void
deliver_lease_pass_on(struct worker *w, int64_t now)
{
    const char *failing[DB_OUTBOX_EXCLUDE_MAX];
    size_t n = 0;
    int64_t passed = 0;

    if (!w->registered || now - w->passed_ms < DELIVER_POLL_MS)
        return;
    w->passed_ms = now;
    keys_where(w, deliver_policy_failing, now, failing, DB_OUTBOX_EXCLUDE_MAX, &n);
    if (n == 0)
        return;
    size_t n_held = held_ids(w);
    if (db_outbox_pass_on(w->db, w->owner, failing, n, w->ids, n_held, &passed) != DB_ONE_RESULT) {
        deliver_db_lost(w, "cannot pass on the rows of receivers whose circuit is open");
        return;
    }
    deliver_lease_loaded(w, (size_t)passed); /* given no more */
}

void
deliver_lease_loaded(struct worker *w, size_t n)
{
    for (size_t was = atomic_load(&w->given);
         !atomic_compare_exchange_weak(&w->given, &was, was > n ? was - n : 0);)
        ;
}

void
deliver_lease_give_back(struct worker *w, size_t n, int64_t delay_ms)
{
    if (n > 0 && w->db != NULL &&
        db_outbox_release(w->db, w->owner, w->ids, n, delay_ms) != DB_ONE_RESULT)
        deliver_db_lost(
            w, "rows not given back (still this worker's: its next lease reads them again)");
}

void
deliver_lease_release(struct worker *w, struct receiver *r, int64_t delay_ms)
{
    size_t n = 0;
    struct job *j;

    while ((j = deliver_job_dequeue(r)) != NULL) {
        w->ids[n++] = j->it.id;
        deliver_job_drop(w, j);
    }
    deliver_lease_give_back(w, n, delay_ms);
}

void
deliver_lease_leave(struct worker *w)
{
    deliver_lease_publish(w, NULL);
    if (w->registered && w->db != NULL && outbound_active(w->out) == 0 &&
        db_outbox_owner_leave(w->db, w->owner) != DB_ONE_RESULT)
        deliver_db_lost(w, "rows not given back (they go to others once the lease lapses)");
}
