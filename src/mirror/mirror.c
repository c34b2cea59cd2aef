/* mirror.c -- the Redis mirror: key schema, arm/disarm of reminder keys, and the Redis setup
 * checks. One redis_conn per struct mirror (plain TCP or TLS, redis_conn.h), connected lazily.
 * After any I/O error the context is dropped and no reconnect is tried for
 * MIRROR_RECONNECT_BACKOFF_MS, so while Redis is down each call costs a clock read. Reply errors
 * (e.g. -ERR) keep the connection: the protocol is still in sync. With Sentinel every connect
 * first asks where the master is (follow_master) and then checks ROLE; a connection to a node
 * that is no longer the master (READONLY, a newer master epoch) is replaced before the next
 * command, without waiting for the backoff. */
#include "mirror.h"
#include "cluster.h"
#include "log.h"
#include "mirror_cluster.h"
#include "mirror_internal.h"
#include "redis_conn.h"
#include "sentinel.h"
#include "shard.h"
#include "timefmt.h"
#include "transport.h"

#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MIRROR_PIPELINE_MAX 256 /* commands sent before their replies are read */
#define MIRROR_NUM_MAX 24       /* decimal int64 and NUL */
#define MIRROR_NOTIFY_MAX 64    /* bytes of a notify-keyspace-events value we handle */

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

/* Inspects one reply (error replies included); the caller frees it. Returns 0 or -1. */
typedef int (*reply_fn)(const redisReply *r, void *arg);

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

static int
reply_ok(const redisReply *r, void *arg)
{
    (void)arg;
    return r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0 ? 0 : -1;
}

