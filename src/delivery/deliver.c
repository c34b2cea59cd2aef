/* deliver.c -- the delivery workers of deliver.h: their threads, start and stop. Each worker runs
 * one loop: renew its lease when due, load the rows it was given or can lease for the receivers
 * that have room (outbox rows of full or broken receivers are left to wait in PostgreSQL, those
 * it was given for receivers whose circuit is open in it are passed on to anyone;
 * deliver_lease.c), build the bodies of rows sent for the first time (their meetings in one round
 * trip; deliver_job.c), start requests up to each receiver's share and each tenant's
 * (deliver_policy.c), wait on
 * libcurl for answers, record failed attempts at once and deliveries in groups
 * (deliver_record.c). */
#define _GNU_SOURCE /* pthread_setname_np */
#include "deliver.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "channel.h"
#include "db.h"
#include "deliver_internal.h"
#include "log.h"
#include "metrics.h"
#include "outbound.h"
#include "panic.h"
#include "timefmt.h"

#define STOP_SLACK_MS 1000 /* stopping: in-flight requests get their timeout plus this */
#define STOP_POLL_MS 100   /* stopping: the wait for answers wakes this often to renew */
/* A thread's name: "tocsin-deliv-<n>" (n = 1..TOCSIN_DELIVERY_WORKERS, at most 64). Linux takes
 * 15 characters and the NUL: "tocsin-deliver-" alone is 15. */
#define THREAD_NAME_MAX 16
#define THREAD_NAME "tocsin-deliv-"
_Static_assert(sizeof THREAD_NAME "64" <= THREAD_NAME_MAX, "a worker's name fits");

/* Requests in flight in this process, for /metrics: sent and not answered, or answered and not
 * recorded yet (what a kill would send again). */
static atomic_size_t in_flight;

void
deliver_in_flight_sub(size_t n)
{
    size_t was = atomic_fetch_sub(&in_flight, n);

    TOCSIN_ASSERT(was >= n);
}

/* ---- the database -------------------------------------------------------------------------- */

void
deliver_db_lost(struct worker *w, const char *what)
{
    if (!w->db_down)
        LOG_WARN("deliver: %s: %s", what, w->db ? db_errmsg(w->db) : "no database");
    w->db_down = true;
}

void
deliver_db_back(struct worker *w)
{
    if (w->db_down)
        LOG_INFO("deliver: database available again");
    w->db_down = false;
}

static bool
connected(struct worker *w, int64_t now)
{
    char err[DB_ERR_MAX];

    if (w->db != NULL)
        return true;
    if (now < w->db_retry_ms)
        return false;
    if ((w->db = db_open_in_order(w->d->database_url, err, sizeof err)) == NULL) {
        if (!w->db_down)
            LOG_WARN("deliver: database unavailable, retrying: %s", err);
        w->db_down = true;
        w->db_retry_ms = now + DB_RECONNECT_WAIT_MS;
    }
    return w->db != NULL;
}

/* ---- sending ------------------------------------------------------------------------------- */

/* Writes a push job's VAPID Authorization (its tenant's key pair, made on first use). 0, or -1
 * with the reason in err and *give_up set when the endpoint can never be signed for. */
static int
authorize_push(struct worker *w, struct job *j, char err[OUTBOUND_ERR_MAX], bool *give_up)
{
    char audience[WEBPUSH_ORIGIN_MAX + 1];

    if (channel_push_audience(&j->it, audience) != 0) {
        snprintf(err, OUTBOUND_ERR_MAX, "push endpoint has no usable origin");
        *give_up = true;
        return -1;
    }
    switch (push_keys_authorization(w->keys, w->db, j->it.tenant_id, audience,
                                    timefmt_now_ms() / 1000, j->req.authorization)) {
    case DB_ONE_RESULT:
        return 0;
    case DB_NO_RESULTS:
    case DB_HARD_ERROR:
        snprintf(err, OUTBOUND_ERR_MAX, "VAPID key could not be made or used");
        return -1;
    case DB_SOFT_ERROR:
        snprintf(err, OUTBOUND_ERR_MAX, "database unavailable reading the VAPID key");
        return -1;
    }
    TOCSIN_UNREACHABLE("a db_status outside its enum");
}

/* Starts j's request at now (its receiver may send, deliver_policy_may_send). When it cannot
 * start, the attempt is recorded as failed and j is freed. */
