/* deliver_internal.h -- what the delivery worker's files share and nobody else sees: a worker,
 * its receivers and its jobs (leased rows), and the functions of deliver.c (the loop),
 * deliver_job.c (jobs and receivers), deliver_lease.c (the worker's lease and the rows it takes
 * and gives back) and deliver_record.c (answers into the outbox) that the others call. Only
 * deliver*.c include this. Everything in a struct worker belongs to its thread, except the fields
 * said to be the dispatch thread's too. */
#ifndef TOCSIN_DELIVER_INTERNAL_H
#define TOCSIN_DELIVER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "channel.h"
#include "db_fire.h"
#include "db_outbox.h"
#include "deliver.h"
#include "deliver_policy.h"
#include "webpush.h"

#define RECEIVER_BUCKETS 1024
#define TENANT_BUCKETS 256

/* A receiver's key: a webhook id, a push service's origin (the longest) or "smtp". It must hold
 * a whole origin such as https://updates.push.services.mozilla.com: a cut key matches no
 * receiver, so each of its rows would make a new one and its share and circuit would never
 * apply. */
#define RECEIVER_KEY_MAX WEBPUSH_ORIGIN_MAX
_Static_assert(RECEIVER_KEY_MAX >= MEETING_ID_LEN, "a webhook id is a receiver key");

/* A receiver: the unit of isolation (a webhook, a push service or the SMTP server). */
struct receiver {
    char key[RECEIVER_KEY_MAX + 1];
    /* The channel of its rows: the label it is counted under in tocsin_delivery_circuits_open. */
    unsigned channel;
    struct deliver_policy pol; /* its share, hold cap, counts, circuit and Retry-After hold */
    struct job *head, *tail;   /* queued jobs, oldest first */
    int64_t idle_since_ms;
    bool warned; /* a failure was logged, at warned_ms (monotonic) */
    int64_t warned_ms;
    unsigned long unlogged;      /* failures since that line, counted in the next */
    bool ready;                  /* on the worker's ready list */
    struct receiver *next_ready; /* receivers with queued jobs */
    struct receiver *next;       /* hash chain */
};

/* A tenant with rows held by the worker: the unit of fairness between tenants. Its rows take at
 * most its share of the worker's slots (struct deliver's tenant_share) and it has at most that
 * many requests in flight; a tenant that holds its share is left out of the worker's leases. It
 * is freed when it holds no row. */
struct tenant {
    int64_t id;
    size_t held;         /* rows held: queued, in flight, answered and not recorded */
    size_t sending;      /* requests out, answered and not recorded included */
    struct tenant *next; /* hash chain */
};

/* A leased row, queued for its receiver or in flight. */
struct job {
    struct db_outbox_item it;
    struct receiver *rcv;
    struct tenant *ten;
    bool sending;
    bool body_new;   /* built by this worker: stored with a failed attempt's record */
    const char *why; /* when the payload could not be built: why the row gives up */
    size_t slot;     /* index in the worker's held array */
    int64_t sent_ms; /* monotonic: when its request started (0: none did) */
    int64_t took_ms; /* from the start to the answer, once answered: a slow one counts against
                      * its receiver (deliver_policy_slow) */
    struct channel_req req;
    struct job *next; /* receiver queue */
};

