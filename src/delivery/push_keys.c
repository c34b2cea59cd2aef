/* push_keys.c -- push_keys.h: VAPID key pairs made on first use, and the per-thread cache. */
#include "push_keys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "db_push.h"

_Static_assert(PUSH_P256DH_TEXT_LEN == WEBPUSH_VAPID_PUBLIC_TEXT_LEN, "a stored public key fits");
_Static_assert(PUSH_KEY_TEXT_MAX >= WEBPUSH_VAPID_PRIVATE_TEXT_LEN, "a stored private key fits");

struct audience {
    char origin[WEBPUSH_ORIGIN_MAX + 1]; /* "" = free */
    int64_t made_s;
    char header[PUSH_AUTHORIZATION_HEADER_MAX + 1];
};

struct entry {
    int64_t tenant_id;
    uint64_t used; /* 0 = free */
    struct webpush_vapid *v;
    struct audience aud[PUSH_KEYS_AUDIENCES_MAX];
    size_t next_aud; /* the slot a new audience takes when all are in use */
};

struct push_keys {
    const char *subject;
    uint64_t tick;
    struct entry e[PUSH_KEYS_TENANTS_MAX];
};

/* Makes a key pair and stores it unless another request stored one first: *k is then the pair
 * that is stored. */
static enum db_status
make(struct db *db, int64_t tenant_id, struct db_push_vapid_key *k)
{
    struct webpush_vapid *v = webpush_vapid_generate();
    char priv[WEBPUSH_VAPID_PRIVATE_TEXT_LEN + 1];
    int rc = v == NULL ? -1 : webpush_vapid_export(v, priv);

    if (rc == 0) {
        snprintf(k->private_key, sizeof k->private_key, "%s", priv);
        snprintf(k->public_key, sizeof k->public_key, "%s", webpush_vapid_public_key(v));
    }
    webpush_vapid_free(v);
    crypto_wipe(priv, sizeof priv);
    if (rc != 0) {
        db_note_error(db, "tenant %lld: cannot make a VAPID key pair", (long long)tenant_id);
        return DB_HARD_ERROR;
    }
    return db_push_vapid_key_put(db, tenant_id, k);
}

/* The tenant's key pair as stored (made first when it has none). */
static enum db_status
stored(struct db *db, int64_t tenant_id, struct db_push_vapid_key *k)
{
    enum db_status st = db_push_vapid_key_get(db, tenant_id, k);

    return st == DB_NO_RESULTS ? make(db, tenant_id, k) : st;
}

enum db_status
push_keys_public(struct db *db, int64_t tenant_id, char out[WEBPUSH_VAPID_PUBLIC_TEXT_LEN + 1])
{
    struct db_push_vapid_key k;
    enum db_status st = stored(db, tenant_id, &k);

    if (st == DB_ONE_RESULT)
        snprintf(out, WEBPUSH_VAPID_PUBLIC_TEXT_LEN + 1, "%s", k.public_key);
    crypto_wipe(&k, sizeof k);
    return st;
}

struct push_keys *
push_keys_new(const char *subject)
{
    struct push_keys *k = calloc(1, sizeof *k);

    if (k != NULL)
        k->subject = subject;
    return k;
}

void
push_keys_free(struct push_keys *k)
{
    if (k == NULL)
        return;
    for (size_t i = 0; i < PUSH_KEYS_TENANTS_MAX; i++)
        webpush_vapid_free(k->e[i].v);
    free(k);
}

/* The cache entry of tenant_id, loaded into the least recently used slot on a miss. */
static enum db_status
entry_get(struct push_keys *k, struct db *db, int64_t tenant_id, struct entry **out)
{
    struct entry *lru = &k->e[0];

    for (size_t i = 0; i < PUSH_KEYS_TENANTS_MAX; i++) {
        struct entry *e = &k->e[i];
        if (e->used != 0 && e->tenant_id == tenant_id) {
            e->used = ++k->tick;
            *out = e;
            return DB_ONE_RESULT;
        }
        if (e->used < lru->used)
            lru = e;
    }
    struct db_push_vapid_key stored_key;
    struct webpush_vapid *v = NULL;
    enum db_status st = stored(db, tenant_id, &stored_key);
    if (st == DB_ONE_RESULT &&
        webpush_vapid_import(stored_key.private_key, stored_key.public_key, &v) != WEBPUSH_OK) {
        db_note_error(db, "tenant %lld: its stored VAPID key does not import",
                      (long long)tenant_id);
        st = DB_HARD_ERROR;
    }
    crypto_wipe(&stored_key, sizeof stored_key);
    if (st != DB_ONE_RESULT)
        return st;
    webpush_vapid_free(lru->v);
    memset(lru, 0, sizeof *lru);
    lru->tenant_id = tenant_id;
    lru->v = v;
    lru->used = ++k->tick;
    *out = lru;
    return DB_ONE_RESULT;
}

/* The kept header for audience (renewed in its slot when near its exp), or a new one signed at
 * now_s in the next slot in turn (e->next_aud: free slots first, then round robin). */
static const char *
header_get(struct push_keys *k, struct entry *e, const char *audience, int64_t now_s)
{
    char jwt[WEBPUSH_JWT_MAX + 1], value[WEBPUSH_AUTHORIZATION_MAX + 1];
    struct audience *a = NULL;

    for (size_t i = 0; i < PUSH_KEYS_AUDIENCES_MAX && a == NULL; i++)
        if (strcmp(e->aud[i].origin, audience) == 0)
            a = &e->aud[i];
    if (a != NULL && now_s >= a->made_s &&
        now_s - a->made_s < PUSH_JWT_LIFETIME_S - PUSH_JWT_RENEW_S)
        return a->header;
    if (a == NULL) {
        a = &e->aud[e->next_aud];
        e->next_aud = (e->next_aud + 1) % PUSH_KEYS_AUDIENCES_MAX;
    }
    a->origin[0] = '\0';
    if (strlen(audience) > WEBPUSH_ORIGIN_MAX ||
        webpush_vapid_jwt(e->v, audience, k->subject, now_s, PUSH_JWT_LIFETIME_S, jwt) !=
            WEBPUSH_OK ||
        webpush_vapid_authorization(e->v, jwt, value) != 0)
        return NULL;
    snprintf(a->header, sizeof a->header, "Authorization: %s", value);
    snprintf(a->origin, sizeof a->origin, "%s", audience);
    a->made_s = now_s;
    return a->header;
}

enum db_status
push_keys_authorization(struct push_keys *k, struct db *db, int64_t tenant_id, const char *audience,
                        int64_t now_s, char out[PUSH_AUTHORIZATION_HEADER_MAX + 1])
{
    struct entry *e;
    enum db_status st = entry_get(k, db, tenant_id, &e);
    const char *h;

    if (st != DB_ONE_RESULT)
        return st;
    if ((h = header_get(k, e, audience, now_s)) == NULL) {
        db_note_error(db, "tenant %lld: cannot sign a VAPID header", (long long)tenant_id);
        return DB_HARD_ERROR;
    }
    snprintf(out, PUSH_AUTHORIZATION_HEADER_MAX + 1, "%s", h);
    return DB_ONE_RESULT;
}
