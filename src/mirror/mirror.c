/* mirror.c -- the Redis mirror: its connection and arm/disarm of reminder keys (the key schema
 * is mirror_key.c's, the checks of Redis's setup mirror_checks.c's). One redis_conn per struct
 * mirror (plain TCP or TLS, redis_conn.h), connected lazily. After any I/O error the context is
 * dropped and no reconnect is tried for MIRROR_RECONNECT_BACKOFF_MS, so while Redis is down each
 * call costs a clock read. Reply errors (e.g. -ERR) keep the connection: the protocol is still in
 * sync. With Sentinel every connect first asks where the master is (follow_master) and then checks
 * ROLE; a connection to a node that is no longer the master (READONLY, a newer master epoch) is
 * replaced before the next command, without waiting for the backoff. */
#include "mirror.h"
#include "cluster.h"
#include "log.h"
#include "mirror_cluster.h"
#include "mirror_internal.h"
#include "redis_conn.h"
#include "sentinel.h"
#include "timefmt.h"
#include "transport.h"

#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MIRROR_PIPELINE_MAX 256 /* commands sent before their replies are read */

struct mirror {
    struct redis_conn *c;          /* with Cluster: master node's, borrowed from cl */
    struct cluster *cl;            /* NULL = one node (or Sentinel's master) */
    int node;                      /* with Cluster: the master c belongs to, -1 none */
    struct transport_tls *tls;     /* NULL = plain TCP */
    char host[REDIS_URL_HOST_MAX]; /* with Sentinel: the master's address last asked */
    int port;
    struct sentinel_opts sentinel; /* .n 0 = no Sentinel; its strings are the copies below */
    struct redis_url_addr *sentinels;
    char *master, *sentinel_user, *sentinel_password;
    uint64_t epoch;  /* the master epoch the connection was made in */
    uint64_t serial; /* connections made so far (mirror_conn_serial) */
    int db;
    char *password; /* NULL = no AUTH */
    char *user;     /* NULL = the default user */
    int connect_timeout_ms;
    int command_timeout_ms;
    char prefix[MIRROR_PREFIX_MAX + 1];
    int64_t horizon_ms;
    int64_t retry_at_ms;         /* monotonic; no connect attempt before this */
    size_t unread;               /* replies of mirror_disarm_nowait's DELs not read yet */
    char why[TRANSPORT_ERR_MAX]; /* why the last connect or I/O failed */
};

static void
drop(struct mirror *mi)
{
    if (mi->c != NULL) {
        if (redis_conn_error(mi->c)[0] != '\0')
            snprintf(mi->why, sizeof mi->why, "%s", redis_conn_error(mi->c));
        if (mi->cl == NULL)
            redis_conn_free(mi->c);
        else
            cluster_node_lost(mi->cl, (size_t)mi->node);
    }
    mi->node = -1;
    mi->c = NULL;
    mi->unread = 0;
    mi->retry_at_ms = timefmt_mono_ms() + MIRROR_RECONNECT_BACKOFF_MS;
}

/* Reads the replies owed to mirror_disarm_nowait, whatever they say (a key left behind is only
 * stale). 0, or -1 when the connection was lost (dropped). */
static int
read_unread(struct mirror *mi)
{
    for (; mi->unread > 0; mi->unread--) {
        redisReply *r;
        if (redis_conn_reply(mi->c, &r) != 0) {
            drop(mi);
            return -1;
        }
        freeReplyObject(r);
    }
    return 0;
}

int
mirror_reply_ok(const redisReply *r, void *arg)
{
    (void)arg;
    return r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0 ? 0 : -1;
}

int
mirror_exec(struct mirror *mi, int argc, const char **argv, mirror_reply_fn fn, void *arg)
{
    redisReply *r = redis_conn_command(mi->c, argc, argv, NULL);
    int rc;

    if (r == NULL) {
        drop(mi);
        return -1;
    }
    rc = fn(r, arg);
    freeReplyObject(r);
    return rc;
}

/* AUTH (with the ACL user name when there is one) and SELECT on a fresh connection. */
static int
handshake(struct mirror *mi)
{
    char db[MIRROR_NUM_MAX];

    if (mi->password != NULL) {
        const char *argv[] = {"AUTH", mi->user ? mi->user : mi->password, mi->password};
        if (mirror_exec(mi, mi->user ? 3 : 2, argv, mirror_reply_ok, NULL) != 0)
            return -1;
    }
    if (mi->db != 0) {
        const char *argv[] = {"SELECT", db};
        snprintf(db, sizeof db, "%d", mi->db);
        if (mirror_exec(mi, 2, argv, mirror_reply_ok, NULL) != 0)
            return -1;
    }
    return 0;
}

