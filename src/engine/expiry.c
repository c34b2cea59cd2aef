/* expiry.c -- the expiry listener of expiry.h. Reads with poll() on the subscriber's socket so the
 * stop flag is seen within EXPIRY_POLL_MS without a read timeout (after which a connection is
 * unusable); replies already buffered are parsed first, and keys are handed to dispatch in
 * batches. The connection comes from a private struct mirror (mirror_internal.h): same connect,
 * AUTH, SELECT, Sentinel discovery and reconnect backoff as every other Redis connection; when
 * the mirror replaced it because the master moved, the listener subscribes again on the new one
 * (and so probes the new master's notify setting and asks for a repair pass). */
#include "expiry.h"
#include "expiry_cluster.h"

#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "members.h"
#include "metrics.h"
#include "mirror_internal.h"
#include "mirror_stream.h"
#include "redis_conn.h"
#include "thread.h"
#include "timefmt.h"

#define EXPIRY_CHANNEL_MAX 48
#define EXPIRY_INSTANCE_MAX 64
#define EXPIRY_PROBE_KEY_MAX (MIRROR_PREFIX_MAX + EXPIRY_INSTANCE_MAX + EXPIRY_TAG_MAX + 32)
#define EXPIRY_PROBE_TTL_MS 1 /* the probe key is meant to expire at once */
#define EXPIRY_WHY_MAX 256
#define EXPIRY_TAG_MAX 24 /* a Cluster hash tag (cluster_tag_for) */

struct expiry {
    struct expiry_cluster *cluster; /* with Cluster: all the rest is unused */
    pthread_t thread;
    atomic_bool stop;
    atomic_bool connected;
    atomic_int notify; /* enum expiry_notify */
    struct mirror *mi;
    struct mirror *cmd; /* a second connection: a subscribed one cannot send SET or CONFIG */
    struct dispatch *d;
    struct members *members;
    expiry_connect_fn on_connect;
    void *on_connect_arg;
    expiry_stream_fn on_stream;
    void *on_stream_arg;
    char channel[EXPIRY_CHANNEL_MAX];
    char stream_channel[MIRROR_STREAM_CHANNEL_MAX];
    bool was_down;   /* an outage is logged once, not per retry */
    uint64_t serial; /* the mirror connection subscribed on (mirror_conn_serial) */
    pthread_mutex_t why_lock;
    char why[EXPIRY_ERROR_MAX]; /* why Redis is unreachable, "" while subscribed (why_lock) */
    /* The probe, used by the thread only. probe_key is "" when no probe is under way. */
    char instance[EXPIRY_INSTANCE_MAX + 1];
    char probe_tag[EXPIRY_TAG_MAX]; /* "" = none */
    char probe_key[EXPIRY_PROBE_KEY_MAX];
    uint64_t probe_seq;
    int64_t probe_deadline_ms;       /* monotonic */
    int64_t probe_touch_ms;          /* monotonic: next EXISTS on the probe key */
    int64_t probe_next_ms;           /* monotonic: next probe after a failed one; 0 = none owed */
    char config_why[EXPIRY_WHY_MAX]; /* what CONFIG said, for the warning */
    size_t n;
    struct reminder_key batch[DISPATCH_BATCH_MAX];
};

static void
flush(struct expiry *e)
{
    if (e->n > 0)
        dispatch_submit(e->d, e->batch, e->n);
    e->n = 0;
}

static void
set_notify(struct expiry *e, enum expiry_notify now)
{
    enum expiry_notify was = (enum expiry_notify)atomic_exchange(&e->notify, (int)now);

    if (now == EXPIRY_NOTIFY_MISSING && was != EXPIRY_NOTIFY_MISSING)
        LOG_WARN("expiry: redis sends no expired events (probe key %s: none within %d ms); "
                 "notify-keyspace-events must include E and x%s%s; reminders still fire from "
                 "PostgreSQL",
                 e->probe_key, EXPIRY_PROBE_WAIT_MS, e->config_why[0] ? "; " : "", e->config_why);
    else if (now == EXPIRY_NOTIFY_OK && was == EXPIRY_NOTIFY_MISSING)
        LOG_INFO("expiry: redis sends expired events again");
}

