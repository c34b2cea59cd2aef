/* expiry_cluster.c -- the per-master listeners of expiry_cluster.h. The watcher thread alone
 * starts and stops listeners; the readers (/readyz, /metrics) look at them under lock, and a
 * listener is stopped only after it left the list. */
#include "expiry_cluster.h"

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "log.h"
#include "thread.h"
#include "timefmt.h"
#include "transport.h"

#define TAG_MAX 24

struct listener {
    struct redis_url_addr addr;
    char tag[TAG_MAX];
    struct expiry *e;
};

struct expiry_cluster {
    pthread_t thread;
    atomic_bool stop;
    struct expiry_opts opts; /* strings borrowed from the caller's configuration */
    struct transport_tls *tls;
    struct cluster *cl;
    pthread_mutex_t lock;
    bool have_map;
    size_t n;
    struct listener l[CLUSTER_NODES_MAX];
    char why[CLUSTER_ERR_MAX]; /* why no map could be read, "" once one was */
};

static struct expiry *
listen_on(struct expiry_cluster *x, const struct listener *l)
{
    struct expiry_opts o = x->opts;

    o.mirror.host = l->addr.host;
    o.mirror.port = l->addr.port;
    o.mirror.db = 0;
    o.mirror.seeds = NULL;
    o.mirror.n_seeds = 0;
    o.probe_tag = l->tag;
    return expiry_start(&o);
}

/* The listener the new map wants for master i of m: kept when there is one for it with the same
 * tag, else started. */
static int
want(struct expiry_cluster *x, const struct cluster_map *m, size_t i, struct listener *out,
     bool *keep)
{
    out->addr = m->node[i];
    out->e = NULL;
    if (cluster_tag_for(m, i, 'p', out->tag, sizeof out->tag) != 0)
        return -1; /* a master without slots publishes no events of ours */
    for (size_t k = 0; k < x->n; k++)
        if (!keep[k] && x->l[k].addr.port == out->addr.port &&
            strcmp(x->l[k].addr.host, out->addr.host) == 0 && strcmp(x->l[k].tag, out->tag) == 0) {
            keep[k] = true;
            out->e = x->l[k].e;
            return 0;
        }
    LOG_INFO("expiry: listening to redis cluster master %s:%d", out->addr.host, out->addr.port);
    out->e = listen_on(x, out);
    return out->e != NULL ? 0 : -1;
}

/* Makes the listeners match m. */
static void
follow(struct expiry_cluster *x, const struct cluster_map *m)
{
    struct listener next[CLUSTER_NODES_MAX] = {0}, gone[CLUSTER_NODES_MAX] = {0};
    bool keep[CLUSTER_NODES_MAX] = {false};
    size_t n = 0, n_gone = 0;

    for (size_t i = 0; i < m->n; i++)
        if (want(x, m, i, &next[n], keep) == 0)
            n++;
    pthread_mutex_lock(&x->lock);
    for (size_t k = 0; k < x->n; k++)
        if (!keep[k])
            gone[n_gone++] = x->l[k];
    memcpy(x->l, next, n * sizeof next[0]);
    x->n = n;
    x->have_map = true;
    x->why[0] = '\0';
    pthread_mutex_unlock(&x->lock);
    for (size_t k = 0; k < n_gone; k++) {
        LOG_INFO("expiry: redis cluster master %s:%d left the slot map (or its probe tag moved)",
                 gone[k].addr.host, gone[k].addr.port);
        expiry_stop(gone[k].e);
    }
}

static void *
watch(void *arg)
{
    struct expiry_cluster *x = arg;
    uint64_t seen = 0;
    int64_t next = 0;

    thread_set_name("tocsin-expiry-cl");
    while (!atomic_load(&x->stop)) {
        if (timefmt_mono_ms() >= next) {
            next = timefmt_mono_ms() + EXPIRY_CLUSTER_TOPOLOGY_MS;
            if (cluster_refresh(x->cl) != 0) {
                pthread_mutex_lock(&x->lock);
                snprintf(x->why, sizeof x->why, "%s", cluster_error(x->cl));
                pthread_mutex_unlock(&x->lock);
            } else if (!x->have_map || cluster_map_serial(x->cl) != seen) {
                seen = cluster_map_serial(x->cl);
                follow(x, cluster_map(x->cl));
            }
        }
        poll(NULL, 0, EXPIRY_POLL_MS);
    }
    return NULL;
}

