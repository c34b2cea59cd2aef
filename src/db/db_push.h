/* db_push.h -- Web Push: the tenants' VAPID keys and the participants' push subscriptions
 * (migrations/007). Implemented in db_push.c. */
#ifndef TOCSIN_DB_PUSH_H
#define TOCSIN_DB_PUSH_H

#include <stdbool.h>
#include <stdint.h>

#include "db.h"
#include "meeting.h"

#define PUSH_SUBSCRIPTIONS_PER_PARTICIPANT_MAX 10
#define PUSH_ENDPOINT_MAX 2048
#define PUSH_KEY_TEXT_MAX 200 /* a VAPID private key as stored */
#define PUSH_P256DH_TEXT_LEN 87
#define PUSH_AUTH_TEXT_LEN 22

struct db_push_vapid_key {
    char private_key[PUSH_KEY_TEXT_MAX + 1];
    char public_key[PUSH_P256DH_TEXT_LEN + 1]; /* base64url of the 65-byte point */
};

/* The tenant's key: ONE_RESULT, or NO_RESULTS when it has none yet. */
enum db_status db_push_vapid_key_get(struct db *db, int64_t tenant_id, struct db_push_vapid_key *k);
/* Stores k as the tenant's key unless it has one already; *k is then the one stored (the first
 * writer wins, so concurrent first uses agree on one key). ONE_RESULT or an error. */
enum db_status db_push_vapid_key_put(struct db *db, int64_t tenant_id, struct db_push_vapid_key *k);

struct db_push_subscription {
    char id[MEETING_ID_LEN + 1];
    const char *participant_id, *endpoint, *origin, *p256dh, *auth;
    int64_t expires_at_ms; /* 0 = none */
    bool replaced;         /* out: the participant had this endpoint already */
};

/* Stores s for its participant: the participant's subscription of the same endpoint is updated
 * (its id kept, written into s->id, s->replaced set); another participant's subscription of it
 * is removed (the browser changed hands); else a new one is added unless the participant has
 * PUSH_SUBSCRIPTIONS_PER_PARTICIPANT_MAX already. In one transaction under the tenant's lock, so
 * concurrent requests cannot pass the limit together. ONE_RESULT, NO_RESULTS at the limit. */
enum db_status db_push_subscription_put(struct db *db, int64_t tenant_id,
                                        struct db_push_subscription *s);
/* Removes a participant's subscription: ONE_RESULT, or NO_RESULTS when it has no such one. */
enum db_status db_push_subscription_delete(struct db *db, int64_t tenant_id,
                                           const char *participant_id, const char *id);
/* Removes a subscription the push service said is gone (404, 410). */
enum db_status db_push_subscription_gone(struct db *db, const char *id);

#endif
