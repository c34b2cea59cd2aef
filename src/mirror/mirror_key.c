/* mirror_key.c -- the key schema: "<prefix>:<kind>:<reminder_id>:<fire_at_ms>", with Cluster
 * "<prefix>:{s<shard>}:<kind>:...", and its strict parser (the expiry listener reads keys back
 * from Redis's events). */
#include "mirror.h"
#include "mirror_internal.h"
#include "shard.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

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
