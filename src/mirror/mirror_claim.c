/* mirror_claim.c -- the claim of mirror_claim.h, on the struct mirror's own connection (lazy
 * connect and reconnect backoff from mirror.c through mirror_internal.h). */
#include "mirror_claim.h"

#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "mirror_cluster.h"
#include "mirror_internal.h"
#include "redis_conn.h"

#define CLAIM_NUM_MAX 24 /* decimal int64 and NUL */
#define CLAIM_KEY_MAX MIRROR_KEY_MAX

size_t
mirror_claim_key(char *buf, size_t buflen, const char *prefix, int64_t reminder_id,
                 int64_t fire_at_ms)
{
    return mirror_occurrence_key(buf, buflen, prefix, "claim", reminder_id, fire_at_ms);
}

static int
append(struct redis_conn *c, const char *prefix, const struct reminder_key *k, const char *instance,
       const char *ttl)
{
    char key[CLAIM_KEY_MAX];
    const char *argv[] = {"SET", key, instance, "NX", "PX", ttl};
    size_t lens[] = {3, 0, strlen(instance), 2, 2, strlen(ttl)};

    lens[1] = mirror_claim_key(key, sizeof key, prefix, k->reminder_id, k->fire_at_ms);
    return redis_conn_append(c, 6, argv, lens);
}

/* Reads n replies: OK = won, nil = lost. Returns -1 on an I/O error (connection dropped) or an
 * error reply (connection kept: the protocol is still in sync). */
static int
collect(struct mirror *mi, struct redis_conn *c, size_t n, unsigned char *won)
{
    int rc = 0;

    for (size_t i = 0; i < n; i++) {
        redisReply *r;

        if (redis_conn_reply(c, &r) != 0) {
            mirror_conn_lost(mi);
            return -1;
        }
        if (r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0)
            won[i] = 1;
        else if (r->type == REDIS_REPLY_NIL)
            won[i] = 0;
        else
            rc = -1;
        freeReplyObject(r);
    }
    return rc;
}

int
mirror_claim(struct mirror *mi, const struct reminder_key *k, size_t n, const char *instance_id,
             int64_t ttl_ms, unsigned char *won)
{
    char ttl[CLAIM_NUM_MAX];

    if (mirror_cluster(mi) != NULL)
        return mirror_cluster_claim(mi, k, n, instance_id, ttl_ms, won);
    snprintf(ttl, sizeof ttl, "%" PRId64, ttl_ms);
    for (size_t i = 0; i < n;) {
        struct redis_conn *c = mirror_conn(mi);
        size_t chunk = n - i < MIRROR_CLAIM_PIPELINE_MAX ? n - i : MIRROR_CLAIM_PIPELINE_MAX;

        if (c == NULL)
            return -1;
        for (size_t j = 0; j < chunk; j++)
            if (append(c, mirror_prefix(mi), &k[i + j], instance_id, ttl) != 0) {
                mirror_conn_lost(mi);
                return -1;
            }
        if (collect(mi, c, chunk, won + i) != 0)
            return -1;
        i += chunk;
    }
    return 0;
}