static void
start(struct worker *w, struct job *j, int64_t now)
{
    char err[OUTBOUND_ERR_MAX];
    bool give_up = false;

    if ((j->it.channel != CHANNEL_PUSH || authorize_push(w, j, err, &give_up) == 0) &&
        channel_start(&w->d->channel, w->out, &j->it, &j->req, j, err, &give_up) == 0) {
        j->sending = true;
        j->sent_ms = timefmt_mono_ms();
        j->ten->sending++;
        deliver_policy_sent(&j->rcv->pol, now);
        atomic_fetch_add(&in_flight, 1);
        return;
    }
    size_t n = 0;
    deliver_record_warn(j, err);
    deliver_record_add_failure(w, &n, j, 0, 0, err, give_up);
    deliver_record_failed(w, n);
    deliver_job_drop(w, j);
}

/* Starts what the receivers on the ready list have room for, each row when its tenant has too
 * (a receiver whose queued rows all wait for their tenants stays on the list). On a half-open
 * circuit the first request that goes out is the probe; a row that cannot even start is none
 * (deliver_policy_sent). */
static void
start_ready(struct worker *w, int64_t now)
{
    struct receiver **link = &w->ready;

    while (*link != NULL) {
        struct receiver *r = *link;
        struct job *j;
        while (r->pol.queued > 0 && deliver_policy_may_send(&r->pol, now) &&
               (j = deliver_job_dequeue_sendable(w, r)) != NULL)
            start(w, j, now);
        if (r->pol.queued == 0) {
            r->ready = false;
            *link = r->next_ready;
        } else {
            link = &r->next_ready;
        }
    }
}

/* Leases what the worker has room for and queues it. Returns whether the lease filled the room it
 * asked for: only then may more be waiting (rows given later wake the worker). */
static bool
claim(struct worker *w, int64_t now)
{
    bool more;
    size_t n = deliver_lease_claim(w, now, &more);

    if (n > 0)
        deliver_job_take(w, n);
    return more;
}

/* ---- the loop ------------------------------------------------------------------------------ */

/* How long the loop may wait for an answer before it has other work. */
static int64_t
wait_ms(struct worker *w, int64_t now)
{
    int64_t until = w->next_claim_ms;

    if (w->registered) {
        int64_t renew_at = w->renewed_ms + DELIVER_RENEW_MS;
        if (renew_at < w->renew_retry_ms)
            renew_at = w->renew_retry_ms;
        if (renew_at < until)
            until = renew_at;
    }
    if (w->n_answered > 0 && w->answered_ms + DELIVER_RECORD_LINGER_MS < until)
        until = w->answered_ms + DELIVER_RECORD_LINGER_MS;
    return until > now ? until - now : 0;
}

/* Takes the rows fires handed w in memory (before any lease: a lease never brings them). */
static void
take_handed(struct worker *w)
{
    pthread_mutex_lock(&w->pub_mu);
    struct db_fire_handover *h = w->handed_head;
    w->handed_head = w->handed_tail = NULL;
    pthread_mutex_unlock(&w->pub_mu);
    while (h != NULL) {
        struct db_fire_handover *next = h->next;
        deliver_job_take_handed(w, h);
        db_fire_handover_free(h);
        h = next;
    }
}

static void
round_of(struct worker *w)
{
    int64_t now = timefmt_mono_ms();
    bool woken = atomic_exchange(&w->woken, false);

    if (connected(w, now)) {
        deliver_lease_renew(w, now);
        take_handed(w);
        deliver_lease_pass_on(w, now);
        if (woken || now >= w->next_claim_ms) {
            bool more = claim(w, now);
            w->next_claim_ms = more ? now : now + DELIVER_POLL_MS;
        }
    } else {
        w->next_claim_ms = now + DELIVER_POLL_MS;
    }
    start_ready(w, now);
    size_t n =
        outbound_run(w->out, wait_ms(w, timefmt_mono_ms()), w->done, (size_t)w->d->concurrency);
    if (n > 0)
        deliver_record_answers(w, n);
    deliver_record_flush(w, timefmt_mono_ms(), false);
}

/* Stopping: the queued rows go back at once, the requests in flight finish (bounded) and are
 * recorded. */
static void
wind_down(struct worker *w)
{
    int64_t deadline = timefmt_mono_ms() + w->d->timeout_ms + STOP_SLACK_MS;

    for (struct receiver *r = w->ready; r != NULL; r = r->next_ready)
        deliver_lease_release(w, r, 0);
    w->ready = NULL;
    while (outbound_active(w->out) > 0 && timefmt_mono_ms() < deadline) {
        /* The rows still out stay this worker's, and the answers are recorded as they come: a
         * receiver that takes its time must not hand the others to another replica to send
         * again. */
        if (w->registered && w->db != NULL)
            deliver_lease_renew(w, timefmt_mono_ms());
        int64_t wait = w->n_answered > 0 ? DELIVER_RECORD_LINGER_MS : STOP_POLL_MS;
        size_t n = outbound_run(w->out, wait, w->done, (size_t)w->d->concurrency);
        if (n > 0)
            deliver_record_answers(w, n);
        deliver_record_flush(w, timefmt_mono_ms(), false);
    }
    deliver_record_flush(w, timefmt_mono_ms(), true);
    deliver_lease_leave(w);
}

