/* hub_revoke.c -- the end of the streams of revoked signing keys (hub_internal.h). A browser
 * token is checked once, when its stream opens, and the stream would live on until the token's exp
 * or its maximum age; so every HUB_REVOKE_CHECK_MS the hub thread collects the signing keys its
 * open streams were opened with, asks PostgreSQL which are still live, and ends the streams of the
 * others. Each replica asks for itself, on the connection the hub thread owns: a revocation made on
 * any replica is seen by all, and a stream that a replica opened after the revocation (its HTTP
 * threads' token caches still knew the key, TOCSIN_AUTH_CACHE_MS) is found at the next check as
 * the others are. The ended stream's reader finishes what is buffered and the response ends; the
 * client's next connection, with the same token, is refused 401. */
#include "hub_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "metrics.h"
#include "panic.h"

/* Makes room in h->kids for one key per open stream. False when out of memory. */
static bool
kids_room(struct hub *h)
{
    if (h->kids_cap >= h->n_streams)
        return true;
    size_t cap = h->kids_cap * 2 > h->n_streams ? h->kids_cap * 2 : h->n_streams;
    struct hub_kid *k = realloc(h->kids, cap * sizeof *k);
    if (k == NULL)
        return false;
    h->kids = k;
    h->kids_cap = cap;
    return true;
}

/* The distinct signing keys of the streams not ended yet into h->kids, tenant by tenant (a key
 * belongs to one tenant, and a tenant has few: two live, and any revoked one only until this
 * check ends its streams). Returns their count. */
static size_t
collect(struct hub *h)
{
    size_t n = 0;

    for (size_t b = 0; b < HUB_TENANT_BUCKETS; b++)
        for (struct hub_tenant *t = h->tenants[b]; t != NULL; t = t->next) {
            size_t first = n;
            for (struct hub_stream *s = t->streams; s != NULL; s = s->next) {
                bool seen = s->kid[0] == '\0' || s->ended;
                for (size_t i = first; i < n && !seen; i++)
                    seen = strcmp(h->kids[i].id, s->kid) == 0;
                if (seen)
                    continue;
                TOCSIN_ASSERT(n < h->kids_cap);
                h->kids[n].tenant_id = t->id;
                h->kids[n].live = true;
                snprintf(h->kids[n].id, sizeof h->kids[n].id, "%s", s->kid);
                n++;
            }
        }
    return n;
}

/* Ends the streams of tenant k->tenant_id opened with k's key. */
static void
end_streams(struct hub *h, const struct hub_kid *k)
{
    struct hub_tenant *t = hub_registry_tenant(h, k->tenant_id);
    size_t ended = 0;

    /* Only the hub thread frees a tenant, so the one the key was collected from is still here
     * (perhaps without streams now). */
    for (struct hub_stream *s = t != NULL ? t->streams : NULL; s != NULL; s = s->next)
        if (!s->ended && strcmp(s->kid, k->id) == 0) {
            hub_stream_end(s);
            ended++;
        }
    if (ended > 0) {
        LOG_INFO("stream: signing key %s of tenant %lld was revoked; %zu of its streams ended",
                 k->id, (long long)k->tenant_id, ended);
        metrics_add(METRIC_STREAMS_REVOKED, ended);
    }
}

void
hub_revoke_check(struct hub *h, int64_t mono)
{
    TOCSIN_ASSERT(hub_lock_held(&h->mu) && h->hub_thread_self == hub_lock_self());
    if (mono < h->next_revoke_ms || h->n_streams == 0)
        return;
    h->next_revoke_ms = mono + HUB_REVOKE_CHECK_MS;
    if (!kids_room(h)) {
        LOG_WARN("stream hub: out of memory for the check of revoked signing keys");
        return;
    }
    size_t n = collect(h);
    bool ok = true;
    if (n == 0) /* nothing to check: the streams have ended, or carry no key */
        return;
    /* h->kids is the hub thread's own: it stays as collected while h->mu is dropped. */
    hub_lock_release(&h->mu);
    for (size_t i = 0; i < n && ok; i += HUB_REVOKE_BATCH)
        ok = hub_db_keys_live(h, &h->kids[i], n - i < HUB_REVOKE_BATCH ? n - i : HUB_REVOKE_BATCH);
    hub_lock_acquire(&h->mu);
    /* On database trouble the next check asks again; the streams stay as they are meanwhile. */
    for (size_t i = 0; i < n && ok; i++)
        if (!h->kids[i].live)
            end_streams(h, &h->kids[i]);
}
