/* sentinel.c -- the Sentinel client of sentinel.h. A Sentinel answers on a connection of its own,
 * opened for one question and closed after it: discovery happens once per reconnect, and a
 * connection kept open per thread would be one more to watch. The watcher's subscription is the
 * one long-lived Sentinel connection of a process. */
#include "sentinel.h"

#include <hiredis/hiredis.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "metrics.h"
#include "redis_conn.h"
#include "thread.h"

#define SENTINEL_PORT_TEXT_MAX 8 /* "65535" and NUL */
#define SENTINEL_SWITCH_FIELDS 5 /* name, old ip, old port, new ip, new port */

/* What the process knows of the master: its address and the epoch of that address. */
static pthread_mutex_t known_lock = PTHREAD_MUTEX_INITIALIZER;
static char known_host[REDIS_URL_HOST_MAX]; /* "" before the first answer (known_lock) */
static int known_port;                      /* (known_lock) */
static atomic_uint_fast64_t epoch;
/* The Sentinel to ask first: the one that answered last (the guidelines' "move it to the head"). */
static atomic_size_t first;

uint64_t
sentinel_epoch(void)
{
    return atomic_load(&epoch);
}

uint64_t
sentinel_note_master(const char *host, int port)
{
    bool moved;
    uint64_t now;

    pthread_mutex_lock(&known_lock);
    moved = known_host[0] != '\0' && (strcmp(known_host, host) != 0 || known_port != port);
    if (moved || known_host[0] == '\0') {
        snprintf(known_host, sizeof known_host, "%s", host);
        known_port = port;
    }
    now = moved ? atomic_fetch_add(&epoch, 1) + 1 : atomic_load(&epoch);
    pthread_mutex_unlock(&known_lock);
    if (moved) {
        metrics_add(METRIC_REDIS_FAILOVERS, 1);
        LOG_INFO("sentinel: the redis master is now %s:%d; reconnecting to it", host, port);
    }
    return now;
}

static int
reply_ok(const redisReply *r)
{
    return r != NULL && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0;
}

/* Connects to Sentinel i and authenticates. NULL with why in err. */
static struct redis_conn *
open_one(const struct sentinel_opts *o, size_t i, char *err, size_t errlen)
{
    const struct redis_url_addr *a = &o->addrs[i];
    struct redis_conn *c =
        redis_conn_open(a->host, a->port, o->tls, o->connect_ms, o->io_ms, err, errlen);

    if (c == NULL || o->password == NULL)
        return c;
    const char *argv[] = {"AUTH", o->user ? o->user : o->password, o->password};
    redisReply *r = redis_conn_command(c, o->user ? 3 : 2, argv, NULL);
    if (!reply_ok(r)) {
        snprintf(err, errlen, "sentinel %.100s:%d refused AUTH%s%.100s", a->host, a->port,
                 r != NULL && r->type == REDIS_REPLY_ERROR ? ": " : "",
                 r != NULL && r->type == REDIS_REPLY_ERROR ? r->str : "");
        redis_conn_free(c);
        c = NULL;
    }
    if (r != NULL)
        freeReplyObject(r);
    return c;
}

/* Strict decimal port 1..65535. */
static int
port_of(const char *s, size_t len, int *port)
{
    int v = 0;

    if (len == 0 || len >= SENTINEL_PORT_TEXT_MAX)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (v < 1 || v > 65535)
        return -1;
    *port = v;
    return 0;
}

/* The reply to SENTINEL get-master-addr-by-name: [ip, port], or nil for a master it does not
 * know. */
static int
master_of(const redisReply *r, char *host, int *port)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_STRING ||
        r->element[0]->len == 0 || r->element[0]->len >= REDIS_URL_HOST_MAX)
        return -1;
    memcpy(host, r->element[0]->str, r->element[0]->len);
    host[r->element[0]->len] = '\0';
    return port_of(r->element[1]->str, r->element[1]->len, port);
}

