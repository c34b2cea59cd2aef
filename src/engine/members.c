/* members.c -- the heartbeat thread of members.h. The owned set is published under a mutex (it is
 * 32 bytes; readers copy it). */
#include "members.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cond.h"
#include "db.h"
#include "db_members.h"
#include "log.h"
#include "thread.h"
#include "timefmt.h"

struct members {
    pthread_t thread;
    bool running;
    pthread_mutex_t mu; /* guards owned, live and stop */
    pthread_cond_t cv;  /* monotonic clock; signalled by members_leave */
    bool stop;
    struct shard_set owned;
    size_t live;
    char *database_url, *instance_id;
    members_change_fn on_change;
    void *on_change_arg;
    /* The thread's own. */
    struct db *db;
    bool db_down;
    const char *names[SHARD_MEMBERS_MAX];
    char *copies[SHARD_MEMBERS_MAX];
    size_t n_names;
};

static void
take_member(void *arg, const char *id)
{
    struct members *m = arg;

    if (m->n_names < SHARD_MEMBERS_MAX && (m->copies[m->n_names] = strdup(id)) != NULL)
        m->names[m->n_names] = m->copies[m->n_names], m->n_names++;
}

static void
forget_names(struct members *m)
{
    for (size_t i = 0; i < m->n_names; i++)
        free(m->copies[i]);
    m->n_names = 0;
}

/* One heartbeat and, when the live set changed what this replica owns, the new set. */
static void
beat(struct members *m)
{
    char err[DB_ERR_MAX];
    struct shard_set next;

    if (m->db == NULL && (m->db = db_open(m->database_url, err, sizeof err)) == NULL) {
        if (!m->db_down)
            LOG_WARN("members: database unavailable, keeping the shards as they were: %s", err);
        m->db_down = true;
        return;
    }
    if (db_members_beat(m->db, m->instance_id, MEMBERS_TTL_MS, take_member, m) != DB_ONE_RESULT) {
        forget_names(m);
        if (!m->db_down)
            LOG_WARN("members: heartbeat failed, keeping the shards as they were: %s",
                     db_errmsg(m->db));
        m->db_down = true;
        return;
    }
    if (m->db_down)
        LOG_INFO("members: database available again");
    m->db_down = false;
    shard_assign(m->names, m->n_names, m->instance_id, &next);
    pthread_mutex_lock(&m->mu);
    bool changed = !shard_set_equal(&next, &m->owned) || m->live != m->n_names;
    m->owned = next;
    m->live = m->n_names;
    pthread_mutex_unlock(&m->mu);
    if (changed) {
        LOG_INFO("members: %zu live replicas; this one owns %zu of %d shards", m->n_names,
                 shard_set_count(&next), SHARD_COUNT);
        if (m->on_change != NULL)
            m->on_change(m->on_change_arg);
    }
    forget_names(m);
}

static void *
members_thread(void *arg)
{
    struct members *m = arg;
    struct timespec ts;

    thread_set_name("tocsin-members");

    pthread_mutex_lock(&m->mu);
    while (!m->stop) {
        pthread_mutex_unlock(&m->mu);
        beat(m);
        pthread_mutex_lock(&m->mu);
        ts = cond_deadline(MEMBERS_BEAT_MS);
        while (!m->stop && pthread_cond_timedwait(&m->cv, &m->mu, &ts) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&m->mu);
    if (m->db != NULL && db_members_leave(m->db, m->instance_id) != DB_ONE_RESULT)
        LOG_WARN("members: could not leave; the others take the shards after %d ms",
                 MEMBERS_TTL_MS);
    return NULL;
}

static void
destroy(struct members *m)
{
    db_close(m->db);
    pthread_cond_destroy(&m->cv);
    pthread_mutex_destroy(&m->mu);
    free(m->database_url);
    free(m->instance_id);
    free(m);
}

struct members *
members_new(const struct members_opts *opts)
{
    struct members *m = calloc(1, sizeof *m);

    if (m == NULL)
        return NULL;
    m->database_url = strdup(opts->database_url);
    m->instance_id = strdup(opts->instance_id);
    m->on_change = opts->on_change;
    m->on_change_arg = opts->on_change_arg;
    pthread_mutex_init(&m->mu, NULL);
    cond_init_monotonic(&m->cv);
    if (m->database_url == NULL || m->instance_id == NULL) {
        destroy(m);
        return NULL;
    }
    return m;
}

int
members_run(struct members *m)
{
    if (pthread_create(&m->thread, NULL, members_thread, m) != 0)
        return -1;
    m->running = true;
    return 0;
}

void
members_leave(struct members *m)
{
    if (m == NULL)
        return;
    pthread_mutex_lock(&m->mu);
    m->stop = true;
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
    if (m->running)
        pthread_join(m->thread, NULL);
    m->running = false;
}

void
members_free(struct members *m)
{
    if (m != NULL)
        destroy(m);
}

bool
members_owns(struct members *m, int64_t reminder_id)
{
    if (m == NULL)
        return true;
    pthread_mutex_lock(&m->mu);
    bool owns = shard_set_has(&m->owned, shard_of(reminder_id));
    pthread_mutex_unlock(&m->mu);
    return owns;
}

void
members_shards(struct members *m, struct shard_set *out)
{
    if (m == NULL) {
        shard_set_fill(out);
        return;
    }
    pthread_mutex_lock(&m->mu);
    *out = m->owned;
    pthread_mutex_unlock(&m->mu);
}

size_t
members_live(struct members *m)
{
    if (m == NULL)
        return 1;
    pthread_mutex_lock(&m->mu);
    size_t n = m->live;
    pthread_mutex_unlock(&m->mu);
    return n;
}
