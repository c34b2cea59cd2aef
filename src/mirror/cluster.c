/* cluster.c -- the router of cluster.h. The map and the connections are indexed alike: master i
 * of the map is conn[i]; a new map carries each connection over to its master's new index. */
#include "cluster.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis_conn.h"
#include "timefmt.h"
#include "transport.h"

struct cluster {
    struct cluster_map map;
    int have_map;
    int64_t refresh_at_ms; /* monotonic; after a failed map read, none before */
    uint64_t serial;
    struct redis_conn *conn[CLUSTER_NODES_MAX];
    int64_t retry_at_ms[CLUSTER_NODES_MAX]; /* monotonic; no connect before */
    size_t n_seeds;
    struct redis_url_addr seeds[REDIS_URL_SENTINELS_MAX];
    char *user, *password;
    const struct transport_tls *tls;
    int connect_ms, io_ms;
    char why[CLUSTER_ERR_MAX];
};

struct cluster *
cluster_new(const struct cluster_opts *o)
{
    struct cluster *cl = calloc(1, sizeof *cl);

    if (cl == NULL || o->n_seeds > REDIS_URL_SENTINELS_MAX ||
        (o->user != NULL && (cl->user = strdup(o->user)) == NULL) ||
        (o->password != NULL && (cl->password = strdup(o->password)) == NULL)) {
        cluster_free(cl);
        return NULL;
    }
    memcpy(cl->seeds, o->seeds, o->n_seeds * sizeof *o->seeds);
    cl->n_seeds = o->n_seeds;
    cl->tls = o->tls;
    cl->connect_ms = o->connect_ms;
    cl->io_ms = o->io_ms;
    memset(cl->map.slot, CLUSTER_NO_NODE, sizeof cl->map.slot);
    return cl;
}

void
cluster_free(struct cluster *cl)
{
    if (cl == NULL)
        return;
    for (size_t i = 0; i < CLUSTER_NODES_MAX; i++)
        redis_conn_free(cl->conn[i]);
    free(cl->user);
    free(cl->password);
    free(cl);
}

const char *
cluster_error(const struct cluster *cl)
{
    return cl->why;
}

uint64_t
cluster_map_serial(const struct cluster *cl)
{
    return cl->serial;
}

/* A connection to host:port with AUTH done, or NULL with why noted. */
static struct redis_conn *
open_node(struct cluster *cl, const struct redis_url_addr *a)
{
    char err[TRANSPORT_ERR_MAX];
    struct redis_conn *c =
        redis_conn_open(a->host, a->port, cl->tls, cl->connect_ms, cl->io_ms, err, sizeof err);
    struct redisReply *r;

    if (c == NULL) {
        snprintf(cl->why, sizeof cl->why, "%.100s:%d: %.140s", a->host, a->port, err);
        return NULL;
    }
    if (cl->password == NULL)
        return c;
    const char *argv[] = {"AUTH", cl->user ? cl->user : cl->password, cl->password};
    r = redis_conn_command(c, cl->user ? 3 : 2, argv, NULL);
    if (r != NULL && r->type == REDIS_REPLY_STATUS) {
        freeReplyObject(r);
        return c;
    }
    snprintf(cl->why, sizeof cl->why, "%.100s:%d: AUTH refused", a->host, a->port);
    if (r != NULL)
        freeReplyObject(r);
    redis_conn_free(c);
    return NULL;
}

struct redis_conn *
cluster_node_conn(struct cluster *cl, size_t i)
{
    if (i >= cl->map.n)
        return NULL;
    if (cl->conn[i] != NULL)
        return cl->conn[i];
    if (timefmt_mono_ms() < cl->retry_at_ms[i])
        return NULL;
    if ((cl->conn[i] = open_node(cl, &cl->map.node[i])) == NULL) {
        cl->retry_at_ms[i] = timefmt_mono_ms() + CLUSTER_RECONNECT_BACKOFF_MS;
        cl->have_map = 0; /* a master that cannot be reached may have been replaced */
    }
    return cl->conn[i];
}