/* Where to connect: host:port, or with Sentinel the master's address as the Sentinels say now. */
static int
follow_master(struct mirror *mi)
{
    int port;
    char host[REDIS_URL_HOST_MAX];

    if (mi->sentinel.n == 0)
        return 0;
    if (sentinel_master_addr(&mi->sentinel, host, &port, &mi->epoch, mi->why, sizeof mi->why) != 0)
        return -1;
    memcpy(mi->host, host, sizeof host);
    mi->port = port;
    return 0;
}

static int
reply_master(const redisReply *r, void *arg)
{
    char *why = arg;

    if (r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
        r->element[0]->type == REDIS_REPLY_STRING && strcmp(r->element[0]->str, "master") == 0)
        return 0;
    snprintf(why, TRANSPORT_ERR_MAX, "ROLE: %s",
             r->type == REDIS_REPLY_ERROR ? r->str
             : r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
                     r->element[0]->type == REDIS_REPLY_STRING
                 ? r->element[0]->str
                 : "unexpected reply");
    return -1;
}

/* The Sentinels' answer may be old (a failover under way): the node must say it is master. */
static int
check_role(struct mirror *mi)
{
    const char *argv[] = {"ROLE"};
    char why[TRANSPORT_ERR_MAX];

    if (mi->sentinel.n == 0)
        return 0;
    if (mirror_exec(mi, 1, argv, reply_master, why) == 0)
        return 0;
    if (mi->c != NULL)
        snprintf(mi->why, sizeof mi->why, "%.100s:%d is not the master (%.120s)", mi->host,
                 mi->port, why);
    return -1;
}

/* A connection to a node that is no longer the master: it answered READONLY, or Sentinel has
 * named another master since it was made. */
static int
stale(const struct mirror *mi)
{
    return redis_conn_readonly(mi->c) || (mi->sentinel.n > 0 && mi->epoch != sentinel_epoch());
}

int
mirror_connect(struct mirror *mi)
{
    if (mi->cl != NULL) /* the caller picked a master (use_node) */
        return mi->c != NULL ? 0 : -1;
    if (mi->c != NULL && !stale(mi))
        return read_unread(mi);
    if (mi->c != NULL) { /* no longer the master: reconnect now, not after a backoff */
        if (redis_conn_readonly(mi->c))
            LOG_WARN("mirror: redis %s:%d answered READONLY (a replica now); reconnecting",
                     mi->host, mi->port);
        redis_conn_free(mi->c);
        mi->c = NULL;
        mi->unread = 0;
        mi->retry_at_ms = 0;
    }
    /* A connect that failed while the old master was gone waits no longer once a new one is
     * named (the epoch only moves when the Sentinels answer with a new address: no spinning). */
    if (mi->sentinel.n > 0 && mi->epoch != sentinel_epoch())
        mi->retry_at_ms = 0;
    if (timefmt_mono_ms() < mi->retry_at_ms)
        return -1;
    if (follow_master(mi) != 0)
        goto fail;
    /* The transport sets TCP keepalive: the expiry subscriber only ever reads, so without it a
     * Redis host that vanished without a reset left it waiting, "subscribed", for the kernel's two
     * hours; now its read fails within about half a minute and it reconnects. */
    mi->c = redis_conn_open(mi->host, mi->port, mi->tls, mi->connect_timeout_ms,
                            mi->command_timeout_ms, mi->why, sizeof mi->why);
    if (mi->c == NULL)
        goto fail;
    mi->why[0] = '\0';
    if (handshake(mi) != 0) {
        if (mi->c != NULL && redis_conn_error(mi->c)[0] == '\0')
            snprintf(mi->why, sizeof mi->why, "AUTH or SELECT refused");
        goto fail;
    }
    if (check_role(mi) != 0)
        goto fail;
    mi->serial++;
    return 0;
fail:
    drop(mi);
    return -1;
}

/* Connects if needed, then runs one command. */
static int
call(struct mirror *mi, int argc, const char **argv, mirror_reply_fn fn, void *arg)
{
    if (mirror_connect(mi) != 0)
        return -1;
    return mirror_exec(mi, argc, argv, fn, arg);
}

