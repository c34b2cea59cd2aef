/* mirror_stream.c -- the wake-up channel of mirror_stream.h, on the struct mirror's own
 * connection (mirror_internal.h). */
#include "mirror_stream.h"

#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "mirror_internal.h"
#include "redis_conn.h"

size_t
mirror_stream_channel(char *buf, size_t buflen, const char *prefix)
{
    int n = snprintf(buf, buflen, "%s:stream", prefix);

    return n < 0 || (size_t)n >= buflen ? 0 : (size_t)n;
}

/* Strict decimal of at most 19 digits in [s, end). */
static int
number(const char *s, const char *end, int64_t *out)
{
    int64_t v = 0;

    if (s == end || end - s > 19)
        return -1;
    for (; s < end; s++) {
        if (*s < '0' || *s > '9' || v > (INT64_MAX - (*s - '0')) / 10)
            return -1;
        v = v * 10 + (*s - '0');
    }
    *out = v;
    return 0;
}

int
mirror_stream_parse(const char *msg, size_t len, struct stream_head *out)
{
    const char *colon = memchr(msg, ':', len);

    if (colon == NULL || number(msg, colon, &out->tenant_id) != 0 ||
        number(colon + 1, msg + len, &out->seq) != 0)
        return -1;
    return 0;
}

int
mirror_stream_publish(struct mirror *mi, const struct stream_head *h, size_t n)
{
    char channel[MIRROR_STREAM_CHANNEL_MAX], msg[MIRROR_STREAM_MESSAGE_MAX];
    struct redis_conn *c = mirror_conn(mi);
    int rc = 0;

    if (c == NULL)
        return -1;
    size_t clen = mirror_stream_channel(channel, sizeof channel, mirror_prefix(mi));
    for (size_t i = 0; i < n; i++) {
        int mlen = snprintf(msg, sizeof msg, "%" PRId64 ":%" PRId64, h[i].tenant_id, h[i].seq);
        const char *argv[] = {"PUBLISH", channel, msg};
        size_t lens[] = {7, clen, (size_t)mlen};

        if (redis_conn_append(c, 3, argv, lens) != 0) {
            mirror_conn_lost(mi);
            return -1;
        }
    }
    for (size_t i = 0; i < n; i++) {
        redisReply *r;

        if (redis_conn_reply(c, &r) != 0) {
            mirror_conn_lost(mi);
            return -1;
        }
        if (r->type != REDIS_REPLY_INTEGER)
            rc = -1;
        freeReplyObject(r);
    }
    return rc;
}