/* One command on the current connection; the reply is freed here, after fn looked at it. */
static int
exec(struct mirror *mi, int argc, const char **argv, reply_fn fn, void *arg)
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
        if (exec(mi, mi->user ? 3 : 2, argv, reply_ok, NULL) != 0)
            return -1;
    }
    if (mi->db != 0) {
        const char *argv[] = {"SELECT", db};
        snprintf(db, sizeof db, "%d", mi->db);
        if (exec(mi, 2, argv, reply_ok, NULL) != 0)
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
    if (exec(mi, 1, argv, reply_master, why) == 0)
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

/* Makes sure mi->c is usable. Fails at once while the backoff after the last failure runs. */
static int
connected(struct mirror *mi)
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
call(struct mirror *mi, int argc, const char **argv, reply_fn fn, void *arg)
{
    if (connected(mi) != 0)
        return -1;
    return exec(mi, argc, argv, fn, arg);
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

/* Runs fn on every master in turn (with mi->c at it): the checks about Redis as a whole. -1 when
 * one failed; mi->why names the last master that did. */
typedef int (*node_fn)(struct mirror *mi, size_t i, void *arg);

static int
each_master(struct mirror *mi, node_fn fn, void *arg)
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

size_t
mirror_occurrence_key(char *buf, size_t buflen, const char *prefix, const char *kind,
                      int64_t reminder_id, int64_t fire_at_ms)
{
    int n =
        snprintf(buf, buflen, "%s:%s:%" PRId64 ":%" PRId64, prefix, kind, reminder_id, fire_at_ms);

    if (n < 0 || (size_t)n >= buflen)
        return 0;
    return (size_t)n;
}

size_t
mirror_tagged_key(char *buf, size_t buflen, const char *prefix, const char *kind,
                  int64_t reminder_id, int64_t fire_at_ms)
{
    char tagged[MIRROR_PREFIX_MAX + 16];

    snprintf(tagged, sizeof tagged, "%s:{s%u}", prefix, shard_of(reminder_id));
    return mirror_occurrence_key(buf, buflen, tagged, kind, reminder_id, fire_at_ms);
}

size_t
mirror_key_format(char *buf, size_t buflen, const char *prefix, int64_t reminder_id,
                  int64_t fire_at_ms)
{
    return mirror_occurrence_key(buf, buflen, prefix, "rem", reminder_id, fire_at_ms);
}

/* Parses [s, end) as a canonical non-negative decimal: digits only, no leading zero, no
 * overflow. */
static int
parse_num(const char *s, const char *end, int64_t *out)
{
    int64_t v = 0;

    if (s == end || (*s == '0' && end - s > 1))
        return -1;
    for (; s < end; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        if (v > (INT64_MAX - (*s - '0')) / 10)
            return -1;
        v = v * 10 + (*s - '0');
    }
    *out = v;
    return 0;
}

int
mirror_key_parse(const char *key, size_t len, const char *prefix, int64_t *reminder_id,
                 int64_t *fire_at_ms)
{
    static const char tag[] = ":rem:", shard_tag[] = ":{s";
    size_t plen = strlen(prefix), tlen = sizeof tag - 1;
    const char *p = key + plen, *end = key + len, *colon, *close = NULL;
    int64_t shard = -1;

    if (len < plen + tlen || memcmp(key, prefix, plen) != 0)
        return -1;
    if ((size_t)(end - p) > sizeof shard_tag && memcmp(p, shard_tag, sizeof shard_tag - 1) == 0) {
        if ((close = memchr(p, '}', (size_t)(end - p))) == NULL ||
            parse_num(p + sizeof shard_tag - 1, close, &shard) != 0)
            return -1;
        p = close + 1;
    }
    if ((size_t)(end - p) < tlen || memcmp(p, tag, tlen) != 0)
        return -1;
    p += tlen;
    colon = memchr(p, ':', (size_t)(end - p));
    if (colon == NULL)
        return -1;
    if (parse_num(p, colon, reminder_id) != 0 || parse_num(colon + 1, end, fire_at_ms) != 0)
        return -1;
    return shard < 0 || shard == (int64_t)shard_of(*reminder_id) ? 0 : -1;
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
            if ((queued == 0 && connected(mi) != 0) ||
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

        if (connected(mi) != 0)
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
    if (connected(mi) != 0)
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

static int
reply_pong(const redisReply *r, void *arg)
{
    (void)arg;
    return r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0 ? 0 : -1;
}

static int
ping_here(struct mirror *mi, size_t i, void *arg)
{
    const char *argv[] = {"PING"};

    (void)i, (void)arg;
    return exec(mi, 1, argv, reply_pong, NULL);
}

int
mirror_ping(struct mirror *mi)
{
    if (mi->cl != NULL)
        return each_master(mi, ping_here, NULL);
    return connected(mi) == 0 ? ping_here(mi, 0, NULL) : -1;
}

struct notify {
    char value[MIRROR_NOTIFY_MAX];
    char why[MIRROR_NOTIFY_MAX * 2]; /* Redis's error text, if any */
};

static int
reply_notify(const redisReply *r, void *arg)
{
    struct notify *nt = arg;

    if (r->type == REDIS_REPLY_ERROR) {
        snprintf(nt->why, sizeof nt->why, "%s", r->str);
        return -1;
    }
    if (r->type == REDIS_REPLY_STATUS) /* CONFIG SET */
        return strcmp(r->str, "OK") == 0 ? 0 : -1;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[1]->type != REDIS_REPLY_STRING || r->element[1]->len >= sizeof nt->value) {
        snprintf(nt->why, sizeof nt->why, "unexpected CONFIG GET reply");
        return -1;
    }
    memcpy(nt->value, r->element[1]->str, r->element[1]->len);
    nt->value[r->element[1]->len] = '\0';
    return 0;
}

/* Expired-key events need E (keyevent channel) and x (expired); A is an alias that includes x. */
static int
notify_ok(const char *v)
{
    return strchr(v, 'E') != NULL && (strchr(v, 'x') != NULL || strchr(v, 'A') != NULL);
}

static int
notify_fail(char *err, size_t errlen, const char *what, const struct notify *nt)
{
    snprintf(err, errlen,
             "redis notify-keyspace-events: %s%s%s; set it to include E and x "
             "(e.g. notify-keyspace-events Ex)",
             what, nt->why[0] != '\0' ? ": " : "", nt->why);
    return -1;
}

/* On the node mi->c is connected to (or fails to be). */
static int
notify_here(struct mirror *mi, char *err, size_t errlen)
{
    const char *get[] = {"CONFIG", "GET", "notify-keyspace-events"};
    const char *set[] = {"CONFIG", "SET", "notify-keyspace-events", NULL};
    struct notify nt = {{0}, {0}};
    char want[MIRROR_NOTIFY_MAX + 2];

    if (connected(mi) != 0) {
        snprintf(err, errlen,
                 "redis unreachable at %s:%d (cannot check notify-keyspace-events): %s", mi->host,
                 mi->port, mi->why);
        return -1;
    }
    if (exec(mi, 3, get, reply_notify, &nt) != 0)
        return notify_fail(err, errlen, "cannot read it", &nt);
    if (notify_ok(nt.value))
        return 0;
    snprintf(want, sizeof want, "%s%s%s", nt.value, strchr(nt.value, 'E') ? "" : "E",
             strchr(nt.value, 'x') ? "" : "x");
    set[3] = want;
    if (exec(mi, 4, set, reply_notify, &nt) != 0)
        return notify_fail(err, errlen, "CONFIG SET refused", &nt);
    if (exec(mi, 3, get, reply_notify, &nt) != 0 || !notify_ok(nt.value))
        return notify_fail(err, errlen, "still missing E or x after CONFIG SET", &nt);
    return 0;
}

struct notify_err {
    char *err;
    size_t errlen;
};

static int
notify_node(struct mirror *mi, size_t i, void *arg)
{
    struct notify_err *ne = arg;

    (void)i;
    return notify_here(mi, ne->err, ne->errlen);
}

/* With Cluster every master publishes its own keys' events: each must have the setting. */
int
mirror_ensure_notify(struct mirror *mi, char *err, size_t errlen)
{
    struct notify_err ne = {err, errlen};

    if (mi->cl == NULL)
        return notify_here(mi, err, errlen);
    if (each_master(mi, notify_node, &ne) == 0)
        return 0;
    if (err[0] == '\0')
        snprintf(err, errlen, "redis unreachable (cannot check notify-keyspace-events): %s",
                 mi->why);
    return -1;
}

/* One command on the node of key's slot with Cluster, else as call(). */
static int
call_key(struct mirror *mi, const char *key, int argc, const char **argv, reply_fn fn, void *arg)
{
    if (mi->cl == NULL)
        return call(mi, argc, argv, fn, arg);
    int rc = use_slot(mi, key) == 0 ? exec(mi, argc, argv, fn, arg) : -1;
    mi->c = NULL;
    mi->node = -1;
    return rc;
}

int
mirror_probe_set(struct mirror *mi, const char *key, int64_t ttl_ms)
{
    char ttl[MIRROR_NUM_MAX];
    const char *argv[] = {"SET", key, "", "PX", ttl};

    snprintf(ttl, sizeof ttl, "%" PRId64, ttl_ms);
    return call_key(mi, key, 5, argv, reply_ok, NULL);
}

static int
reply_integer(const redisReply *r, void *arg)
{
    (void)arg;
    return r->type == REDIS_REPLY_INTEGER ? 0 : -1;
}

int
mirror_probe_touch(struct mirror *mi, const char *key)
{
    const char *argv[] = {"EXISTS", key};

    return call_key(mi, key, 2, argv, reply_integer, NULL);
}

/* SET ... GET replies nil when the marker was missing (it is created now), its old value when it
 * was there. */
static int
reply_marker(const redisReply *r, void *arg)
{
    int *created = arg;

    if (r->type == REDIS_REPLY_NIL)
        *created = 1;
    else if (r->type == REDIS_REPLY_STRING)
        *created = 0;
    else
        return -1;
    return 0;
}

/* The marker's owner is a TOCSIN_INSTANCE_ID (config.h: at most 128 bytes). */
#define MARKER_OWNER_MAX 128

#define MARKER_TAG_MAX 24 /* a hash tag of cluster_tag_for */

struct marker {
    const char *owner;
    int created; /* one marker at least was missing */
};

/* The marker on the node mi->c is at; with Cluster tagged for master i. */
static int
marker_here(struct mirror *mi, size_t i, void *arg)
{
    struct marker *mk = arg;
    char key[MIRROR_KEY_MAX + MARKER_OWNER_MAX], ttl[24], tag[MARKER_TAG_MAX] = "";
    /* One command sets it with a fresh TTL and says whether it was there (Redis 6.2). */
    const char *argv[] = {"SET", key, "1", "PX", ttl, "GET"};
    int created = 0;

    if (mi->cl != NULL && cluster_tag_for(cluster_map(mi->cl), i, 's', tag, sizeof tag) != 0)
        return -1;
    snprintf(ttl, sizeof ttl, "%d", MIRROR_MARKER_TTL_MS);
    if (snprintf(key, sizeof key, "%s%s%s:recon:marker:%s", mi->prefix, tag[0] ? ":" : "", tag,
                 mk->owner) >= (int)sizeof key ||
        exec(mi, 6, argv, reply_marker, &created) != 0)
        return -1;
    mk->created |= created;
    return 0;
}

/* With Cluster a marker per master: a master that restarted empty or a promoted replica that
 * missed writes loses its own, and one missing is enough to repair. */
int
mirror_marker_ensure(struct mirror *mi, const char *owner)
{
    struct marker mk = {owner, 0};

    if (mi->cl != NULL ? each_master(mi, marker_here, &mk) != 0
                       : connected(mi) != 0 || marker_here(mi, 0, &mk) != 0)
        return -1;
    return mk.created;
}

/* Copies the value of the "run_id:" line of INFO server. */
static int
reply_run_id(const redisReply *r, void *arg)
{
    char *out = arg;
    const char *p, *end;
    size_t n;

    if (r->type != REDIS_REPLY_STRING)
        return -1;
    for (p = r->str; (p = strstr(p, "run_id:")) != NULL; p++)
        if (p == r->str || p[-1] == '\n')
            break;
    if (p == NULL)
        return -1;
    p += strlen("run_id:");
    end = p + strcspn(p, "\r\n");
    n = (size_t)(end - p);
    if (n == 0 || n > MIRROR_RUN_ID_MAX)
        return -1;
    memcpy(out, p, n);
    out[n] = '\0';
    return 0;
}

static int
run_id_here(struct mirror *mi, size_t i, void *arg)
{
    const char *argv[] = {"INFO", "server"};

    (void)i;
    return exec(mi, 2, argv, reply_run_id, arg);
}

#define FNV_OFFSET 14695981039346656037ULL
#define FNV_PRIME 1099511628211ULL

/* Folds master i's run_id into the hash at arg. */
static int
run_id_fold(struct mirror *mi, size_t i, void *arg)
{
    uint64_t *h = arg;
    char id[MIRROR_RUN_ID_MAX + 1];

    if (run_id_here(mi, i, id) != 0)
        return -1;
    for (const char *p = id; *p != '\0'; p++)
        *h = (*h ^ (unsigned char)*p) * FNV_PRIME;
    return 0;
}

/* With Cluster one value for all masters (a hash of their run_ids in map order): it changes when
 * any master restarts or is replaced, which is what the reconciler's loss check asks. */
int
mirror_run_id(struct mirror *mi, char out[MIRROR_RUN_ID_MAX + 1])
{
    uint64_t h = FNV_OFFSET;

    if (mi->cl == NULL)
        return connected(mi) == 0 ? run_id_here(mi, 0, out) : -1;
    if (each_master(mi, run_id_fold, &h) != 0)
        return -1;
    snprintf(out, MIRROR_RUN_ID_MAX + 1, "cluster-%016" PRIx64, h);
    return 0;
}

/* Accessors for mirror_claim.c, mirror_stream.c and expiry.c (mirror_internal.h). */
/* With Cluster: the first master that answers (PUBLISH reaches every node's subscribers). */
struct redis_conn *
mirror_conn(struct mirror *mi)
{
    const struct cluster_map *m;

    if (mi->cl == NULL)
        return connected(mi) == 0 ? mi->c : NULL;
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