void
cluster_node_lost(struct cluster *cl, size_t i)
{
    if (i >= CLUSTER_NODES_MAX || cl->conn[i] == NULL)
        return;
    if (redis_conn_error(cl->conn[i])[0] != '\0')
        snprintf(cl->why, sizeof cl->why, "%.100s:%d: %.140s", cl->map.node[i].host,
                 cl->map.node[i].port, redis_conn_error(cl->conn[i]));
    redis_conn_free(cl->conn[i]);
    cl->conn[i] = NULL;
    cl->retry_at_ms[i] = timefmt_mono_ms() + CLUSTER_RECONNECT_BACKOFF_MS;
    cl->have_map = 0; /* a master gone may have a successor: ask again before the next use */
}

/* CLUSTER SLOTS on c into m. */
static int
ask_slots(struct cluster *cl, struct redis_conn *c, const char *host, struct cluster_map *m)
{
    const char *argv[] = {"CLUSTER", "SLOTS"};
    struct redisReply *r = redis_conn_command(c, 2, argv, NULL);
    int rc = r != NULL && cluster_map_parse(r, host, m) == 0 && m->n > 0 ? 0 : -1;

    if (rc != 0)
        snprintf(cl->why, sizeof cl->why, "%.100s: CLUSTER SLOTS: %.120s", host,
                 r == NULL                      ? redis_conn_error(c)
                 : r->type == REDIS_REPLY_ERROR ? r->str
                                                : "no usable slot map");
    if (r != NULL)
        freeReplyObject(r);
    return rc;
}

/* Takes m as the map: connections move to their master's new index, the others close. */
static void
adopt(struct cluster *cl, const struct cluster_map *m)
{
    struct redis_conn *conn[CLUSTER_NODES_MAX] = {0};
    int64_t retry[CLUSTER_NODES_MAX] = {0};

    for (size_t i = 0; i < cl->map.n; i++) {
        int j = cluster_map_find(m, cl->map.node[i].host, cl->map.node[i].port);
        if (j >= 0) {
            conn[j] = cl->conn[i];
            retry[j] = cl->retry_at_ms[i];
        } else {
            redis_conn_free(cl->conn[i]);
        }
    }
    if (m->n != cl->map.n || memcmp(m->node, cl->map.node, m->n * sizeof m->node[0]) != 0 ||
        memcmp(m->slot, cl->map.slot, sizeof m->slot) != 0)
        cl->serial++;
    memcpy(cl->conn, conn, sizeof conn);
    memcpy(cl->retry_at_ms, retry, sizeof retry);
    cl->map = *m;
    cl->have_map = 1;
}

/* Asks the masters already connected, then the others of the map, then the seeds. */
static int
read_map(struct cluster *cl, struct cluster_map *m)
{
    for (size_t i = 0; i < cl->map.n; i++)
        if (cl->conn[i] != NULL && ask_slots(cl, cl->conn[i], cl->map.node[i].host, m) == 0)
            return 0;
    for (size_t k = 0; k < cl->map.n + cl->n_seeds; k++) {
        const struct redis_url_addr *a =
            k < cl->map.n ? &cl->map.node[k] : &cl->seeds[k - cl->map.n];
        if (k < cl->map.n && cl->conn[k] != NULL)
            continue;
        struct redis_conn *c = open_node(cl, a);
        int rc = c != NULL ? ask_slots(cl, c, a->host, m) : -1;
        redis_conn_free(c);
        if (rc == 0)
            return 0;
    }
    return -1;
}

int
cluster_refresh(struct cluster *cl)
{
    struct cluster_map *m = malloc(sizeof *m);
    int rc = -1;

    if (m == NULL) {
        snprintf(cl->why, sizeof cl->why, "out of memory");
        return -1;
    }
    if (read_map(cl, m) == 0) {
        adopt(cl, m);
        rc = 0;
    }
    free(m);
    return rc;
}

const struct cluster_map *
cluster_map(struct cluster *cl)
{
    if (!cl->have_map && timefmt_mono_ms() >= cl->refresh_at_ms && cluster_refresh(cl) != 0)
        cl->refresh_at_ms = timefmt_mono_ms() + CLUSTER_RECONNECT_BACKOFF_MS;
    return cl->map.n > 0 ? &cl->map : NULL;
}

void
cluster_cmds_free(struct cluster_cmd *cmds, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (cmds[i].reply != NULL)
            freeReplyObject(cmds[i].reply);
        cmds[i].reply = NULL;
    }
}

#define NODE_DONE (-1) /* a command with its reply (or none for good) */

/* What the reply of cmd k says; the reply is kept when it is the answer. Sets *reread when the
 * map must be read again. */