/* With Cluster: points mi->c at master i's connection (borrowed from the router, valid until the
 * next router call), naming the master in mi->host for messages. */
static int
use_node(struct mirror *mi, size_t i)
{
    const struct cluster_map *m = cluster_map(mi->cl);

    mi->c = NULL;
    mi->node = -1;
    if (m == NULL || i >= m->n) {
        snprintf(mi->why, sizeof mi->why, "no Cluster slot map: %s", cluster_error(mi->cl));
        return -1;
    }
    snprintf(mi->host, sizeof mi->host, "%s", m->node[i].host);
    mi->port = m->node[i].port;
    if ((mi->c = cluster_node_conn(mi->cl, i)) == NULL) {
        snprintf(mi->why, sizeof mi->why, "master %s", cluster_error(mi->cl));
        return -1;
    }
    mi->node = (int)i;
    return 0;
}

/* With Cluster: mi->c at the master of key's slot. */
static int
use_slot(struct mirror *mi, const char *key)
{
    const struct cluster_map *m = cluster_map(mi->cl);
    unsigned slot = cluster_key_slot(key, strlen(key));

    if (m == NULL || m->slot[slot] == CLUSTER_NO_NODE) {
        snprintf(mi->why, sizeof mi->why, "no master serves slot %u", slot);
        return -1;
    }
    return use_node(mi, m->slot[slot]);
}

int
mirror_each_master(struct mirror *mi, mirror_node_fn fn, void *arg)
{
    const struct cluster_map *m = cluster_map(mi->cl);
    size_t n = m != NULL ? m->n : 0;
    int rc = n > 0 ? 0 : -1;

    if (n == 0)
        snprintf(mi->why, sizeof mi->why, "no Cluster slot map: %s", cluster_error(mi->cl));
    for (size_t i = 0; i < n; i++)
        if (use_node(mi, i) != 0 || fn(mi, i, arg) != 0)
            rc = -1;
    mi->c = NULL;
    mi->node = -1;
    return rc;
}

struct mirror_opts
mirror_opts_of(const struct config *cfg, int timeout_ms)
{
    return (struct mirror_opts){
        .host = cfg->redis_host,
        .port = cfg->redis_port,
        .db = cfg->redis_db,
        .password = cfg->redis_password[0] != '\0' ? cfg->redis_password : NULL,
        .prefix = cfg->redis_prefix,
        .horizon_ms = cfg->mirror_horizon_ms,
        .user = cfg->redis_user[0] != '\0' ? cfg->redis_user : NULL,
        .timeout_ms = timeout_ms,
        .tls = cfg->redis_tls,
        .tls_ca = cfg->redis_tls_ca[0] != '\0' ? cfg->redis_tls_ca : NULL,
        .tls_cert = cfg->redis_tls_cert[0] != '\0' ? cfg->redis_tls_cert : NULL,
        .tls_key = cfg->redis_tls_key[0] != '\0' ? cfg->redis_tls_key : NULL,
        .sentinels = cfg->redis_sentinels,
        .n_sentinels = cfg->redis_sentinels_n,
        .master = cfg->redis_master,
        .sentinel_user = cfg->redis_sentinel_user[0] != '\0' ? cfg->redis_sentinel_user : NULL,
        .sentinel_password =
            cfg->redis_sentinel_password[0] != '\0' ? cfg->redis_sentinel_password : NULL,
        .seeds = cfg->redis_seeds,
        .n_seeds = cfg->redis_seeds_n,
    };
}

/* Copies the Sentinel options of opts into mi->sentinel (strings and addresses owned by mi). */
static int
copy_sentinel(struct mirror *mi, const struct mirror_opts *opts)
{
    size_t n = opts->n_sentinels;

    if (n == 0)
        return 0;
    if (n > REDIS_URL_SENTINELS_MAX || opts->master == NULL ||
        (mi->sentinels = malloc(n * sizeof *mi->sentinels)) == NULL ||
        (mi->master = strdup(opts->master)) == NULL ||
        (opts->sentinel_user != NULL &&
         (mi->sentinel_user = strdup(opts->sentinel_user)) == NULL) ||
        (opts->sentinel_password != NULL &&
         (mi->sentinel_password = strdup(opts->sentinel_password)) == NULL))
        return -1;
    memcpy(mi->sentinels, opts->sentinels, n * sizeof *mi->sentinels);
    mi->sentinel = (struct sentinel_opts){mi->sentinels,
                                          n,
                                          mi->master,
                                          mi->sentinel_user,
                                          mi->sentinel_password,
                                          mi->tls,
                                          mi->connect_timeout_ms,
                                          mi->command_timeout_ms};
    return 0;
}

