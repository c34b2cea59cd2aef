/* shard.c -- the shard sets and the rendezvous assignment of shard.h. */
#include "shard.h"

#include <stdio.h>
#include <string.h>

void
shard_set_clear(struct shard_set *s)
{
    memset(s, 0, sizeof *s);
}

void
shard_set_fill(struct shard_set *s)
{
    memset(s, 0xff, sizeof *s);
}

void
shard_set_add(struct shard_set *s, unsigned shard)
{
    s->bits[(shard % SHARD_COUNT) / 64] |= UINT64_C(1) << (shard % 64);
}

bool
shard_set_has(const struct shard_set *s, unsigned shard)
{
    return (s->bits[(shard % SHARD_COUNT) / 64] >> (shard % 64)) & 1;
}

size_t
shard_set_count(const struct shard_set *s)
{
    size_t n = 0;

    for (unsigned i = 0; i < SHARD_COUNT; i++)
        n += shard_set_has(s, i);
    return n;
}

bool
shard_set_equal(const struct shard_set *a, const struct shard_set *b)
{
    return memcmp(a, b, sizeof *a) == 0;
}

const char *
shard_set_text(const struct shard_set *s, char buf[SHARD_SET_TEXT_MAX])
{
    size_t len = 0;

    buf[len++] = '{';
    for (unsigned i = 0; i < SHARD_COUNT; i++)
        if (shard_set_has(s, i))
            len += (size_t)snprintf(buf + len, SHARD_SET_TEXT_MAX - len, "%s%u", len > 1 ? "," : "",
                                    i);
    snprintf(buf + len, SHARD_SET_TEXT_MAX - len, "}");
    return buf;
}

/* A 64-bit hash of (member, shard): FNV-1a over the name, then a splitmix64 finaliser with the
 * shard mixed in, so that shards spread evenly however similar the names are. */
static uint64_t
weight(const char *member, unsigned shard)
{
    uint64_t h = 14695981039346656037ULL;

    for (const char *p = member; *p != '\0'; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    h ^= (uint64_t)shard * 0x9e3779b97f4a7c15ULL;
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
    return h ^ (h >> 31);
}

void
shard_assign(const char *const *members, size_t n, const char *self, struct shard_set *out)
{
    shard_set_clear(out);
    for (unsigned s = 0; s < SHARD_COUNT; s++) {
        const char *best = self;
        uint64_t best_w = weight(self, s);
        for (size_t i = 0; i < n && i < SHARD_MEMBERS_MAX; i++) {
            uint64_t w = weight(members[i], s);
            /* Ties (never in practice) go to the smaller name, the same on every replica. */
            if (w > best_w || (w == best_w && strcmp(members[i], best) < 0)) {
                best = members[i];
                best_w = w;
            }
        }
        if (best == self || strcmp(best, self) == 0)
            shard_set_add(out, s);
    }
}