/* Asks the Sentinel on c. 0, or -1 with why in err. */
static int
ask(const struct sentinel_opts *o, size_t i, struct redis_conn *c, char *host, int *port, char *err,
    size_t errlen)
{
    const char *argv[] = {"SENTINEL", "get-master-addr-by-name", o->master};
    redisReply *r = redis_conn_command(c, 3, argv, NULL);
    int rc = -1;

    if (r == NULL)
        snprintf(err, errlen, "sentinel %.100s:%d: %.120s", o->addrs[i].host, o->addrs[i].port,
                 redis_conn_error(c));
    else if (r->type == REDIS_REPLY_ERROR)
        snprintf(err, errlen, "sentinel %.100s:%d: %.120s", o->addrs[i].host, o->addrs[i].port,
                 r->str);
    else if ((rc = master_of(r, host, port)) != 0)
        snprintf(err, errlen, "sentinel %.100s:%d does not know the master %s", o->addrs[i].host,
                 o->addrs[i].port, o->master);
    if (r != NULL)
        freeReplyObject(r);
    return rc;
}

int
sentinel_master_addr(const struct sentinel_opts *o, char *host, int *port, uint64_t *ep, char *err,
                     size_t errlen)
{
    size_t start = atomic_load(&first) % o->n;

    for (size_t k = 0; k < o->n; k++) {
        size_t i = (start + k) % o->n;
        struct redis_conn *c = open_one(o, i, err, errlen);
        int rc = c != NULL ? ask(o, i, c, host, port, err, errlen) : -1;

        redis_conn_free(c);
        if (rc == 0) {
            atomic_store(&first, i);
            *ep = sentinel_note_master(host, *port);
            return 0;
        }
    }
    return -1;
}

/* Cuts msg at spaces into at most SENTINEL_SWITCH_FIELDS fields. Their number, or -1 for more. */
static int
fields(const char *msg, size_t len, const char *f[], size_t flen[])
{
    int n = 0;
    size_t i = 0;

    while (i < len) {
        size_t j = i;
        while (j < len && msg[j] != ' ')
            j++;
        if (n == SENTINEL_SWITCH_FIELDS)
            return -1;
        f[n] = msg + i;
        flen[n++] = j - i;
        i = j + 1;
    }
    return n;
}

int
sentinel_parse_switch(const char *msg, size_t len, const char *master, char *host, int *port)
{
    const char *f[SENTINEL_SWITCH_FIELDS];
    size_t flen[SENTINEL_SWITCH_FIELDS];

    if (fields(msg, len, f, flen) != SENTINEL_SWITCH_FIELDS || flen[0] != strlen(master) ||
        memcmp(f[0], master, flen[0]) != 0 || flen[3] == 0 || flen[3] >= REDIS_URL_HOST_MAX ||
        port_of(f[4], flen[4], port) != 0)
        return -1;
    memcpy(host, f[3], flen[3]);
    host[flen[3]] = '\0';
    return 0;
}

struct sentinel_watch {
    pthread_t thread;
    atomic_bool stop;
    struct sentinel_opts o; /* its strings and addrs are the copies below */
    struct redis_url_addr addrs[REDIS_URL_SENTINELS_MAX];
    char *master, *user, *password;
    size_t next; /* the Sentinel to subscribe on next */
};

/* Opens the next Sentinel that answers, asks it for the master first (a switch while no
 * Sentinel was watched is noted now; one between this question and the subscription is seen by
 * the next connect that fails), then subscribes to +switch-master. NULL when none answered. */
static struct redis_conn *
watch_open(struct sentinel_watch *w, char *err, size_t errlen)
{
    const char *argv[] = {"SUBSCRIBE", "+switch-master"};

    for (size_t k = 0; k < w->o.n; k++) {
        size_t i = (w->next + k) % w->o.n;
        char host[REDIS_URL_HOST_MAX];
        int port;
        struct redis_conn *c = open_one(&w->o, i, err, errlen);
        redisReply *r = NULL;

        if (c != NULL && ask(&w->o, i, c, host, &port, err, errlen) == 0)
            sentinel_note_master(host, port);
        if (c != NULL && (r = redis_conn_command(c, 2, argv, NULL)) != NULL &&
            r->type == REDIS_REPLY_ARRAY) {
            freeReplyObject(r);
            w->next = i;
            return c;
        }
        if (r != NULL)
            freeReplyObject(r);
        redis_conn_free(c);
    }
    return NULL;
}