struct worker {
    struct deliver *d;
    pthread_t thread;
    int index;
    bool started;
    char owner[DB_OUTBOX_OWNER_MAX + 1]; /* its name while registered */
    bool registered;                     /* its lease row exists and was live at renewed_ms */
    int64_t token;                       /* of the last name it registered */
    /* What the dispatch thread sees (deliver_owner_for): the name under pub_mu, whether it may be
     * given rows, and about how many it was given and has not loaded yet. */
    pthread_mutex_t pub_mu;
    char pub_owner[DB_OUTBOX_OWNER_MAX + 1];
    atomic_bool live;
    atomic_size_t given;
    /* Fires' rows handed to it in memory (db_fire.h), oldest first, under pub_mu. */
    struct db_fire_handover *handed_head, *handed_tail;
    struct db *db;
    int64_t db_retry_ms;
    bool db_down;
    struct outbound *out;
    struct push_keys *keys; /* the tenants' VAPID keys and JWTs */
    atomic_bool woken;
    unsigned seed;
    int64_t renewed_ms, next_claim_ms;
    int64_t renew_retry_ms; /* after a failed renewal, the next is not tried before this */
    int64_t orphans_ms;     /* when its lease statement last looked for orphans */
    int64_t passed_ms;      /* when it last passed on rows of its open circuits */
    struct job **held;      /* the rows it holds: n_held of max_held (deliver_policy_held_max) */
    size_t n_held, max_held;
    struct receiver *receivers[RECEIVER_BUCKETS];
    struct tenant *tenants[TENANT_BUCKETS];
    struct receiver *ready; /* receivers with queued jobs */
    /* Scratch of one round: max_held entries each, claimed DB_OUTBOX_CLAIM_MAX. */
    struct db_outbox_item *claimed;
    struct outbound_done *done;
    int64_t *ids;
    const char **texts, **texts2;
    struct db_outbox_failure *fails;
    unsigned *fail_channels; /* the channel of each failure */
    bool *fail_final;        /* whether it fails the row for good */
    struct job **jobs;
    enum channel_verdict *verdicts;
    /* Delivered answers not recorded yet (max_held entries), the oldest taken at answered_ms:
     * deliver_record_flush records them together. Their jobs keep their slots until then. */
    struct job **answered;
    int *answered_status;
    int64_t *answered_took;  /* scratch: their durations, for the record */
    bool *answered_recorded; /* which of them the statement recorded (not another's answer) */
    size_t n_answered;
    int64_t answered_ms;
};

struct deliver {
    atomic_bool stop;
    char *database_url, *instance_id;
    struct channel_opts channel; /* borrowed strings: the configuration outlives delivery */
    int64_t retry_base_ms, timeout_ms;
    int max_attempts, concurrency, per_receiver, per_push_service;
    size_t tenant_share; /* of a worker's slots, one tenant's (deliver_policy_tenant_share) */
    int n_workers;
    struct worker *workers;
};

/* ---- deliver.c: the loop ---- */

/* A statement failed (what: what was lost): one warning until deliver_db_back. */
void deliver_db_lost(struct worker *w, const char *what);
/* A statement worked again after deliver_db_lost. */
void deliver_db_back(struct worker *w);
/* Requests in flight in this process (deliver_in_flight) fall by n answers recorded or failed:
 * never more than were sent. Thread-safe. */
void deliver_in_flight_sub(size_t n);

/* ---- deliver_job.c: jobs and receivers ---- */

/* A receiver with nothing held, a closed circuit and no failures in a row is forgotten after
 * this long idle. */
#define RECEIVER_IDLE_MS 60000

/* Turns the leased rows w->claimed[0..n) into jobs w holds (a row whose job cannot be made stays
 * w's: the next lease brings it back): rows whose target or meeting is gone, or whose payload
 * cannot be built, are recorded failed for good and freed; the others are queued for their
 * receivers. Overwrites w->jobs, w->ids and w->texts. */
void deliver_job_take(struct worker *w, size_t n);
/* Turns the rows of handover h into jobs as deliver_job_take does with leased ones, their
 * payloads built from the meetings h brought (no statement); rows w may not take (h is older than
 * DELIVER_HANDOVER_AGE_MAX_MS, for another name of w's, or w has no room) stay in the outbox,
 * owned, for its lease statement once due; so do rows whose receiver's circuit is not closed,
 * as a lease would have, and once due those of an open one go to anyone
 * (deliver_lease_pass_on). The caller frees h. */
void deliver_job_take_handed(struct worker *w, struct db_fire_handover *h);
/* Whether j is one of the rows w holds (its lease's): the only rows w may record or give back. */
bool deliver_job_held(const struct worker *w, const struct job *j);
/* The oldest job queued for r, taken off its queue (it stays held), or NULL when none. */
struct job *deliver_job_dequeue(struct receiver *r);
/* The oldest job queued for r whose tenant has a request to spare (deliver_job_tenant_may_send),
 * taken off its queue, or NULL when none: one tenant at its share does not hold back another's
 * rows queued behind its own for a receiver they share (a push service, the SMTP server). */
