/* hub_registry.c -- the hub's tenants and participants (hub_internal.h): two hash tables under
 * h->mu, a tenant's list of streams, and the counts that bound them (per replica, per
 * participant). A tenant is forgotten HUB_TENANT_IDLE_MS after its last stream closed, a
 * participant with its last stream. */
#include "hub_internal.h"

#include <stdlib.h>
#include <string.h>

#include "panic.h"
#include "timefmt.h"

static uint64_t
hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;

    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ULL; /* FNV-1a */
    return h;
}

static struct hub_tenant **
tenant_slot(struct hub *h, int64_t id)
{
    struct hub_tenant **t =
        &h->tenants[hash_bytes(14695981039346656037ULL, &id, sizeof id) % HUB_TENANT_BUCKETS];

    TOCSIN_ASSERT(hub_lock_held(&h->mu));
    while (*t != NULL && (*t)->id != id)
        t = &(*t)->next;
    return t;
}

static struct hub_person **
person_slot(struct hub *h, int64_t tenant_id, const char *sub)
{
    uint64_t k = hash_bytes(14695981039346656037ULL, &tenant_id, sizeof tenant_id);
    struct hub_person **p = &h->people[hash_bytes(k, sub, strlen(sub)) % HUB_PERSON_BUCKETS];

    TOCSIN_ASSERT(hub_lock_held(&h->mu));
    while (*p != NULL && ((*p)->tenant_id != tenant_id || strcmp((*p)->sub, sub) != 0))
        p = &(*p)->next;
    return p;
}

static void
tenant_free(struct hub_tenant *t)
{
    hub_ring_free(t);
    free(t);
}

struct hub_tenant *
hub_registry_tenant(struct hub *h, int64_t id)
{
    return *tenant_slot(h, id);
}

struct hub_tenant *
hub_registry_tenant_get(struct hub *h, int64_t id)
{
    struct hub_tenant **slot = tenant_slot(h, id);

    if (*slot == NULL && (*slot = calloc(1, sizeof **slot)) != NULL)
        (*slot)->id = id;
    return *slot;
}

struct hub_person *
hub_registry_person_get(struct hub *h, int64_t tenant_id, const char *sub)
{
    struct hub_person **slot = person_slot(h, tenant_id, sub);

    if (*slot == NULL && (*slot = calloc(1, sizeof **slot + strlen(sub) + 1)) != NULL) {
        (*slot)->tenant_id = tenant_id;
        strcpy((*slot)->sub, sub);
    }
    return *slot;
}

void
hub_registry_person_put(struct hub *h, struct hub_person *p)
{
    TOCSIN_ASSERT(p->n > 0);
    if (--p->n > 0)
        return;
    struct hub_person **slot = person_slot(h, p->tenant_id, p->sub);
    *slot = p->next;
    free(p);
}

void
hub_registry_link(struct hub *h, struct hub_stream *s)
{
    struct hub_tenant *t = s->tenant;

    TOCSIN_ASSERT(hub_lock_held(&h->mu));
    s->person->n++;
    s->next = t->streams;
    if (t->streams != NULL)
        t->streams->prev = s;
    t->streams = s;
    t->n_streams++;
    t->n_new++;
    h->n_streams++;
}

void
hub_registry_unlink(struct hub *h, struct hub_stream *s)
{
    struct hub_tenant *t = s->tenant;

    TOCSIN_ASSERT(hub_lock_held(&h->mu));
    TOCSIN_ASSERT(t->n_streams > 0 && h->n_streams > 0);
    if (s->prev != NULL)
        s->prev->next = s->next;
    else
        t->streams = s->next;
    if (s->next != NULL)
        s->next->prev = s->prev;
    if (s->state == HUB_STREAM_NEW) {
        TOCSIN_ASSERT(t->n_new > 0);
        t->n_new--;
    }
    if (--t->n_streams == 0)
        t->idle_since_ms = timefmt_mono_ms();
    hub_registry_person_put(h, s->person);
    h->n_streams--;
}

void
hub_registry_each_stream(struct hub *h, void (*fn)(struct hub_stream *s))
{
    TOCSIN_ASSERT(hub_lock_held(&h->mu));
    for (size_t b = 0; b < HUB_TENANT_BUCKETS; b++)
        for (struct hub_tenant *t = h->tenants[b]; t != NULL; t = t->next)
            for (struct hub_stream *s = t->streams; s != NULL; s = s->next)
                fn(s);
}

/* Hub thread: the only one that frees a tenant, so the tenants it works on stay valid while it
 * has h->mu dropped. */
void
hub_registry_forget_idle(struct hub *h, int64_t mono)
{
    TOCSIN_ASSERT(hub_lock_held(&h->mu) && h->hub_thread_self == hub_lock_self());
    for (size_t b = 0; b < HUB_TENANT_BUCKETS; b++) {
        struct hub_tenant **slot = &h->tenants[b];
        while (*slot != NULL) {
            struct hub_tenant *t = *slot;
            if (t->n_streams == 0 && mono - t->idle_since_ms > HUB_TENANT_IDLE_MS) {
                *slot = t->next;
                tenant_free(t);
            } else {
                slot = &t->next;
            }
        }
    }
}

void
hub_registry_clear(struct hub *h)
{
    for (size_t b = 0; b < HUB_TENANT_BUCKETS; b++)
        while (h->tenants[b] != NULL) {
            struct hub_tenant *t = h->tenants[b];
            h->tenants[b] = t->next;
            tenant_free(t);
        }
    for (size_t b = 0; b < HUB_PERSON_BUCKETS; b++)
        while (h->people[b] != NULL) {
            struct hub_person *p = h->people[b];
            h->people[b] = p->next;
            free(p);
        }
}
