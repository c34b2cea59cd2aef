/* mirror_cluster.c -- the per-occurrence commands of mirror.h and mirror_claim.h on Redis Cluster:
 * each key tagged with its shard (mirror_tagged_key), each chunk of commands run through
 * cluster_run, which pipelines them per master and follows MOVED and ASK. The single-node paths
 * stay in mirror.c and mirror_claim.c; what a reply means is the same. */
#include "mirror_cluster.h"

#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "mirror_internal.h"

#define KEYED_CHUNK_MAX 256 /* commands in one cluster_run */
#define KEYED_NUM_MAX 24    /* decimal int64 and NUL */

struct keyed {
    struct cluster_cmd cmd[KEYED_CHUNK_MAX];
    size_t of[KEYED_CHUNK_MAX]; /* the index in the caller's keys */
    char key[KEYED_CHUNK_MAX][MIRROR_KEY_MAX];
    char num[KEYED_CHUNK_MAX][KEYED_NUM_MAX];
};

/* Fills command c for one occurrence, whose key is argv[1] already (num is a buffer of
 * KEYED_NUM_MAX bytes for a number argument); false to skip it. */
typedef bool (*keyed_fill)(struct cluster_cmd *c, char *num, const struct reminder_key *k,
                           const void *arg);
/* Looks at the reply of keys[i]; 0, or -1 when it is a failure. */
typedef int (*keyed_read)(const redisReply *r, size_t i, void *arg);

struct keyed_op {
    const char *kind; /* of the key: "rem" or "claim" */
    keyed_fill fill;
    keyed_read read;
    const void *fill_arg;
    void *read_arg;
};

static int
run_chunk(struct cluster *cl, struct keyed *b, size_t m, const struct keyed_op *op)
{
    int rc = cluster_run(cl, b->cmd, m) == 0 ? 0 : -1;

    for (size_t j = 0; j < m; j++)
        if (b->cmd[j].reply != NULL && op->read(b->cmd[j].reply, b->of[j], op->read_arg) != 0)
            rc = -1;
    cluster_cmds_free(b->cmd, m);
    return rc;
}

static int
run_keyed(struct mirror *mi, const struct reminder_key *keys, size_t n, const struct keyed_op *op)
{
    struct keyed *b = malloc(sizeof *b);
    int rc = 0;

    if (b == NULL)
        return -1;
    for (size_t i = 0; i < n;) {
        size_t m = 0;

        for (; i < n && m < KEYED_CHUNK_MAX; i++) {
            struct cluster_cmd *c = &b->cmd[m];

            memset(c, 0, sizeof *c);
            c->argv[1] = b->key[m];
            c->lens[1] = mirror_tagged_key(b->key[m], MIRROR_KEY_MAX, mirror_prefix(mi), op->kind,
                                           keys[i].reminder_id, keys[i].fire_at_ms);
            if (c->lens[1] == 0 || !op->fill(c, b->num[m], &keys[i], op->fill_arg))
                continue;
            c->slot = cluster_key_slot(b->key[m], c->lens[1]);
            b->of[m++] = i;
        }
        if (m > 0 && run_chunk(mirror_cluster(mi), b, m, op) != 0)
            rc = -1;
    }
    free(b);
    return rc;
}

static void
set_arg(struct cluster_cmd *c, int i, const char *s)
{
    c->argv[i] = s;
    c->lens[i] = strlen(s);
}

struct arm_args {
    int64_t now_ms, horizon_ms;
    int only_missing;
};

static bool
fill_arm(struct cluster_cmd *c, char *num, const struct reminder_key *k, const void *arg)
{
    const struct arm_args *a = arg;

    if (k->fire_at_ms <= a->now_ms || k->fire_at_ms - a->now_ms > a->horizon_ms)
        return false;
    snprintf(num, KEYED_NUM_MAX, "%" PRId64, k->fire_at_ms);
    set_arg(c, 0, "SET");
    set_arg(c, 2, "");
    set_arg(c, 3, "PXAT");
    set_arg(c, 4, num);
    set_arg(c, 5, "NX");
    c->argc = a->only_missing ? 6 : 5;
    return true;
}

/* OK = written; nil = an NX that found the key. */
static int
read_set(const redisReply *r, size_t i, void *arg)
{
    size_t *n_ok = arg;

    (void)i;
    if (r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0)
        (*n_ok)++;
    return r->type == REDIS_REPLY_ERROR ? -1 : 0;
}

int
mirror_cluster_arm(struct mirror *mi, const struct reminder_key *keys, size_t n, int64_t now_ms,
                   int64_t horizon_ms, int only_missing, size_t *n_set)
{
    struct arm_args a = {now_ms, horizon_ms, only_missing};
    size_t ok = 0;
    struct keyed_op op = {"rem", fill_arm, read_set, &a, &ok};
    int rc = run_keyed(mi, keys, n, &op);

    if (n_set != NULL)
        *n_set += ok;
    return rc;
}

static bool
fill_del(struct cluster_cmd *c, char *num, const struct reminder_key *k, const void *arg)
{
    (void)num, (void)k, (void)arg;
    set_arg(c, 0, "DEL");
    c->argc = 2;
    return true;
}

static int
read_del(const redisReply *r, size_t i, void *arg)
{
    (void)i, (void)arg;
    return r->type == REDIS_REPLY_INTEGER ? 0 : -1;
}

int
mirror_cluster_disarm(struct mirror *mi, const struct reminder_key *keys, size_t n)
{
    struct keyed_op op = {"rem", fill_del, read_del, NULL, NULL};

    return run_keyed(mi, keys, n, &op);
}

struct claim_args {
    const char *instance;
    char ttl[KEYED_NUM_MAX];
};

static bool
fill_claim(struct cluster_cmd *c, char *num, const struct reminder_key *k, const void *arg)
{
    const struct claim_args *a = arg;

    (void)num, (void)k;
    set_arg(c, 0, "SET");
    set_arg(c, 2, a->instance);
    set_arg(c, 3, "NX");
    set_arg(c, 4, "PX");
    set_arg(c, 5, a->ttl);
    c->argc = 6;
    return true;
}

/* OK = won, nil = lost. */
static int
read_claim(const redisReply *r, size_t i, void *arg)
{
    unsigned char *won = arg;

    won[i] = r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0;
    return won[i] || r->type == REDIS_REPLY_NIL ? 0 : -1;
}

int
mirror_cluster_claim(struct mirror *mi, const struct reminder_key *keys, size_t n,
                     const char *instance_id, int64_t ttl_ms, unsigned char *won)
{
    struct claim_args a = {instance_id, {0}};
    struct keyed_op op = {"claim", fill_claim, read_claim, &a, won};

    memset(won, 0, n);
    snprintf(a.ttl, sizeof a.ttl, "%" PRId64, ttl_ms);
    return run_keyed(mi, keys, n, &op);
}