struct job *deliver_job_dequeue_sendable(const struct worker *w, struct receiver *r);
/* Whether t has fewer than its share of requests in flight. */
bool deliver_job_tenant_may_send(const struct worker *w, const struct tenant *t);
/* Whether t holds its share of the slots: its rows are left out of leases. */
bool deliver_job_tenant_full(const struct worker *w, const struct tenant *t);
/* Takes j out of the rows w holds and frees it: its receiver counts it no more (or w is being
 * freed). */
void deliver_job_drop(struct worker *w, struct job *j);
/* Frees the receivers of w idle (deliver_policy_idle) for RECEIVER_IDLE_MS at now. */
void deliver_job_forget_idle(struct worker *w, int64_t now);

/* ---- deliver_lease.c: the worker's lease and its rows ---- */

/* Makes the name the dispatch thread gives rows to (NULL: none, no rows given). Takes pub_mu. */
void deliver_lease_publish(struct worker *w, const char *owner);
/* Registers the worker when it is not, else renews its lease when due (DELIVER_RENEW_MS) or after
 * a statement failed; a lapsed lease drops the queued rows and registers under a new name. */
void deliver_lease_renew(struct worker *w, int64_t now);
/* Leases what the worker has room for into w->claimed (their owner is w: the caller takes them
 * all, see db_outbox_claim) and returns how many. *more: whether the statement filled the room
 * it asked for: only then may more be waiting (rows given later wake the worker). Overwrites
 * w->ids. */
size_t deliver_lease_claim(struct worker *w, int64_t now, bool *more);
/* Circuits are per worker, and the fire statement gives a row to a worker whatever its circuit
 * for the row's receiver: the rows given to w for receivers whose circuit is open in w after
 * failures (deliver_policy_failing) would wait for it, while other workers, whose circuits are
 * closed, could send them. At most once per DELIVER_POLL_MS, the due ones go to anyone (the
 * lease statement brings w its given rows only once due, and a row it may still take from a
 * handover is not due yet); each worker's own circuit decides whether it leases them (an open one
 * leaves them out). A Retry-After hold keeps them: the receiver asked to wait. Overwrites
 * w->ids. */
void deliver_lease_pass_on(struct worker *w, int64_t now);
/* w loaded n rows it was given (by a lease or a handover), or passed them on: the dispatch thread
 * counts them no more (deliver_owner_for). */
void deliver_lease_loaded(struct worker *w, size_t n);
/* Gives the rows w->ids[0..n), which w holds and did not send, back to the outbox, due after
 * delay_ms (0: at once, for anyone), no attempt spent. The caller frees their jobs. */
void deliver_lease_give_back(struct worker *w, size_t n, int64_t delay_ms);
/* Gives the receiver's queued rows back, due after delay_ms (when its circuit may close), and
 * frees their jobs. Overwrites w->ids. */
void deliver_lease_release(struct worker *w, struct receiver *r, int64_t delay_ms);
/* A stopping worker with nothing in flight gives every row it holds back and ends its lease;
 * with requests still out it only stops taking rows (the lease lapses). */
void deliver_lease_leave(struct worker *w);

/* ---- deliver_record.c: answers into the outbox ---- */

/* Takes the answers w->done[0..n): the receivers' policies hear of them, failed attempts are
 * recorded in one statement and their jobs freed; deliveries wait in w->answered for
 * deliver_record_flush. Overwrites w->jobs and w->ids. */
void deliver_record_answers(struct worker *w, size_t n);
/* Records the delivered answers once enough wait, the oldest has waited long enough or no
 * other answer can join them (nothing in flight), and always when force; frees their jobs. */
void deliver_record_flush(struct worker *w, int64_t now, bool force);
/* Queues one failed attempt of j (held by w) into the round's failures w->fails[*n], its reason
 * err and body borrowed until deliver_record_failed; give_up: the row can never succeed. */
void deliver_record_add_failure(struct worker *w, size_t *n, const struct job *j, long status,
                                int64_t retry_after_s, const char *err, bool give_up);
/* Records the failed attempts w->fails[0..n) in one statement (the jobs stay the caller's). */
void deliver_record_failed(struct worker *w, size_t n);
/* Logs a failed attempt of j at warn, at most one line per receiver and WARN_EVERY_MS. */
void deliver_record_warn(const struct job *j, const char *err);

#endif
