/* push_keys.h -- the tenants' VAPID key pairs (docs/design.md section 8). A tenant's pair is made
 * on first use and kept in PostgreSQL (db_push.h), the first writer winning, so every replica signs
 * with the same key and the public half a web app passed to pushManager.subscribe() stays valid.
 * Delivery keeps a per-thread cache of the key pairs and of the VAPID JWT per push service, so a
 * burst of pushes signs once per (tenant, push service) instead of once per message. */
#ifndef TOCSIN_PUSH_KEYS_H
#define TOCSIN_PUSH_KEYS_H

#include <stdint.h>

#include "db.h"
#include "webpush.h"

#define PUSH_KEYS_TENANTS_MAX 32  /* key pairs a cache holds; the least recently used goes */
#define PUSH_KEYS_AUDIENCES_MAX 4 /* push services per tenant whose JWT is kept */
#define PUSH_JWT_LIFETIME_S 43200 /* 12 h: well inside the 24 h push services take */
#define PUSH_JWT_RENEW_S 3600     /* a kept JWT is replaced this long before its exp */
#define PUSH_AUTHORIZATION_HEADER_MAX (sizeof "Authorization: " - 1 + WEBPUSH_AUTHORIZATION_MAX)

/* The tenant's public key as text into out, making and storing the pair when it has none.
 * DB_ONE_RESULT, a database error, or DB_HARD_ERROR when no key could be made. */
enum db_status push_keys_public(struct db *db, int64_t tenant_id,
                                char out[WEBPUSH_VAPID_PUBLIC_TEXT_LEN + 1]);

struct push_keys;

/* A cache for one thread that signs with subject (TOCSIN_VAPID_SUBJECT, borrowed). NULL when
 * out of memory. */
struct push_keys *push_keys_new(const char *subject);
/* Frees k and wipes the keys it held. NULL ok. */
void push_keys_free(struct push_keys *k);
/* Writes the "Authorization: vapid t=..., k=..." header line for a push by tenant_id to the push
 * service at audience (an origin, webpush_origin) at now_s into out. DB_ONE_RESULT, a database
 * error (try again later), or DB_HARD_ERROR (the key or the audience is unusable). */
enum db_status push_keys_authorization(struct push_keys *k, struct db *db, int64_t tenant_id,
                                       const char *audience, int64_t now_s,
                                       char out[PUSH_AUTHORIZATION_HEADER_MAX + 1]);

#endif
