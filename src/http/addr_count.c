/* addr_count.c -- the per-address places of addr_count.h: hash chains of the addresses that hold
 * any, an entry freed when its last place comes back. */
#include "addr_count.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "panic.h"

/* IPv6 clients are counted by network: one host is commonly given a whole /64 and could open
 * connections from as many addresses as it likes. */
#define IPV6_PREFIX_BYTES 8
#define KEY_MAX (1 + IPV6_PREFIX_BYTES) /* the family, then an address or a network */

struct entry {
    struct entry *next;
    unsigned held;
    size_t key_len;
    unsigned char key[KEY_MAX];
};

struct addr_count {
    pthread_mutex_t mu;
    unsigned max;
    struct entry *buckets[ADDR_COUNT_BUCKETS];
};

/* What a client is counted by, without the port: its family, then an IPv4 address (also one an
 * IPv6 listener sees mapped, ::ffff:a.b.c.d) or an IPv6 address's /64 (a family with neither, a
 * Unix socket, is one client). */
static size_t
key_of(const struct sockaddr *sa, socklen_t len, unsigned char key[KEY_MAX])
{
    key[0] = sa != NULL && len >= (socklen_t)sizeof(sa_family_t) ? (unsigned char)sa->sa_family : 0;
    if (key[0] == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        memcpy(key + 1, &((const struct sockaddr_in *)sa)->sin_addr, 4);
        return 5;
    }
    if (key[0] == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(a)) {
            key[0] = AF_INET;
            memcpy(key + 1, &a->s6_addr[12], 4);
            return 5;
        }
        memcpy(key + 1, a->s6_addr, IPV6_PREFIX_BYTES);
        return 1 + IPV6_PREFIX_BYTES;
    }
    return 1;
}

/* FNV-1a, not keyed: a client that picks networks whose keys share a chain makes each lookup walk
 * that chain, but a chain holds at most the connections open at once (the acceptor's total
 * bound), so the walk stays short. */
static size_t
bucket_of(const unsigned char *key, size_t n)
{
    uint32_t h = 2166136261u;

    for (size_t i = 0; i < n; i++)
        h = (h ^ key[i]) * 16777619u;
    return h % ADDR_COUNT_BUCKETS;
}

/* The link that points at key's entry, or at the NULL ending its chain. ac->mu held. */
static struct entry **
find(struct addr_count *ac, const unsigned char *key, size_t n)
{
    struct entry **p = &ac->buckets[bucket_of(key, n)];

    while (*p != NULL && ((*p)->key_len != n || memcmp((*p)->key, key, n) != 0))
        p = &(*p)->next;
    return p;
}

struct addr_count *
addr_count_new(unsigned max)
{
    struct addr_count *ac = calloc(1, sizeof *ac);

    if (ac == NULL)
        return NULL;
    pthread_mutex_init(&ac->mu, NULL);
    ac->max = max;
    return ac;
}

void
addr_count_free(struct addr_count *ac)
{
    if (ac == NULL)
        return;
    for (size_t b = 0; b < ADDR_COUNT_BUCKETS; b++)
        while (ac->buckets[b] != NULL) {
            struct entry *e = ac->buckets[b];
            ac->buckets[b] = e->next;
            free(e);
        }
    pthread_mutex_destroy(&ac->mu);
    free(ac);
}

bool
addr_count_take(struct addr_count *ac, const struct sockaddr *sa, socklen_t len)
{
    unsigned char key[KEY_MAX];
    size_t n = key_of(sa, len, key);
    bool ok = false;

    pthread_mutex_lock(&ac->mu);
    struct entry **p = find(ac, key, n);
    if (*p == NULL && ac->max > 0 && (*p = calloc(1, sizeof **p)) != NULL) {
        (*p)->key_len = n;
        memcpy((*p)->key, key, n);
    }
    if (*p != NULL && (*p)->held < ac->max) {
        (*p)->held++;
        ok = true;
    }
    pthread_mutex_unlock(&ac->mu);
    return ok;
}

void
addr_count_give(struct addr_count *ac, const struct sockaddr *sa, socklen_t len)
{
    unsigned char key[KEY_MAX];
    size_t n = key_of(sa, len, key);

    pthread_mutex_lock(&ac->mu);
    struct entry **p = find(ac, key, n);
    /* A give without its take is our bug: the count would drift and the bound with it. */
    TOCSIN_ASSERT(*p != NULL && (*p)->held > 0);
    if (--(*p)->held == 0) {
        struct entry *e = *p;
        *p = e->next;
        free(e);
    }
    pthread_mutex_unlock(&ac->mu);
}

unsigned
addr_count_held(struct addr_count *ac, const struct sockaddr *sa, socklen_t len)
{
    unsigned char key[KEY_MAX];
    size_t n = key_of(sa, len, key);

    pthread_mutex_lock(&ac->mu);
    struct entry *e = *find(ac, key, n);
    unsigned held = e != NULL ? e->held : 0;
    pthread_mutex_unlock(&ac->mu);
    return held;
}