static void
probe_done(struct expiry *e, enum expiry_notify found)
{
    set_notify(e, found);
    e->probe_key[0] = '\0';
    e->probe_next_ms =
        found == EXPIRY_NOTIFY_OK
            ? 0
            : timefmt_mono_ms() + (found == EXPIRY_NOTIFY_UNKNOWN ? EXPIRY_PROBE_ERROR_RETRY_MS
                                                                  : EXPIRY_PROBE_RETRY_MS);
}

/* Tries to fix the setting with CONFIG (refused on managed Redis: only remembered for the
 * warning), then sets a probe key that expires at once. Its event then arrives on our
 * subscription, or the setting is wrong whatever CONFIG said. */
static void
probe_start(struct expiry *e)
{
    int64_t now = timefmt_mono_ms();

    e->config_why[0] = '\0';
    mirror_ensure_notify(e->cmd, e->config_why, sizeof e->config_why);
    snprintf(e->probe_key, sizeof e->probe_key, "%s%s%s:probe:%s:%" PRIu64, mirror_prefix(e->mi),
             e->probe_tag[0] ? ":" : "", e->probe_tag, e->instance, ++e->probe_seq);
    if (mirror_probe_set(e->cmd, e->probe_key, EXPIRY_PROBE_TTL_MS) != 0) {
        probe_done(e, EXPIRY_NOTIFY_UNKNOWN);
        return;
    }
    e->probe_deadline_ms = now + EXPIRY_PROBE_WAIT_MS;
    e->probe_touch_ms = now + EXPIRY_PROBE_TOUCH_MS;
    e->probe_next_ms = 0;
}

/* Between reads: touching the probe key makes Redis expire it now instead of when its sampler
 * finds it among every key with a TTL; past the deadline the setting is missing. */
static void
probe_step(struct expiry *e)
{
    int64_t now = timefmt_mono_ms();

    if (e->probe_key[0] == '\0') {
        if (e->probe_next_ms != 0 && now >= e->probe_next_ms)
            probe_start(e);
        return;
    }
    if (now >= e->probe_deadline_ms) {
        probe_done(e, EXPIRY_NOTIFY_MISSING);
    } else if (now >= e->probe_touch_ms) {
        mirror_probe_touch(e->cmd, e->probe_key);
        e->probe_touch_ms = now + EXPIRY_PROBE_TOUCH_MS;
    }
}

/* A message on the stream wake-up channel. */
static void
take_stream(struct expiry *e, const redisReply *msg)
{
    struct stream_head h;

    if (mirror_stream_parse(msg->str, msg->len, &h) == 0)
        e->on_stream(e->on_stream_arg, &h);
}

/* One pushed message: ["message", channel, payload]. Other replies (subscribe confirmations) are
 * ignored. */
static void
take(void *arg, const redisReply *r)
{
    struct expiry *e = arg;
    struct reminder_key k;

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
        r->element[0]->type != REDIS_REPLY_STRING || strcmp(r->element[0]->str, "message") != 0 ||
        r->element[1]->type != REDIS_REPLY_STRING || r->element[2]->type != REDIS_REPLY_STRING)
        return;
    if (e->probe_key[0] != '\0' && strcmp(r->element[2]->str, e->probe_key) == 0) {
        probe_done(e, EXPIRY_NOTIFY_OK);
        return;
    }
    if (e->on_stream != NULL && strcmp(r->element[1]->str, e->stream_channel) == 0) {
        take_stream(e, r->element[2]);
        return;
    }
    if (mirror_key_parse(r->element[2]->str, r->element[2]->len, mirror_prefix(e->mi),
                         &k.reminder_id, &k.fire_at_ms) != 0)
        return; /* not a reminder key of ours */
    metrics_add(METRIC_EXPIRED_EVENTS, 1);
    if (!members_owns(e->members, k.reminder_id))
        return; /* another replica's shard: its owner acts on its own copy of the event */
    e->batch[e->n++] = k;
    if (e->n == DISPATCH_BATCH_MAX)
        flush(e);
}

