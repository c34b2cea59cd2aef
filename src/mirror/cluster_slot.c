/* cluster_slot.c -- the pure parts of cluster_slot.h. The CRC16 is computed bit by bit rather than
 * from the specification's 256-entry table: a key is at most a hundred bytes, and eight shifts per
 * byte leave no table to get wrong. */
#include "cluster_slot.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CRC16_POLY 0x1021 /* XMODEM: polynomial x^16 + x^12 + x^5 + 1, initial value 0 */
#define REDIRECT_FIELD_MAX 16

static uint16_t
crc16(const char *buf, size_t len)
{
    uint16_t crc = 0;

    for (size_t i = 0; i < len; i++) {
        crc ^= (uint16_t)((unsigned char)buf[i] << 8);
        for (int b = 0; b < 8; b++)
            crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ CRC16_POLY) : (uint16_t)(crc << 1);
    }
    return crc;
}

unsigned
cluster_key_slot(const char *key, size_t len)
{
    const char *open = memchr(key, '{', len);

    if (open != NULL) {
        size_t off = (size_t)(open - key) + 1;
        const char *close = memchr(open + 1, '}', len - off);

        if (close != NULL && close > open + 1)
            return crc16(open + 1, (size_t)(close - open - 1)) % CLUSTER_SLOTS;
    }
    return crc16(key, len) % CLUSTER_SLOTS;
}

int
cluster_map_find(const struct cluster_map *m, const char *host, int port)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->node[i].port == port && strcmp(m->node[i].host, host) == 0)
            return (int)i;
    return -1;
}

/* The master of one range, [host, port, ...]: its index in m, added when new. */
static int
range_master(const redisReply *n, const char *default_host, struct cluster_map *m)
{
    const char *host;
    int i;

    if (n->type != REDIS_REPLY_ARRAY || n->elements < 2 ||
        n->element[0]->type != REDIS_REPLY_STRING || n->element[1]->type != REDIS_REPLY_INTEGER ||
        n->element[1]->integer < 1 || n->element[1]->integer > 65535 ||
        n->element[0]->len >= REDIS_URL_HOST_MAX)
        return -1;
    host = n->element[0]->len > 0 ? n->element[0]->str : default_host;
    if ((i = cluster_map_find(m, host, (int)n->element[1]->integer)) >= 0)
        return i;
    if (m->n == CLUSTER_NODES_MAX || strlen(host) >= REDIS_URL_HOST_MAX)
        return -1;
    snprintf(m->node[m->n].host, REDIS_URL_HOST_MAX, "%s", host);
    m->node[m->n].port = (int)n->element[1]->integer;
    return (int)m->n++;
}

int
cluster_map_parse(const redisReply *r, const char *default_host, struct cluster_map *m)
{
    m->n = 0;
    memset(m->slot, CLUSTER_NO_NODE, sizeof m->slot);
    if (r->type != REDIS_REPLY_ARRAY)
        return -1;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        int node;

        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
            e->element[0]->type != REDIS_REPLY_INTEGER ||
            e->element[1]->type != REDIS_REPLY_INTEGER || e->element[0]->integer < 0 ||
            e->element[1]->integer < e->element[0]->integer ||
            e->element[1]->integer >= CLUSTER_SLOTS ||
            (node = range_master(e->element[2], default_host, m)) < 0)
            return -1;
        for (long long s = e->element[0]->integer; s <= e->element[1]->integer; s++)
            m->slot[s] = (uint8_t)node;
    }
    return 0;
}

/* A decimal in [lo, hi] from [s, end): digits only (strtol alone would take a sign or spaces). */
static int
decimal(const char *s, const char *end, long lo, long hi, long *out)
{
    char buf[REDIRECT_FIELD_MAX + 1], *stop;
    size_t n = (size_t)(end - s);

    if (n == 0 || n > REDIRECT_FIELD_MAX)
        return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (strspn(buf, "0123456789") != n)
        return -1;
    *out = strtol(buf, &stop, 10);
    return *out >= lo && *out <= hi ? 0 : -1;
}

int
cluster_redirect_parse(const char *err, size_t len, struct cluster_redirect *out)
{
    const char *end = err + len, *p, *sp, *colon = NULL;
    long slot, port;

    if (len > 6 && memcmp(err, "MOVED ", 6) == 0)
        out->kind = CLUSTER_REDIRECT_MOVED, p = err + 6;
    else if (len > 4 && memcmp(err, "ASK ", 4) == 0)
        out->kind = CLUSTER_REDIRECT_ASK, p = err + 4;
    else
        return -1;
    if ((sp = memchr(p, ' ', (size_t)(end - p))) == NULL ||
        decimal(p, sp, 0, CLUSTER_SLOTS - 1, &slot) != 0)
        return -1;
    for (const char *q = sp + 1; q < end; q++) /* the last colon: an IPv6 host has others */
        if (*q == ':')
            colon = q;
    if (colon == NULL || colon == sp + 1 || (size_t)(colon - sp - 1) >= REDIS_URL_HOST_MAX ||
        decimal(colon + 1, end, 1, 65535, &port) != 0)
        return -1;
    memcpy(out->to.host, sp + 1, (size_t)(colon - sp - 1));
    out->to.host[colon - sp - 1] = '\0';
    out->to.port = (int)port;
    out->slot = (unsigned)slot;
    return 0;
}

enum cluster_step
cluster_try_next(struct cluster_try *t, const redisReply *r, struct cluster_redirect *to)
{
    if (r == NULL)
        return CLUSTER_STEP_GIVE_UP;
    if (r->type != REDIS_REPLY_ERROR)
        return CLUSTER_STEP_DONE;
    if (cluster_redirect_parse(r->str, r->len, to) == 0) {
        if (++t->redirects > CLUSTER_REDIRECTS_MAX)
            return CLUSTER_STEP_GIVE_UP;
        return to->kind == CLUSTER_REDIRECT_MOVED ? CLUSTER_STEP_MOVED : CLUSTER_STEP_ASK;
    }
    /* TRYAGAIN (a multi-key command mid-reshard) and CLUSTERDOWN fail the command: the caller's
     * repair path (the reconciler, the scheduler) covers it, as for Redis being down. */
    return CLUSTER_STEP_DONE;
}

int
cluster_tag_for(const struct cluster_map *m, size_t i, char c, char *buf, size_t buflen)
{
    for (unsigned n = 0; n < CLUSTER_TAG_TRIES; n++) {
        int len = snprintf(buf, buflen, "{%c%u}", c, n);

        if (len < 0 || (size_t)len >= buflen)
            return -1;
        if (m->slot[cluster_key_slot(buf, (size_t)len)] == i)
            return 0;
    }
    return -1;
}