struct mirror *
mirror_new(const struct mirror_opts *opts)
{
    struct mirror *mi = calloc(1, sizeof *mi);

    if (mi == NULL || opts->prefix == NULL || strlen(opts->prefix) > MIRROR_PREFIX_MAX)
        goto fail;
    if (snprintf(mi->host, sizeof mi->host, "%s", opts->host != NULL ? opts->host : "127.0.0.1") >=
        (int)sizeof mi->host)
        goto fail;
    if (opts->password != NULL && (mi->password = strdup(opts->password)) == NULL)
        goto fail;
    if (opts->user != NULL && (mi->user = strdup(opts->user)) == NULL)
        goto fail;
    /* A context per mirror (each belongs to one thread); main.c made one at start to stop on a
     * bad file, so this one fails only when memory does. */
    if (opts->tls && (mi->tls = transport_tls_new(opts->tls_ca, opts->tls_cert, opts->tls_key,
                                                  mi->why, sizeof mi->why)) == NULL)
        goto fail;
    mi->connect_timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : MIRROR_CONNECT_TIMEOUT_MS;
    mi->command_timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : MIRROR_COMMAND_TIMEOUT_MS;
    mi->port = opts->port;
    mi->db = opts->db;
    strcpy(mi->prefix, opts->prefix);
    mi->horizon_ms = opts->horizon_ms;
    if (copy_sentinel(mi, opts) != 0)
        goto fail;
    mi->node = -1;
    if (opts->n_seeds > 0) {
        struct cluster_opts co = {opts->seeds,           opts->n_seeds, mi->user,
                                  mi->password,          mi->tls,       mi->connect_timeout_ms,
                                  mi->command_timeout_ms};
        if ((mi->cl = cluster_new(&co)) == NULL)
            goto fail;
    }
    return mi;
fail:
    mirror_free(mi);
    return NULL;
}

void
mirror_free(struct mirror *mi)
{
    if (mi == NULL)
        return;
    if (mi->cl == NULL)
        redis_conn_free(mi->c);
    cluster_free(mi->cl);
    transport_tls_free(mi->tls);
    free(mi->sentinels);
    free(mi->master);
    free(mi->sentinel_user);
    free(mi->sentinel_password);
    free(mi->password);
    free(mi->user);
    free(mi);
}

/* Reads n pipelined replies. Counts "OK" replies into *n_ok (a nil reply is an NX that found the
 * key; an integer is a DEL count). Drops the connection on an I/O error. */
static int
collect(struct mirror *mi, size_t n, size_t *n_ok)
{
    int rc = 0;

    for (size_t i = 0; i < n; i++) {
        redisReply *r;

        if (redis_conn_reply(mi->c, &r) != 0) {
            drop(mi);
            return -1;
        }
        if (r->type == REDIS_REPLY_ERROR)
            rc = -1;
        else if (r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0)
            (*n_ok)++;
        freeReplyObject(r);
    }
    return rc;
}

/* Queues one SET ... PXAT. The key and number buffers are copied into the output buffer. */
static int
append_set(struct mirror *mi, const struct reminder_key *k, int only_missing)
{
    char key[MIRROR_KEY_MAX], at[MIRROR_NUM_MAX];
    const char *argv[] = {"SET", key, "", "PXAT", at, "NX"};
    size_t lens[6];

    lens[1] = mirror_key_format(key, sizeof key, mi->prefix, k->reminder_id, k->fire_at_ms);
    lens[4] = (size_t)snprintf(at, sizeof at, "%" PRId64, k->fire_at_ms);
    lens[0] = 3, lens[2] = 0, lens[3] = 4, lens[5] = 2;
    if (redis_conn_append(mi->c, only_missing ? 6 : 5, argv, lens) != 0) {
        drop(mi);
        return -1;
    }
    return 0;
}