static void
set_why(struct expiry *e, const char *why)
{
    pthread_mutex_lock(&e->why_lock);
    snprintf(e->why, sizeof e->why, "%s", why);
    pthread_mutex_unlock(&e->why_lock);
}

static void
lost(struct expiry *e, const char *why)
{
    if (atomic_load(&e->connected) || !e->was_down)
        LOG_WARN("expiry: subscriber disconnected (%s); reconnecting", why);
    e->was_down = true;
    set_why(e, why);
    atomic_store(&e->connected, false);
    atomic_store(&e->notify, EXPIRY_NOTIFY_UNKNOWN);
    e->probe_key[0] = '\0';
    e->probe_next_ms = 0;
    mirror_conn_lost(e->mi);
}

/* The mirror replaced the connection under us (the master moved: sentinel.h): the new one is not
 * subscribed yet, and the probe and the notify setting are the old master's. */
static void
moved(struct expiry *e)
{
    LOG_INFO("expiry: the redis master moved; subscribing on the new one");
    atomic_store(&e->connected, false);
    atomic_store(&e->notify, EXPIRY_NOTIFY_UNKNOWN);
    e->probe_key[0] = '\0';
    e->probe_next_ms = 0;
}

/* SUBSCRIBE to one or two channels: one confirmation reply per channel. */
static int
subscribe(struct expiry *e, struct redis_conn *c)
{
    const char *argv[] = {"SUBSCRIBE", e->channel, e->stream_channel};
    size_t lens[] = {9, strlen(e->channel), strlen(e->stream_channel)};
    int argc = e->on_stream != NULL ? 3 : 2, ok = 1;

    if (redis_conn_append(c, argc, argv, lens) != 0)
        return -1;
    for (int i = 1; i < argc && ok; i++) {
        redisReply *r = NULL;

        ok = redis_conn_reply(c, &r) == 0 && r->type == REDIS_REPLY_ARRAY && r->elements == 3;
        if (r != NULL)
            freeReplyObject(r);
    }
    if (!ok)
        return -1;
    e->serial = mirror_conn_serial(e->mi);
    set_why(e, "");
    atomic_store(&e->connected, true);
    if (e->was_down)
        LOG_INFO("expiry: subscribed to %s again", e->channel);
    e->was_down = false;
    if (e->on_connect != NULL)
        e->on_connect(e->on_connect_arg);
    probe_start(e);
    return 0;
}

/* Parses what is buffered, then waits up to EXPIRY_POLL_MS for more (EXPIRY_PROBE_TOUCH_MS while
 * a probe is under way). -1 when the connection failed. */
static int
pump(struct expiry *e, struct redis_conn *c)
{
    int wait_ms = e->probe_key[0] != '\0' ? EXPIRY_PROBE_TOUCH_MS : EXPIRY_POLL_MS;

    if (redis_conn_drain(c, take, e) != 0)
        return -1;
    flush(e);
    int rc = redis_conn_wait(c, wait_ms);
    if (rc == 0)
        return 0;
    if (rc < 0 || redis_conn_fill(c) != 0)
        return -1;
    return 0;
}

