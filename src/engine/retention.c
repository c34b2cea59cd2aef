/* retention.c -- the purge thread of retention.h. A pass goes kind by kind, batch after batch,
 * until a batch comes back short; deleted meetings go a tenth of a batch at a time, since each
 * takes its reminders and their outbox rows along. What it removed is counted in metrics.h and
 * said in one log line per pass. */
#include "retention.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cond.h"
#include "db.h"
#include "db_webhook.h"
#include "log.h"
#include "members.h"
#include "metrics.h"
#include "thread.h"
#include "timefmt.h"

#define OWNER_SHARD_OF 0 /* the replica owning the shard of reminder id 0 purges */
#define MEETINGS_BATCH_DIVISOR 10

struct retention {
    struct retention_opts o;
    char *database_url;
    pthread_t thread;
    pthread_mutex_t mu; /* guards stop */
    pthread_cond_t cv;  /* monotonic clock; signalled by retention_stop */
    bool stop;
    struct db *db; /* the thread's own */
    bool db_down;
};

static bool
stopping(struct retention *r)
{
    pthread_mutex_lock(&r->mu);
    bool s = r->stop;
    pthread_mutex_unlock(&r->mu);
    return s;
}

/* Waits ms or until stopped; returns whether stopped. */
static bool
wait_ms(struct retention *r, int64_t ms)
{
    struct timespec ts = cond_deadline(ms);

    pthread_mutex_lock(&r->mu);
    while (!r->stop && pthread_cond_timedwait(&r->cv, &r->mu, &ts) != ETIMEDOUT)
        ;
    bool s = r->stop;
    pthread_mutex_unlock(&r->mu);
    return s;
}

static void
db_trouble(struct retention *r, const char *what)
{
    if (!r->db_down)
        LOG_WARN("retention: %s: %s; retrying at the next pass", what,
                 r->db ? db_errmsg(r->db) : "no database");
    r->db_down = true;
}

/* Purges one kind batch by batch. Returns the rows removed, or -1 on database trouble. */
static int64_t
purge_kind(struct retention *r, enum db_retention_kind k)
{
    int batch = k == DB_RETENTION_MEETINGS ? r->o.batch / MEETINGS_BATCH_DIVISOR : r->o.batch;
    int64_t total = 0, n = 0;

    if (batch < 1)
        batch = 1;
    do {
        if (db_retention_purge(r->db, k, r->o.keep_s[k], batch, &n) != DB_ONE_RESULT) {
            db_trouble(r, db_retention_name(k));
            return -1;
        }
        total += n;
        metrics_retention_add(k, (uint64_t)n);
    } while (n == batch && !wait_ms(r, RETENTION_PAUSE_MS));
    return total;
}

/* The decision is made here, once per webhook: a warning an operator can act on (fix the
 * receiver, PATCH disabled false, recover since the time given). */
static void
log_disabled(void *arg, const char *id, int64_t tenant_id, int64_t failing_since_ms)
{
    char since[TIMEFMT_BUF];
    const struct retention *r = arg;

    LOG_WARN("webhooks: webhook %s of tenant %lld turned off: its attempts failed without one "
             "success since %s (TOCSIN_WEBHOOK_DISABLE_AFTER_S=%lld); its deliveries stay "
             "failed, for a recover once it is on again",
             id, (long long)tenant_id, timefmt_format(failing_since_ms, since),
             (long long)r->o.webhook_disable_after_s);
}

/* Turns off the webhooks failing past TOCSIN_WEBHOOK_DISABLE_AFTER_S. 0, or -1 on database
 * trouble. */
static int
disable_failing(struct retention *r)
{
    int64_t n = 0;

    if (db_webhook_disable_failing(r->db, r->o.webhook_disable_after_s, log_disabled, r, &n) !=
        DB_ONE_RESULT) {
        db_trouble(r, "turning off failing webhooks");
        return -1;
    }
    metrics_add(METRIC_WEBHOOKS_DISABLED, (uint64_t)n);
    return 0;
}

static void
pass(struct retention *r)
{
    char err[DB_ERR_MAX];
    int64_t got[DB_RETENTION_KINDS] = {0}, start = timefmt_mono_ms(), all = 0;

    if (r->db == NULL && (r->db = db_open(r->database_url, err, sizeof err)) == NULL) {
        if (!r->db_down)
            LOG_WARN("retention: database unavailable, retrying at the next pass: %s", err);
        r->db_down = true;
        return;
    }
    for (int k = 0; k < DB_RETENTION_KINDS && !stopping(r); k++) {
        if ((got[k] = purge_kind(r, (enum db_retention_kind)k)) < 0)
            return;
        all += got[k];
    }
    if (!stopping(r) && disable_failing(r) != 0)
        return;
    if (r->db_down)
        LOG_INFO("retention: database available again");
    r->db_down = false;
    if (all > 0)
        LOG_INFO("retention: purged %lld idempotency keys, %lld deliveries, %lld deleted meetings, "
                 "%lld stream events in %lld ms",
                 (long long)got[DB_RETENTION_IDEMPOTENCY], (long long)got[DB_RETENTION_DELIVERIES],
                 (long long)got[DB_RETENTION_MEETINGS], (long long)got[DB_RETENTION_STREAM_EVENTS],
                 (long long)(timefmt_mono_ms() - start));
}

static void *
retention_thread(void *arg)
{
    struct retention *r = arg;

    thread_set_name("tocsin-purge");

    while (!wait_ms(r, r->o.interval_ms))
        if (members_owns(r->o.members, OWNER_SHARD_OF))
            pass(r);
    return NULL;
}

struct retention *
retention_start(const struct retention_opts *opts)
{
    struct retention *r = calloc(1, sizeof *r);

    if (r == NULL)
        return NULL;
    r->o = *opts;
    if (r->o.batch > DB_RETENTION_BATCH_MAX)
        r->o.batch = DB_RETENTION_BATCH_MAX;
    pthread_mutex_init(&r->mu, NULL);
    cond_init_monotonic(&r->cv);
    if ((r->database_url = strdup(opts->database_url)) == NULL ||
        pthread_create(&r->thread, NULL, retention_thread, r) != 0) {
        pthread_cond_destroy(&r->cv);
        pthread_mutex_destroy(&r->mu);
        free(r->database_url);
        free(r);
        return NULL;
    }
    return r;
}

void
retention_stop(struct retention *r)
{
    if (r == NULL)
        return;
    pthread_mutex_lock(&r->mu);
    r->stop = true;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->thread, NULL);
    db_close(r->db);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r->database_url);
    free(r);
}