int
mirror_arm_count(struct mirror *mi, const struct reminder_key *keys, size_t n, int64_t now_ms,
                 int only_missing, size_t *n_set)
{
    size_t i = 0, ok = 0;
    int rc = 0;

    if (mi->cl != NULL)
        return mirror_cluster_arm(mi, keys, n, now_ms, mi->horizon_ms, only_missing, n_set);
    while (i < n) {
        size_t queued = 0;

        for (; i < n && queued < MIRROR_PIPELINE_MAX; i++) {
            if (keys[i].fire_at_ms <= now_ms || keys[i].fire_at_ms - now_ms > mi->horizon_ms)
                continue;
            if ((queued == 0 && mirror_connect(mi) != 0) ||
                append_set(mi, &keys[i], only_missing) != 0) {
                rc = -1;
                goto done;
            }
            queued++;
        }
        if (queued > 0 && collect(mi, queued, &ok) != 0) {
            rc = -1;
            if (mi->c == NULL)
                break;
        }
    }
done:
    if (n_set != NULL)
        *n_set += ok;
    return rc;
}

int
mirror_arm(struct mirror *mi, const struct reminder_key *keys, size_t n, int64_t now_ms,
           int only_missing)
{
    return mirror_arm_count(mi, keys, n, now_ms, only_missing, NULL);
}

/* Queues one DEL. */
static int
append_del(struct mirror *mi, const struct reminder_key *k)
{
    char key[MIRROR_KEY_MAX];
    const char *argv[] = {"DEL", key};
    size_t lens[2] = {3, 0};

    lens[1] = mirror_key_format(key, sizeof key, mi->prefix, k->reminder_id, k->fire_at_ms);
    if (redis_conn_append(mi->c, 2, argv, lens) != 0) {
        drop(mi);
        return -1;
    }
    return 0;
}

/* As in mirror_arm_count, an error reply in one chunk does not stop the others: a key left
 * behind is only stale (its expired event finds nothing to fire) but costs memory and a wasted
 * claim, so every chunk that can still be sent is; only a lost connection ends the call. */
int
mirror_disarm(struct mirror *mi, const struct reminder_key *keys, size_t n)
{
    size_t i = 0, ok = 0;
    int rc = 0;

    if (mi->cl != NULL)
        return mirror_cluster_disarm(mi, keys, n);
    while (i < n) {
        size_t queued = 0;

        if (mirror_connect(mi) != 0)
            return -1;
        for (; i < n && queued < MIRROR_PIPELINE_MAX; i++, queued++)
            if (append_del(mi, &keys[i]) != 0)
                return -1;
        if (collect(mi, queued, &ok) != 0) {
            rc = -1;
            if (mi->c == NULL)
                break;
        }
    }
    return rc;
}

int
mirror_disarm_nowait(struct mirror *mi, const struct reminder_key *keys, size_t n)
{
    if (n == 0)
        return 0;
    if (mi->cl != NULL) /* one pipeline per master: cluster_run waits for its replies */
        return mirror_cluster_disarm(mi, keys, n);
    if (mirror_connect(mi) != 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (append_del(mi, &keys[i]) != 0)
            return -1;
    if (redis_conn_flush(mi->c) != 0) {
        drop(mi);
        return -1;
    }
    mi->unread = n;
    return 0;
}

int
mirror_call_key(struct mirror *mi, const char *key, int argc, const char **argv, mirror_reply_fn fn,
                void *arg)
{
    if (mi->cl == NULL)
        return call(mi, argc, argv, fn, arg);
    int rc = use_slot(mi, key) == 0 ? mirror_exec(mi, argc, argv, fn, arg) : -1;
    mi->c = NULL;
    mi->node = -1;
    return rc;
}

/* Accessors for mirror_checks.c, mirror_claim.c, mirror_stream.c and expiry.c (mirror_internal.h).
 */
/* With Cluster: the first master that answers (PUBLISH reaches every node's subscribers). */
struct redis_conn *
mirror_conn(struct mirror *mi)
{
    const struct cluster_map *m;

    if (mi->cl == NULL)
        return mirror_connect(mi) == 0 ? mi->c : NULL;
    m = cluster_map(mi->cl);
    for (size_t i = 0; m != NULL && i < m->n; i++)
        if (use_node(mi, i) == 0)
            return mi->c;
    return NULL;
}

struct cluster *
mirror_cluster(const struct mirror *mi)
{
    return mi->cl;
}

const char *
mirror_conn_error(const struct mirror *mi)
{
    return mi->why;
}

uint64_t
mirror_conn_serial(const struct mirror *mi)
{
    return mi->serial;
}

void
mirror_conn_lost(struct mirror *mi)
{
    drop(mi);
}

const char *
mirror_prefix(const struct mirror *mi)
{
    return mi->prefix;
}

const char *
mirror_addr(const struct mirror *mi, int *port)
{
    *port = mi->port;
    return mi->host;
}