static void *
expiry_thread(void *arg)
{
    struct expiry *e = arg;

    thread_set_name("tocsin-expiry");

    while (!atomic_load(&e->stop)) {
        struct redis_conn *c = mirror_conn(e->mi);

        if (c == NULL) {
            const char *why = mirror_conn_error(e->mi);
            /* During the backoff the cause is the last attempt's; the first one logs it. */
            if (!e->was_down && why[0] != '\0') {
                LOG_WARN("expiry: redis unavailable (%s); retrying", why);
                e->was_down = true;
            }
            if (why[0] != '\0')
                set_why(e, why);
            poll(NULL, 0, EXPIRY_POLL_MS);
            continue;
        }
        if (atomic_load(&e->connected) && mirror_conn_serial(e->mi) != e->serial)
            moved(e);
        if (!atomic_load(&e->connected) && subscribe(e, c) != 0) {
            lost(e, "SUBSCRIBE failed");
            continue;
        }
        if (pump(e, c) != 0)
            lost(e, redis_conn_error(c)[0] ? redis_conn_error(c) : "read failed");
        else
            probe_step(e);
    }
    return NULL;
}

struct expiry *
expiry_start(const struct expiry_opts *opts)
{
    struct expiry *e = calloc(1, sizeof *e);

    if (e == NULL)
        return NULL;
    if (opts->mirror.n_seeds > 0) {
        if ((e->cluster = expiry_cluster_start(opts)) == NULL) {
            free(e);
            return NULL;
        }
        return e;
    }
    atomic_init(&e->stop, false);
    atomic_init(&e->connected, false);
    atomic_init(&e->notify, EXPIRY_NOTIFY_UNKNOWN);
    pthread_mutex_init(&e->why_lock, NULL);
    e->d = opts->dispatch;
    e->members = opts->members;
    snprintf(e->instance, sizeof e->instance, "%s", opts->instance_id ? opts->instance_id : "-");
    snprintf(e->probe_tag, sizeof e->probe_tag, "%s", opts->probe_tag ? opts->probe_tag : "");
    e->on_connect = opts->on_connect;
    e->on_connect_arg = opts->on_connect_arg;
    e->on_stream = opts->on_stream;
    e->on_stream_arg = opts->on_stream_arg;
    mirror_stream_channel(e->stream_channel, sizeof e->stream_channel, opts->mirror.prefix);
    snprintf(e->channel, sizeof e->channel, "__keyevent@%d__:expired", opts->mirror.db);
    e->mi = mirror_new(&opts->mirror);
    e->cmd = mirror_new(&opts->mirror);
    if (e->mi == NULL || e->cmd == NULL ||
        pthread_create(&e->thread, NULL, expiry_thread, e) != 0) {
        mirror_free(e->mi);
        mirror_free(e->cmd);
        pthread_mutex_destroy(&e->why_lock);
        free(e);
        return NULL;
    }
    return e;
}

bool
expiry_connected(struct expiry *e)
{
    if (e != NULL && e->cluster != NULL)
        return expiry_cluster_connected(e->cluster);
    return e != NULL && atomic_load(&e->connected);
}

enum expiry_notify
expiry_notify_state(struct expiry *e)
{
    if (e != NULL && e->cluster != NULL)
        return expiry_cluster_notify(e->cluster);
    return e != NULL ? (enum expiry_notify)atomic_load(&e->notify) : EXPIRY_NOTIFY_UNKNOWN;
}

void
expiry_stop(struct expiry *e)
{
    if (e == NULL)
        return;
    if (e->cluster != NULL) {
        expiry_cluster_stop(e->cluster);
        free(e);
        return;
    }
    atomic_store(&e->stop, true);
    pthread_join(e->thread, NULL);
    mirror_free(e->mi);
    mirror_free(e->cmd);
    pthread_mutex_destroy(&e->why_lock);
    free(e);
}

size_t
expiry_masters(struct expiry *e, struct expiry_master *out, size_t cap)
{
    return e != NULL && e->cluster != NULL ? expiry_cluster_masters(e->cluster, out, cap) : 0;
}

void
expiry_redis_error(struct expiry *e, char *buf, size_t buflen)
{
    buf[0] = '\0';
    if (e == NULL)
        return;
    if (e->cluster != NULL) {
        expiry_cluster_error(e->cluster, buf, buflen);
        return;
    }
    pthread_mutex_lock(&e->why_lock);
    snprintf(buf, buflen, "%s", e->why);
    pthread_mutex_unlock(&e->why_lock);
}
