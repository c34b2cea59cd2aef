/* db_signing_key.h -- the tenants' signing keys for browser tokens (docs/design.md section 7): at
 * most SIGNING_KEYS_LIVE_MAX live per tenant, so that a key can be rotated without a gap.
 * Implemented in db_signing_key.c. */
#ifndef TOCSIN_DB_SIGNING_KEY_H
#define TOCSIN_DB_SIGNING_KEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db.h"

#define SIGNING_KEYS_LIVE_MAX 2
#define SIGNING_KEY_ID_MAX 64     /* the JWT kid: [A-Za-z0-9_-]{1,64} */
#define SIGNING_KEY_SECRET_MAX 64 /* "tsk_" + base64url of 32 bytes */

struct db_signing_key {
    char id[SIGNING_KEY_ID_MAX + 1];
    char secret[SIGNING_KEY_SECRET_MAX + 1]; /* "" in lists */
    int64_t tenant_id;
    int64_t created_at_ms;
};

/* Inserts k (id and secret set by the caller) for its tenant unless the tenant has
 * SIGNING_KEYS_LIVE_MAX live keys; the count and the insert are one transaction under a lock on
 * the tenant's row, so concurrent requests cannot pass the limit together. ONE_RESULT
 * (created_at_ms filled), NO_RESULTS at the limit, or an error. */
enum db_status db_signing_key_insert(struct db *db, struct db_signing_key *k);
typedef void (*db_signing_key_row_fn)(void *arg, const struct db_signing_key *k);
/* Calls fn for each live key of the tenant, oldest first (secret ""). */
enum db_status db_signing_key_list(struct db *db, int64_t tenant_id, db_signing_key_row_fn fn,
                                   void *arg);
/* Revokes one: ONE_RESULT, or NO_RESULTS when the tenant has no such live key. */
enum db_status db_signing_key_revoke(struct db *db, int64_t tenant_id, const char *id);
/* The live key with this id (any tenant: the id names it) into *k: ONE_RESULT or NO_RESULTS. */
enum db_status db_signing_key_get(struct db *db, const char *id, struct db_signing_key *k);
/* The tenant's newest live key into *k: ONE_RESULT or NO_RESULTS. */
enum db_status db_signing_key_newest(struct db *db, int64_t tenant_id, struct db_signing_key *k);
/* Which of ids[0..n) (valid key ids) are live keys: live[i] set for each, ONE_RESULT; or an
 * error, live[] untouched. For the stream hub, which ends the streams of revoked keys. */
enum db_status db_signing_key_live(struct db *db, const char *const *ids, size_t n, bool *live);

#endif
