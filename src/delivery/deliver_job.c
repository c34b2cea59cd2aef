/* deliver_job.c -- a delivery worker's jobs and receivers (deliver_internal.h): the rows a lease
 * brought become jobs, their bodies built from their meetings when sent for the first time, each
 * queued for its receiver (found or made in the worker's table, forgotten when idle); a job is
 * freed once its answer is recorded or its row given back. Runs on the worker's thread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "channel.h"
#include "codec.h"
#include "db.h"
#include "db_outbox.h"
#include "db_series.h"
#include "deliver_internal.h"
#include "metrics.h"
#include "panic.h"
#include "timefmt.h"

/* build_bodies reads the meetings of one lease's rows in one statement. */
_Static_assert(DB_OUTBOX_CLAIM_MAX <= DB_GET_MANY_MAX, "a lease's meetings are one get_many");

/* ---- receivers ----------------------------------------------------------------------------- */

static size_t
bucket(const char *key)
{
    uint64_t h = 14695981039346656037ULL;

    for (; *key != '\0'; key++)
        h = (h ^ (unsigned char)*key) * 1099511628211ULL; /* FNV-1a */
    return h % RECEIVER_BUCKETS;
}

static struct receiver **
receiver_link(struct worker *w, const char *key)
{
    struct receiver **r = &w->receivers[bucket(key)];

    while (*r != NULL && strcmp((*r)->key, key) != 0)
        r = &(*r)->next;
    return r;
}

/* The receiver of a row: its key names one channel's receiver (a push service's origin is never
 * a webhook id), so the share set when the key is first seen holds for all its rows. */
static struct receiver *
receiver_get(struct worker *w, const struct db_outbox_item *it)
{
    struct receiver **r = receiver_link(w, it->receiver);

    if (*r == NULL && (*r = calloc(1, sizeof **r)) != NULL) {
        snprintf((*r)->key, sizeof(*r)->key, "%s", it->receiver);
        (*r)->channel = it->channel;
        int share = it->channel == CHANNEL_PUSH ? w->d->per_push_service : w->d->per_receiver;
        deliver_policy_init(&(*r)->pol, (size_t)share, w->d->concurrency);
    }
    return *r;
}

/* ---- tenants ------------------------------------------------------------------------------- */

static struct tenant **
tenant_link(struct worker *w, int64_t id)
{
    struct tenant **t = &w->tenants[(uint64_t)id % TENANT_BUCKETS];

    while (*t != NULL && (*t)->id != id)
        t = &(*t)->next;
    return t;
}

/* The tenant of a row, made when the worker holds none of its rows yet; NULL when out of
 * memory. */
static struct tenant *
tenant_get(struct worker *w, int64_t id)
{
    struct tenant **t = tenant_link(w, id);

    if (*t == NULL && (*t = calloc(1, sizeof **t)) != NULL)
        (*t)->id = id;
    return *t;
}

bool
deliver_job_tenant_may_send(const struct worker *w, const struct tenant *t)
{
    return t->sending < w->d->tenant_share;
}

bool
deliver_job_tenant_full(const struct worker *w, const struct tenant *t)
{
    return t->held >= w->d->tenant_share;
}

/* One row of t fewer held. A tenant that falls below its share here has rows leased for it now,
 * not at the next poll; one that holds nothing is forgotten. */
static void
tenant_unhold(struct worker *w, struct tenant *t)
{
    TOCSIN_ASSERT(t->held > 0 && t->sending <= t->held);
    if (t->held-- == w->d->tenant_share)
        w->next_claim_ms = timefmt_mono_ms();
    if (t->held > 0)
        return;
    struct tenant **link = tenant_link(w, t->id);
    TOCSIN_ASSERT(*link == t);
    *link = t->next;
    free(t);
}

void
deliver_job_forget_idle(struct worker *w, int64_t now)
{
    for (size_t b = 0; b < RECEIVER_BUCKETS; b++) {
        struct receiver **r = &w->receivers[b];
        while (*r != NULL) {
            struct receiver *x = *r;
            if (deliver_policy_idle(&x->pol, now) && now - x->idle_since_ms > RECEIVER_IDLE_MS) {
                *r = x->next;
                free(x);
            } else {
                r = &x->next;
            }
        }
    }
}

/* ---- jobs ------------------------------------------------------------------------------------ */

static void
enqueue(struct worker *w, struct job *j)
{
    struct receiver *r = j->rcv;

    j->next = NULL;
    if (r->tail != NULL)
        r->tail->next = j;
    else
        r->head = j;
    r->tail = j;
    deliver_policy_queue(&r->pol);
    if (!r->ready) {
        r->ready = true;
        r->next_ready = w->ready;
        w->ready = r;
    }
}