/* A worker thread, named "tocsin-deliv-<index + 1>" for top -H and gdb (a name that does not
 * take is no reason to stop). */
static void *
worker_main(void *arg)
{
    struct worker *w = arg;
    char name[sizeof THREAD_NAME + 11]; /* any int: the compiler cannot know the bound */

    snprintf(name, sizeof name, THREAD_NAME "%d", w->index + 1);
    (void)pthread_setname_np(pthread_self(), name);
    int64_t last_sweep = timefmt_mono_ms();
    while (!atomic_load(&w->d->stop)) {
        round_of(w);
        if (timefmt_mono_ms() - last_sweep > RECEIVER_IDLE_MS) {
            deliver_job_forget_idle(w, timefmt_mono_ms());
            last_sweep = timefmt_mono_ms();
        }
    }
    wind_down(w);
    return NULL;
}

/* ---- start and stop ------------------------------------------------------------------------ */

static void
worker_fini(struct worker *w)
{
    outbound_free(w->out); /* first: a transfer still out past the stop uses its job's body */
    while (w->n_held > 0)
        deliver_job_drop(w, w->held[0]);
    for (size_t b = 0; b < RECEIVER_BUCKETS; b++)
        while (w->receivers[b] != NULL) {
            struct receiver *r = w->receivers[b];
            w->receivers[b] = r->next;
            if (r->pol.open_until_ms != 0)
                metrics_circuits_add(r->channel, -1);
            free(r);
        }
    for (struct db_fire_handover *h = w->handed_head, *next; h != NULL; h = next) {
        next = h->next;
        db_fire_handover_free(h);
    }
    push_keys_free(w->keys);
    db_close(w->db);
    free(w->held);
    free(w->claimed);
    free(w->done);
    free(w->ids);
    free(w->texts);
    free(w->texts2);
    free(w->fails);
    free(w->fail_channels);
    free(w->fail_final);
    free(w->jobs);
    free(w->answered);
    free(w->answered_status);
    free(w->answered_took);
    free(w->answered_recorded);
    free(w->verdicts);
    pthread_mutex_destroy(&w->pub_mu);
}

static int
worker_init(struct deliver *d, struct worker *w, int i)
{
    size_t c = deliver_policy_held_max(d->concurrency, DB_OUTBOX_CLAIM_MAX);

    w->d = d;
    w->max_held = c;
    w->index = i;
    pthread_mutex_init(&w->pub_mu, NULL);
    w->seed = (unsigned)time(NULL) ^ (unsigned)(i * 7919);
    atomic_init(&w->woken, false);
    atomic_init(&w->live, false);
    atomic_init(&w->given, 0);
    w->out = outbound_new((size_t)d->concurrency);
    w->keys = push_keys_new(d->channel.vapid_subject);
    /* Arrays of pointers: sizeof *p is a pointer's size, as meant. */
    w->held = calloc(c, sizeof *w->held); // NOLINT(bugprone-sizeof-expression)
    w->claimed = calloc(DB_OUTBOX_CLAIM_MAX, sizeof *w->claimed);
    w->done = calloc(c, sizeof *w->done);
    w->ids = calloc(c, sizeof *w->ids);
    w->texts = calloc(c, sizeof *w->texts);
    w->texts2 = calloc(c, sizeof *w->texts2);
    w->fails = calloc(c, sizeof *w->fails);
    w->fail_channels = calloc(c, sizeof *w->fail_channels);
    w->fail_final = calloc(c, sizeof *w->fail_final);
    w->jobs = calloc(c, sizeof *w->jobs); // NOLINT(bugprone-sizeof-expression)
    w->verdicts = calloc(c, sizeof *w->verdicts);
    w->answered = calloc(c, sizeof *w->answered); // NOLINT(bugprone-sizeof-expression)
    w->answered_status = calloc(c, sizeof *w->answered_status);
    w->answered_took = calloc(c, sizeof *w->answered_took);
    w->answered_recorded = calloc(c, sizeof *w->answered_recorded);
    return w->out && w->keys && w->held && w->claimed && w->done && w->ids && w->texts &&
                   w->texts2 && w->fails && w->fail_channels && w->fail_final && w->jobs &&
                   w->verdicts && w->answered && w->answered_status && w->answered_took &&
                   w->answered_recorded
               ? 0
               : -1;
}