static void
step(struct cluster *cl, struct cluster_cmd *k, struct redisReply *r, int *reread)
{
    struct cluster_redirect to;

    k->asking = 0;
    switch (cluster_try_next(&k->t, r, &to)) {
    case CLUSTER_STEP_DONE:
        k->reply = r;
        k->node = NODE_DONE;
        return;
    case CLUSTER_STEP_MOVED:
        *reread = 1;
        k->node = cluster_map_find(&cl->map, to.to.host, to.to.port);
        break;
    case CLUSTER_STEP_ASK:
        k->node = cluster_map_find(&cl->map, to.to.host, to.to.port);
        k->asking = k->node >= 0;
        break;
    case CLUSTER_STEP_GIVE_UP:
        k->node = NODE_DONE;
        break;
    }
    if (k->node < 0 && !*reread) /* ASK to a node the map does not know: ask for the map */
        *reread = 1, k->node = NODE_DONE;
    if (r != NULL)
        freeReplyObject(r);
}

/* Drops master j's connection (its pipeline is out of step now) and marks the map to be read. */
static struct redis_conn *
lose(struct cluster *cl, int j, int *reread)
{
    cluster_node_lost(cl, (size_t)j);
    *reread = 1;
    return NULL;
}

/* Sends node j's commands in one pipeline and reads their replies. */
static void
send_node(struct cluster *cl, struct cluster_cmd *cmds, size_t n, int j, int *reread)
{
    static const char *asking[] = {"ASKING"};
    struct redis_conn *c = cluster_node_conn(cl, (size_t)j);
    size_t i;

    for (i = 0; i < n && c != NULL; i++)
        if (cmds[i].node == j &&
            ((cmds[i].asking && redis_conn_append(c, 1, asking, NULL) != 0) ||
             redis_conn_append(c, cmds[i].argc, cmds[i].argv, cmds[i].lens) != 0))
            c = lose(cl, j, reread);
    if (c == NULL)
        *reread = 1;
    for (i = 0; i < n; i++) {
        struct redisReply *r = NULL;

        if (cmds[i].node != j)
            continue;
        if (c != NULL && cmds[i].asking) { /* ASKING's own reply, +OK */
            if (redis_conn_reply(c, &r) != 0)
                c = lose(cl, j, reread);
            else
                freeReplyObject(r);
            r = NULL;
        }
        if (c != NULL && redis_conn_reply(c, &r) != 0) {
            c = lose(cl, j, reread);
            r = NULL;
        }
        step(cl, &cmds[i], r, reread);
    }
}

/* Points every command still owed a reply at the master of its slot by the map now (the MOVED
 * ones whose target the old map did not know, and every one after a failover). */
static size_t
retarget(struct cluster *cl, struct cluster_cmd *cmds, size_t n, int fresh_map)
{
    size_t left = 0;

    for (size_t i = 0; i < n; i++) {
        struct cluster_cmd *k = &cmds[i];
        if (k->node == NODE_DONE && k->reply == NULL && fresh_map && k->t.redirects > 0 &&
            k->t.redirects <= CLUSTER_REDIRECTS_MAX)
            k->node = CLUSTER_NO_NODE; /* MOVED to an unknown node: route by the new map */
        if (k->node == CLUSTER_NO_NODE)
            k->node = cl->map.slot[k->slot] == CLUSTER_NO_NODE ? NODE_DONE : cl->map.slot[k->slot];
        left += k->node != NODE_DONE;
    }
    return left;
}

int
cluster_run(struct cluster *cl, struct cluster_cmd *cmds, size_t n)
{
    size_t left;
    int rc = 0;

    for (size_t i = 0; i < n; i++) {
        cmds[i].reply = NULL;
        cmds[i].t = (struct cluster_try){0};
        cmds[i].asking = 0;
        cmds[i].node = CLUSTER_NO_NODE;
    }
    if (cluster_map(cl) == NULL)
        return -1;
    left = retarget(cl, cmds, n, 0);
    for (unsigned round = 0; left > 0 && round <= CLUSTER_REDIRECTS_MAX; round++) {
        int reread = 0;

        for (size_t j = 0; j < cl->map.n; j++)
            send_node(cl, cmds, n, (int)j, &reread);
        if (reread && cluster_refresh(cl) != 0)
            break;
        left = retarget(cl, cmds, n, reread);
    }
    for (size_t i = 0; i < n; i++)
        if (cmds[i].reply == NULL)
            rc = -1;
    return rc;
}