/* Takes the job at *link (prev: the one before it, NULL at the head) out of r's queue. */
static struct job *
unqueue(struct receiver *r, struct job **link, struct job *prev)
{
    struct job *j = *link;

    if (j == NULL)
        return NULL;
    *link = j->next;
    if (r->tail == j)
        r->tail = prev;
    deliver_policy_unqueue(&r->pol);
    return j;
}

struct job *
deliver_job_dequeue(struct receiver *r)
{
    return unqueue(r, &r->head, NULL);
}

struct job *
deliver_job_dequeue_sendable(const struct worker *w, struct receiver *r)
{
    struct job **link = &r->head, *prev = NULL;

    while (*link != NULL && !deliver_job_tenant_may_send(w, (*link)->ten)) {
        prev = *link;
        link = &prev->next;
    }
    return unqueue(r, link, prev);
}

bool
deliver_job_held(const struct worker *w, const struct job *j)
{
    return j->slot < w->n_held && w->held[j->slot] == j;
}

void
deliver_job_drop(struct worker *w, struct job *j)
{
    TOCSIN_ASSERT(deliver_job_held(w, j));
    struct job *last = w->held[--w->n_held];

    w->held[j->slot] = last;
    last->slot = j->slot;
    if (j->rcv != NULL && j->rcv->pol.sending + j->rcv->pol.queued == 0)
        j->rcv->idle_since_ms = timefmt_mono_ms();
    if (j->ten != NULL) {
        if (j->sending) /* a stopped worker's request still out past its wait */
            j->ten->sending--;
        tenant_unhold(w, j->ten);
    }
    db_outbox_item_fini(&j->it);
    free(j);
}

/* ---- leased rows --------------------------------------------------------------------------- */

/* The payload of one new job from its meeting m; people[x] is m's participants, parsed on the
 * first row that asks (push and email rows do, webhook rows not). */
static void
build_body(struct worker *w, struct job *j, const struct meeting *m, struct codec_people **people,
           int64_t now)
{
    if (m->id[0] == '\0') {
        j->why = "meeting deleted before delivery";
        return;
    }
    if (*people == NULL && j->it.channel != CHANNEL_WEBHOOK)
        *people = codec_people_parse(m);
    if ((j->it.payload = channel_payload(&w->d->channel, &j->it, m, *people, now, &j->why)) != NULL)
        j->body_new = true;
}

/* Builds the payloads of the new jobs j[0..n) that have none from their meetings as the API
 * shows them now, in one round trip: a reminder of a series' occurrence sees that occurrence
 * (db_meeting_get_many_for). The rows of one reminder share its meeting, read and parsed once. A
 * job whose payload cannot be built keeps none and says why (its meeting is gone, ...). 0, or -1
 * on database trouble. */
static int
build_bodies(struct worker *w, struct job **j, size_t n)
{
    const char **ids = w->texts; /* scratch: before any failure is queued */
    int64_t *rids = w->ids;      /* scratch, as texts */
    struct db_meeting_list ms;
    struct codec_people *people[DB_OUTBOX_CLAIM_MAX] = {0};
    size_t k = 0, at[DB_OUTBOX_CLAIM_MAX];
    int64_t now = timefmt_now_ms();

    for (size_t i = 0; i < n; i++) /* n <= DB_OUTBOX_CLAIM_MAX: one lease */
        if (j[i]->it.payload == NULL) {
            ids[k] = j[i]->it.meeting_id;
            rids[k++] = j[i]->it.reminder_id;
        }
    if (k == 0)
        return 0;
    if (db_meeting_get_many_for(w->db, ids, rids, k, &ms, at) != DB_ONE_RESULT)
        return -1;
    for (size_t i = 0, x = 0; i < n; i++, x++) {
        if (j[i]->it.payload != NULL) {
            x--;
            continue;
        }
        build_body(w, j[i], &ms.m[at[x]], &people[at[x]], now);
    }
    for (size_t d = 0; d < ms.n; d++)
        codec_people_free(people[d]);
    db_meeting_list_fini(&ms);
    return 0;
}

static const char *
target_gone_reason(const struct db_outbox_item *it)
{
    if (it->channel == CHANNEL_PUSH)
        return "push subscription removed";
    return it->target_disabled ? "webhook disabled" : "webhook deleted";
}

/* A job w holds for the row *it (moved into it; *it is left empty), or NULL when out of memory
 * (the row is freed here and stays w's in the outbox: a later lease brings it back). */
