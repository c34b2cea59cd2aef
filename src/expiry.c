/* expiry.c -- the expiry listener of expiry.h. Reads with poll() on the subscriber's socket so the
 * stop flag is seen within EXPIRY_POLL_MS without a read timeout (after which a hiredis context is
 * unusable); replies already buffered are parsed first, and keys are handed to dispatch in
 * batches. The connection comes from a private struct mirror (mirror_internal.h): same connect,
 * AUTH, SELECT and reconnect backoff as every other Redis connection. */
#include "expiry.h"

#include <hiredis/hiredis.h>
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

#define EXPIRY_CHANNEL_MAX 48

struct expiry {
    pthread_t thread;
    atomic_bool stop;
    atomic_bool connected;
    struct mirror *mi;
    struct dispatch *d;
    struct members *members;
    expiry_connect_fn on_connect;
    void *on_connect_arg;
    expiry_stream_fn on_stream;
    void *on_stream_arg;
    char channel[EXPIRY_CHANNEL_MAX];
    char stream_channel[MIRROR_STREAM_CHANNEL_MAX];
    bool was_down; /* an outage is logged once, not per retry */
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
take(struct expiry *e, const redisReply *r)
{
    struct reminder_key k;

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
        r->element[0]->type != REDIS_REPLY_STRING || strcmp(r->element[0]->str, "message") != 0 ||
        r->element[1]->type != REDIS_REPLY_STRING || r->element[2]->type != REDIS_REPLY_STRING)
        return;
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
lost(struct expiry *e, const char *why)
{
    if (atomic_load(&e->connected) || !e->was_down)
        LOG_WARN("expiry: subscriber disconnected (%s); reconnecting", why);
    e->was_down = true;
    atomic_store(&e->connected, false);
    mirror_conn_lost(e->mi);
}

/* SUBSCRIBE to one or two channels: one confirmation reply per channel. */
static int
subscribe(struct expiry *e, redisContext *c)
{
    const char *argv[] = {"SUBSCRIBE", e->channel, e->stream_channel};
    size_t lens[] = {9, strlen(e->channel), strlen(e->stream_channel)};
    int argc = e->on_stream != NULL ? 3 : 2, ok = 1;

    if (redisAppendCommandArgv(c, argc, argv, lens) != REDIS_OK)
        return -1;
    for (int i = 1; i < argc && ok; i++) {
        redisReply *r = NULL;

        ok = redisGetReply(c, (void **)&r) == REDIS_OK && r != NULL &&
             r->type == REDIS_REPLY_ARRAY && r->elements == 3;
        if (r != NULL)
            freeReplyObject(r);
    }
    if (!ok)
        return -1;
    atomic_store(&e->connected, true);
    if (e->was_down)
        LOG_INFO("expiry: subscribed to %s again", e->channel);
    e->was_down = false;
    if (e->on_connect != NULL)
        e->on_connect(e->on_connect_arg);
    return 0;
}

/* Parses what is buffered, then waits up to EXPIRY_POLL_MS for more. -1 when the connection
 * failed. */
static int
pump(struct expiry *e, redisContext *c)
{
    void *reply;
    struct pollfd pfd = {.fd = c->fd, .events = POLLIN};

    for (;;) {
        if (redisGetReplyFromReader(c, &reply) != REDIS_OK)
            return -1;
        if (reply == NULL)
            break;
        take(e, reply);
        freeReplyObject(reply);
    }
    flush(e);
    int rc = poll(&pfd, 1, EXPIRY_POLL_MS);
    if (rc == 0)
        return 0;
    if (rc < 0 || redisBufferRead(c) != REDIS_OK)
        return -1;
    return 0;
}

static void *
run(void *arg)
{
    struct expiry *e = arg;

    while (!atomic_load(&e->stop)) {
        redisContext *c = mirror_conn(e->mi);

        if (c == NULL) {
            if (!e->was_down)
                LOG_WARN("expiry: redis unavailable; retrying");
            e->was_down = true;
            poll(NULL, 0, EXPIRY_POLL_MS);
            continue;
        }
        if (!atomic_load(&e->connected) && subscribe(e, c) != 0) {
            lost(e, "SUBSCRIBE failed");
            continue;
        }
        if (pump(e, c) != 0)
            lost(e, c->errstr[0] ? c->errstr : "read failed");
    }
    return NULL;
}

struct expiry *
expiry_start(const struct expiry_opts *opts)
{
    struct expiry *e = calloc(1, sizeof *e);

    if (e == NULL)
        return NULL;
    atomic_init(&e->stop, false);
    atomic_init(&e->connected, false);
    e->d = opts->dispatch;
    e->members = opts->members;
    e->on_connect = opts->on_connect;
    e->on_connect_arg = opts->on_connect_arg;
    e->on_stream = opts->on_stream;
    e->on_stream_arg = opts->on_stream_arg;
    mirror_stream_channel(e->stream_channel, sizeof e->stream_channel, opts->mirror.prefix);
    snprintf(e->channel, sizeof e->channel, "__keyevent@%d__:expired", opts->mirror.db);
    e->mi = mirror_new(&opts->mirror);
    if (e->mi == NULL || pthread_create(&e->thread, NULL, run, e) != 0) {
        mirror_free(e->mi);
        free(e);
        return NULL;
    }
    return e;
}

bool
expiry_connected(struct expiry *e)
{
    return e != NULL && atomic_load(&e->connected);
}

void
expiry_stop(struct expiry *e)
{
    if (e == NULL)
        return;
    atomic_store(&e->stop, true);
    pthread_join(e->thread, NULL);
    mirror_free(e->mi);
    free(e);
}