/* One pushed message: ["message", "+switch-master", payload]. */
static void
take(void *arg, const redisReply *r)
{
    struct sentinel_watch *w = arg;
    char host[REDIS_URL_HOST_MAX];
    int port;

    if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
        r->element[0]->type == REDIS_REPLY_STRING && strcmp(r->element[0]->str, "message") == 0 &&
        r->element[2]->type == REDIS_REPLY_STRING &&
        sentinel_parse_switch(r->element[2]->str, r->element[2]->len, w->master, host, &port) ==
            0) {
        /* The connections now ask this Sentinel first: one that has not heard of the switch yet
         * would send them back to the old master until it has. */
        atomic_store(&first, w->next);
        sentinel_note_master(host, port);
    }
}

/* Reads what the subscription brought within SENTINEL_POLL_MS. -1 when it is lost. */
static int
pump(struct sentinel_watch *w, struct redis_conn *c)
{
    if (redis_conn_drain(c, take, w) != 0)
        return -1;
    int rc = redis_conn_wait(c, SENTINEL_POLL_MS);
    return rc < 0 || (rc > 0 && redis_conn_fill(c) != 0) ? -1 : 0;
}

static void *
watch_thread(void *arg)
{
    struct sentinel_watch *w = arg;
    struct redis_conn *c = NULL;
    char err[SENTINEL_ERR_MAX] = "";
    bool warned = false;

    thread_set_name("tocsin-sentinel");
    while (!atomic_load(&w->stop)) {
        if (c == NULL && (c = watch_open(w, err, sizeof err)) == NULL) {
            if (!warned)
                LOG_WARN("sentinel: no Sentinel to watch for failovers (%s); retrying", err);
            warned = true;
            for (int t = 0; t < SENTINEL_RETRY_MS && !atomic_load(&w->stop); t += SENTINEL_POLL_MS)
                poll(NULL, 0, SENTINEL_POLL_MS);
            continue;
        }
        warned = false;
        if (pump(w, c) != 0) {
            LOG_WARN("sentinel: lost the Sentinel %s:%d (%s); watching the next one",
                     w->addrs[w->next].host, w->addrs[w->next].port, redis_conn_error(c));
            redis_conn_free(c);
            c = NULL;
            w->next = (w->next + 1) % w->o.n;
        }
    }
    redis_conn_free(c);
    return NULL;
}

static void
watch_free(struct sentinel_watch *w)
{
    free(w->master);
    free(w->user);
    free(w->password);
    free(w);
}

struct sentinel_watch *
sentinel_watch_start(const struct sentinel_opts *o)
{
    struct sentinel_watch *w = calloc(1, sizeof *w);

    if (w == NULL || o->n == 0 || o->n > REDIS_URL_SENTINELS_MAX)
        goto fail;
    w->o = *o;
    memcpy(w->addrs, o->addrs, o->n * sizeof o->addrs[0]);
    w->o.addrs = w->addrs;
    if ((w->master = strdup(o->master)) == NULL ||
        (o->user != NULL && (w->user = strdup(o->user)) == NULL) ||
        (o->password != NULL && (w->password = strdup(o->password)) == NULL))
        goto fail;
    w->o.master = w->master;
    w->o.user = w->user;
    w->o.password = w->password;
    atomic_init(&w->stop, false);
    if (pthread_create(&w->thread, NULL, watch_thread, w) != 0)
        goto fail;
    return w;
fail:
    if (w != NULL)
        watch_free(w);
    return NULL;
}

void
sentinel_watch_stop(struct sentinel_watch *w)
{
    if (w == NULL)
        return;
    atomic_store(&w->stop, true);
    pthread_join(w->thread, NULL);
    watch_free(w);
}