static struct job *
job_new(struct worker *w, struct db_outbox_item *it)
{
    struct job *j = calloc(1, sizeof *j);

    if (j == NULL || (j->rcv = receiver_get(w, it)) == NULL ||
        (j->ten = tenant_get(w, it->tenant_id)) == NULL) {
        free(j);
        db_outbox_item_fini(it);
        return NULL;
    }
    TOCSIN_ASSERT(w->n_held < w->max_held); /* a lease takes no more than fits */
    /* A lease may bring a tenant past its share (rows given to this worker, or due, read in
     * order): the rest wait in their queues without a slot, for the tenant's requests. */
    if (++j->ten->held > w->d->tenant_share)
        metrics_add(METRIC_DELIVERY_TENANT_DEFERRED, 1);
    j->it = *it;
    memset(it, 0, sizeof *it);
    j->slot = w->n_held;
    w->held[w->n_held++] = j;
    return j;
}

/* Queues the new jobs fresh[0..k) for their receivers; those whose target or meeting is gone, or
 * whose payload could not be built, are recorded failed for good and freed. */
static void
queue_or_fail(struct worker *w, struct job **fresh, size_t k)
{
    struct job *gone[DB_OUTBOX_CLAIM_MAX];
    size_t n_gone = 0, n_fail = 0;

    for (size_t i = 0; i < k; i++) {
        struct job *j = fresh[i];
        const char *why = j->it.target_gone       ? target_gone_reason(&j->it)
                          : j->it.payload == NULL ? j->why
                                                  : NULL;
        if (why == NULL) {
            enqueue(w, j);
            continue;
        }
        deliver_record_add_failure(w, &n_fail, j, 0, 0, why, true);
        gone[n_gone++] = j;
    }
    if (n_fail > 0)
        deliver_record_failed(w, n_fail);
    for (size_t i = 0; i < n_gone; i++)
        deliver_job_drop(w, gone[i]);
}

void
deliver_job_take(struct worker *w, size_t n)
{
    struct job **fresh = w->jobs;
    size_t k = 0;

    for (size_t i = 0; i < n; i++) {
        struct job *j = job_new(w, &w->claimed[i]);
        if (j != NULL)
            fresh[k++] = j;
    }
    if (build_bodies(w, fresh, k) != 0) {
        deliver_db_lost(w, "cannot read the meetings of leased rows (given back)");
        for (size_t i = 0; i < k; i++)
            w->ids[i] = fresh[i]->it.id;
        deliver_lease_give_back(w, k, 0);
        for (size_t i = 0; i < k; i++)
            deliver_job_drop(w, fresh[i]);
        return;
    }
    queue_or_fail(w, fresh, k);
}

/* Whether a handed row is left to the lease statement because its receiver's circuit is not
 * closed: the lease leaves such a receiver's rows in the outbox until it may take requests, and
 * once due the rows of an open one go to other workers (deliver_lease_pass_on). */
static bool
receiver_shut(struct worker *w, const struct db_outbox_item *it, int64_t now)
{
    struct receiver *r = *receiver_link(w, it->receiver);

    return r != NULL && deliver_policy_circuit(&r->pol, now) != DELIVER_CIRCUIT_CLOSED;
}

/* Whether w may take the rows of h: see DELIVER_HANDOVER_AGE_MAX_MS. */
static bool
handover_fresh(const struct worker *w, const struct db_fire_handover *h, int64_t now)
{
    return w->registered && strcmp(h->owner, w->owner) == 0 &&
           now - h->started_ms <= DELIVER_HANDOVER_AGE_MAX_MS;
}

void
deliver_job_take_handed(struct worker *w, struct db_fire_handover *h)
{
    struct job **fresh = w->jobs;
    struct codec_people *people = NULL; /* webhook rows only: never parsed */
    size_t k = 0, i = 0, left = 0;
    int64_t wall = timefmt_now_ms(), now = timefmt_mono_ms();

    /* Scratch of one round: as a lease, at most DB_OUTBOX_CLAIM_MAX at a time. */
    while (handover_fresh(w, h, timefmt_mono_ms()) && i < h->n && w->n_held < w->max_held) {
        for (k = 0; k < DB_OUTBOX_CLAIM_MAX && i < h->n && w->n_held < w->max_held; i++) {
            if (receiver_shut(w, &h->items[i], now)) {
                left++;
                continue;
            }
            struct job *j = job_new(w, &h->items[i]);
            if (j == NULL)
                continue;
            build_body(w, j, &h->meetings[h->meeting_of[i]], &people, wall);
            fresh[k++] = j;
        }
        metrics_add(METRIC_DELIVERY_HANDED, k);
        deliver_lease_loaded(w, k);
        queue_or_fail(w, fresh, k);
    }
    metrics_add(METRIC_DELIVERY_HANDED_LEFT, left + h->n - i);
}
