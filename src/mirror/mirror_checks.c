/* mirror_checks.c -- the checks of Redis as a whole, for /readyz and the reconciler: PING, the
 * notify-keyspace-events setting (set when missing), the probe key, the reconciler's marker and
 * the server's run_id. With Cluster each runs on every master (mirror_each_master) or on the
 * master of its key's slot; the connection is mirror.c's (mirror_internal.h). */
#include "cluster.h"
#include "mirror.h"
#include "mirror_internal.h"

#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define MIRROR_NOTIFY_MAX 64 /* bytes of a notify-keyspace-events value we handle */

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
    return mirror_exec(mi, 1, argv, reply_pong, NULL);
}

int
mirror_ping(struct mirror *mi)
{
    if (mirror_cluster(mi) != NULL)
        return mirror_each_master(mi, ping_here, NULL);
    return mirror_connect(mi) == 0 ? ping_here(mi, 0, NULL) : -1;
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

    if (mirror_connect(mi) != 0) {
        int port;
        const char *host = mirror_addr(mi, &port);
        snprintf(err, errlen,
                 "redis unreachable at %s:%d (cannot check notify-keyspace-events): %s", host, port,
                 mirror_conn_error(mi));
        return -1;
    }
    if (mirror_exec(mi, 3, get, reply_notify, &nt) != 0)
        return notify_fail(err, errlen, "cannot read it", &nt);
    if (notify_ok(nt.value))
        return 0;
    snprintf(want, sizeof want, "%s%s%s", nt.value, strchr(nt.value, 'E') ? "" : "E",
             strchr(nt.value, 'x') ? "" : "x");
    set[3] = want;
    if (mirror_exec(mi, 4, set, reply_notify, &nt) != 0)
        return notify_fail(err, errlen, "CONFIG SET refused", &nt);
    if (mirror_exec(mi, 3, get, reply_notify, &nt) != 0 || !notify_ok(nt.value))
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

    if (mirror_cluster(mi) == NULL)
        return notify_here(mi, err, errlen);
    if (mirror_each_master(mi, notify_node, &ne) == 0)
        return 0;
    if (err[0] == '\0')
        snprintf(err, errlen, "redis unreachable (cannot check notify-keyspace-events): %s",
                 mirror_conn_error(mi));
    return -1;
}

int
mirror_probe_set(struct mirror *mi, const char *key, int64_t ttl_ms)
{
    char ttl[MIRROR_NUM_MAX];
    const char *argv[] = {"SET", key, "", "PX", ttl};

    snprintf(ttl, sizeof ttl, "%" PRId64, ttl_ms);
    return mirror_call_key(mi, key, 5, argv, mirror_reply_ok, NULL);
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

    return mirror_call_key(mi, key, 2, argv, reply_integer, NULL);
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

    if (mirror_cluster(mi) != NULL &&
        cluster_tag_for(cluster_map(mirror_cluster(mi)), i, 's', tag, sizeof tag) != 0)
        return -1;
    snprintf(ttl, sizeof ttl, "%d", MIRROR_MARKER_TTL_MS);
    if (snprintf(key, sizeof key, "%s%s%s:recon:marker:%s", mirror_prefix(mi), tag[0] ? ":" : "",
                 tag, mk->owner) >= (int)sizeof key ||
        mirror_exec(mi, 6, argv, reply_marker, &created) != 0)
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

    if (mirror_cluster(mi) != NULL ? mirror_each_master(mi, marker_here, &mk) != 0
                                   : mirror_connect(mi) != 0 || marker_here(mi, 0, &mk) != 0)
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
    return mirror_exec(mi, 2, argv, reply_run_id, arg);
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

    if (mirror_cluster(mi) == NULL)
        return mirror_connect(mi) == 0 ? run_id_here(mi, 0, out) : -1;
    if (mirror_each_master(mi, run_id_fold, &h) != 0)
        return -1;
    snprintf(out, MIRROR_RUN_ID_MAX + 1, "cluster-%016" PRIx64, h);
    return 0;
}