static void
destroy(struct deliver *d)
{
    for (int i = 0; d->workers != NULL && i < d->n_workers; i++)
        worker_fini(&d->workers[i]);
    free(d->workers);
    free(d->database_url);
    free(d->instance_id);
    free(d);
}

struct deliver *
deliver_start(const struct deliver_opts *opts)
{
    struct deliver *d = calloc(1, sizeof *d);

    if (d == NULL)
        return NULL;
    atomic_init(&d->stop, false);
    d->retry_base_ms = opts->retry_base_ms;
    d->timeout_ms = opts->timeout_ms;
    d->channel = opts->channel;
    d->channel.timeout_ms = opts->timeout_ms;
    d->max_attempts = opts->max_attempts;
    d->concurrency = opts->concurrency;
    d->per_receiver = opts->per_receiver;
    d->per_push_service = opts->per_push_service;
    d->tenant_share = deliver_policy_tenant_share(
        opts->concurrency, opts->tenant_share_pct > 0 ? opts->tenant_share_pct : 100);
    d->database_url = strdup(opts->database_url);
    d->instance_id = strdup(opts->instance_id);
    d->workers = calloc((size_t)opts->workers, sizeof *d->workers);
    if (d->database_url == NULL || d->instance_id == NULL || d->workers == NULL) {
        destroy(d);
        return NULL;
    }
    for (int i = 0; i < opts->workers; i++) {
        struct worker *w = &d->workers[i];
        d->n_workers = i + 1;
        if (worker_init(d, w, i) != 0 || pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            deliver_stop(d);
            return NULL;
        }
        w->started = true;
    }
    return d;
}

int
deliver_owner_for(void *arg, char *out, size_t cap, bool *handover)
{
    struct deliver *d = arg;
    struct worker *best = NULL;

    for (int i = 0; d != NULL && i < d->n_workers; i++) {
        struct worker *w = &d->workers[i];
        size_t given = atomic_load(&w->given);
        if (atomic_load(&w->live) && given < DELIVER_GIVEN_MAX &&
            (best == NULL || given < atomic_load(&best->given)))
            best = w;
    }
    if (best == NULL)
        return -1;
    *handover = atomic_load(&best->given) < (size_t)d->concurrency;
    pthread_mutex_lock(&best->pub_mu);
    int ok = atomic_load(&best->live) && (size_t)snprintf(out, cap, "%s", best->pub_owner) < cap;
    pthread_mutex_unlock(&best->pub_mu);
    return ok ? 0 : -1;
}

/* Appends h to w's handed rows (under pub_mu). */
static void
hand_to(struct worker *w, struct db_fire_handover *h)
{
    h->next = NULL;
    if (w->handed_tail != NULL)
        w->handed_tail->next = h;
    else
        w->handed_head = h;
    w->handed_tail = h;
}

void
deliver_notify(void *arg, const char *owner, const int64_t *outbox_ids, size_t n,
               struct db_fire_handover *handed)
{
    struct deliver *d = arg;
    /* The rows not handed over must be leased: they are due now. */
    bool lease = handed == NULL || handed->n < n;

    (void)outbox_ids;
    for (int i = 0; d != NULL && n > 0 && i < d->n_workers; i++) {
        struct worker *w = &d->workers[i];
        pthread_mutex_lock(&w->pub_mu);
        bool mine = owner != NULL && strcmp(owner, w->pub_owner) == 0;
        if (mine)
            atomic_fetch_add(&w->given, n);
        if (mine && handed != NULL) {
            hand_to(w, handed);
            handed = NULL;
        }
        pthread_mutex_unlock(&w->pub_mu);
        if (owner != NULL && !mine)
            continue; /* given to another worker: nothing for this one */
        if (lease)
            atomic_store(&w->woken, true);
        outbound_wakeup(w->out);
    }
    /* Its worker took another name: the rows are that old name's, anyone's once it lapsed. */
    if (handed != NULL)
        metrics_add(METRIC_DELIVERY_HANDED_LEFT, handed->n);
    db_fire_handover_free(handed);
}

size_t
deliver_in_flight(void)
{
    return atomic_load(&in_flight);
}

void
deliver_stop(struct deliver *d)
{
    if (d == NULL)
        return;
    atomic_store(&d->stop, true);
    for (int i = 0; i < d->n_workers; i++) {
        if (d->workers[i].out != NULL)
            outbound_wakeup(d->workers[i].out);
    }
    for (int i = 0; i < d->n_workers; i++)
        if (d->workers[i].started)
            pthread_join(d->workers[i].thread, NULL);
    destroy(d);
}