static void
free_cluster(struct expiry_cluster *x)
{
    for (size_t k = 0; k < x->n; k++)
        expiry_stop(x->l[k].e);
    cluster_free(x->cl);
    transport_tls_free(x->tls);
    pthread_mutex_destroy(&x->lock);
    free(x);
}

struct expiry_cluster *
expiry_cluster_start(const struct expiry_opts *o)
{
    struct expiry_cluster *x = calloc(1, sizeof *x);
    const struct mirror_opts *mo = &o->mirror;
    char err[TRANSPORT_ERR_MAX];

    if (x == NULL)
        return NULL;
    pthread_mutex_init(&x->lock, NULL);
    atomic_init(&x->stop, false);
    x->opts = *o;
    if (mo->tls && (x->tls = transport_tls_new(mo->tls_ca, mo->tls_cert, mo->tls_key, err,
                                               sizeof err)) == NULL) {
        free_cluster(x);
        return NULL;
    }
    struct cluster_opts co = {mo->seeds,
                              mo->n_seeds,
                              mo->user,
                              mo->password,
                              x->tls,
                              mo->timeout_ms > 0 ? mo->timeout_ms : MIRROR_CONNECT_TIMEOUT_MS,
                              mo->timeout_ms > 0 ? mo->timeout_ms : MIRROR_COMMAND_TIMEOUT_MS};
    snprintf(x->why, sizeof x->why, "no slot map read yet");
    if ((x->cl = cluster_new(&co)) == NULL || pthread_create(&x->thread, NULL, watch, x) != 0) {
        free_cluster(x);
        return NULL;
    }
    return x;
}

void
expiry_cluster_stop(struct expiry_cluster *x)
{
    if (x == NULL)
        return;
    atomic_store(&x->stop, true);
    pthread_join(x->thread, NULL);
    free_cluster(x);
}

bool
expiry_cluster_connected(struct expiry_cluster *x)
{
    bool all;

    pthread_mutex_lock(&x->lock);
    all = x->have_map && x->n > 0;
    for (size_t k = 0; k < x->n && all; k++)
        all = expiry_connected(x->l[k].e);
    pthread_mutex_unlock(&x->lock);
    return all;
}

enum expiry_notify
expiry_cluster_notify(struct expiry_cluster *x)
{
    enum expiry_notify worst = EXPIRY_NOTIFY_OK;

    pthread_mutex_lock(&x->lock);
    if (x->n == 0)
        worst = EXPIRY_NOTIFY_UNKNOWN;
    for (size_t k = 0; k < x->n; k++) {
        enum expiry_notify s = expiry_notify_state(x->l[k].e);
        if (s == EXPIRY_NOTIFY_MISSING || (s == EXPIRY_NOTIFY_UNKNOWN && worst == EXPIRY_NOTIFY_OK))
            worst = s;
    }
    pthread_mutex_unlock(&x->lock);
    return worst;
}

void
expiry_cluster_error(struct expiry_cluster *x, char *buf, size_t buflen)
{
    size_t used = 0;

    buf[0] = '\0';
    pthread_mutex_lock(&x->lock);
    if (x->why[0] != '\0')
        used = (size_t)snprintf(buf, buflen, "redis cluster: %s", x->why);
    for (size_t k = 0; k < x->n && used < buflen; k++) {
        char why[EXPIRY_ERROR_MAX];

        expiry_redis_error(x->l[k].e, why, sizeof why);
        if (why[0] == '\0' && expiry_connected(x->l[k].e))
            continue;
        used += (size_t)snprintf(buf + used, buflen - used, "%smaster %s:%d: %s", used ? "; " : "",
                                 x->l[k].addr.host, x->l[k].addr.port,
                                 why[0] ? why : "not subscribed yet");
    }
    pthread_mutex_unlock(&x->lock);
}

size_t
expiry_cluster_masters(struct expiry_cluster *x, struct expiry_master *out, size_t cap)
{
    size_t n = 0;

    pthread_mutex_lock(&x->lock);
    for (; n < x->n && n < cap; n++) {
        snprintf(out[n].addr, sizeof out[n].addr, "%s:%d", x->l[n].addr.host, x->l[n].addr.port);
        out[n].subscribed = expiry_connected(x->l[n].e);
    }
    pthread_mutex_unlock(&x->lock);
    return n;
}
