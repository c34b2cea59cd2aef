/* push.c -- Web Push for a web app (docs/design.md section 8): GET /v1/push/vapid-public-key (the
 * tenant's VAPID key, for pushManager.subscribe's applicationServerKey; made on first use),
 * POST /v1/push/subscriptions (a participant's browser subscribes: the body is
 * PushSubscription.toJSON()) and DELETE /v1/push/subscriptions/{id}. Subscriptions belong to the
 * browser token's participant; delivery is in deliver.c and channel.c. */
#include <microhttpd.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "b64.h"
#include "db_push.h"
#include "handler.h"
#include "http_routes.h"
#include "push_keys.h"
#include "webhook.h"
#include "webpush.h"

#define LOCATION_MAX 96

_Static_assert(B64URL_ENCODED_LEN(WEBPUSH_P256DH_LEN) == PUSH_P256DH_TEXT_LEN, "p256dh text");
_Static_assert(B64URL_ENCODED_LEN(WEBPUSH_AUTH_LEN) == PUSH_AUTH_TEXT_LEN, "auth text");
_Static_assert(WEBPUSH_ENDPOINT_MAX == PUSH_ENDPOINT_MAX, "one endpoint bound");

int
handle_push_vapid_key(struct request *rq)
{
    char key[WEBPUSH_VAPID_PUBLIC_TEXT_LEN + 1];
    struct db *db;
    int ret;

    if ((db = handler_db_no_query(rq, &ret)) == NULL)
        return ret;
    switch (push_keys_public(db, rq->tenant_id, key)) {
    case DB_HARD_ERROR:
    case DB_SOFT_ERROR:
    case DB_NO_RESULTS:
        return http_reply_problem(rq, API_E_DB_UNAVAILABLE, NULL);
    case DB_ONE_RESULT:
        break;
    }
    return http_reply_json(rq, MHD_HTTP_OK, json_pack("{s:s}", "key", key), NULL);
}

static void
field_error(struct codec_errors *errs, const char *field, const char *message)
{
    if (errs->n >= CODEC_FIELD_ERRORS_MAX)
        return;
    snprintf(errs->e[errs->n].field, sizeof errs->e[errs->n].field, "%s", field);
    snprintf(errs->e[errs->n].message, sizeof errs->e[errs->n].message, "%.150s", message);
    errs->n++;
}

/* The endpoint: an https URL a browser's push service gave (plain http and private addresses
 * only when allowed, for tests), its origin into origin. */
static void
check_endpoint(struct request *rq, const char *endpoint, char origin[WEBPUSH_ORIGIN_MAX + 1],
               struct codec_errors *errs)
{
    bool allow_private = rq->cfg->webpush_allow_private != 0;
    char why[WEBHOOK_ERR_MAX];

    if (webpush_origin(endpoint, origin) != WEBPUSH_OK)
        field_error(errs, "endpoint", "must be an https URL with a plain host name or address");
    else if (!allow_private && strncasecmp(endpoint, "https:", 6) != 0)
        field_error(errs, "endpoint",
                    "must be https (set TOCSIN_WEBPUSH_ALLOW_PRIVATE=1 to allow http for tests)");
    else if (webhook_url_check(endpoint, allow_private, why, sizeof why) != 0)
        field_error(errs, "endpoint", why);
}

/* The keys, decoded and written back as unpadded base64url (what is stored). */
static void
check_keys(const struct codec_push_subscription *in, struct webpush_subscriber *keys,
           char p256dh[PUSH_P256DH_TEXT_LEN + 1], char auth[PUSH_AUTH_TEXT_LEN + 1],
           struct codec_errors *errs)
{
    enum webpush_error e =
        webpush_subscriber_decode(in->p256dh, strlen(in->p256dh), in->auth, strlen(in->auth), keys);
    switch (e) {
    case WEBPUSH_OK:
        p256dh[b64url_encode(keys->p256dh, sizeof keys->p256dh, p256dh)] = '\0';
        auth[b64url_encode(keys->auth, sizeof keys->auth, auth)] = '\0';
        return;
    case WEBPUSH_E_AUTH_ENCODING:
    case WEBPUSH_E_AUTH_LENGTH:
        field_error(errs, "keys.auth", webpush_error_text(e));
        return;
    default:
        field_error(errs, "keys.p256dh", webpush_error_text(e));
        return;
    }
}

static int
store(struct request *rq, struct db_push_subscription *s)
{
    char location[LOCATION_MAX];
    struct db *db = http_request_db(rq);

    if (db == NULL || meeting_new_id(s->id) != 0)
        return http_reply_problem(rq, API_E_DB_UNAVAILABLE, NULL);
    enum db_status st = db_push_subscription_put(db, rq->tenant_id, s);
    if (st != DB_ONE_RESULT)
        return handler_db_failure(rq, st, API_E_PUSH_SUBSCRIPTION_LIMIT,
                                  "a participant may have at most 10 push subscriptions");
    snprintf(location, sizeof location, "/v1/push/subscriptions/%s", s->id);
    struct http_reply_meta meta = {NULL, location, NULL, NULL};
    return http_reply_json(rq, s->replaced ? MHD_HTTP_OK : MHD_HTTP_CREATED,
                           json_pack("{s:s}", "id", s->id), &meta);
}

int
handle_push_subscriptions_post(struct request *rq)
{
    struct codec_errors errs = {0};
    struct codec_push_subscription in;
    struct webpush_subscriber keys;
    char origin[WEBPUSH_ORIGIN_MAX + 1], p256dh[PUSH_P256DH_TEXT_LEN + 1],
        auth[PUSH_AUTH_TEXT_LEN + 1];
    json_t *doc;
    int ret;

    if ((doc = handler_json_body(rq, &ret)) == NULL)
        return ret;
    if (codec_push_subscription_decode(doc, &in, &errs) == API_E_NONE) {
        check_endpoint(rq, in.endpoint, origin, &errs);
        check_keys(&in, &keys, p256dh, auth, &errs);
    }
    if (errs.n > 0) {
        ret = http_reply_validation(rq, &errs);
    } else {
        struct db_push_subscription s = {.participant_id = rq->who.sub,
                                         .endpoint = in.endpoint,
                                         .origin = origin,
                                         .p256dh = p256dh,
                                         .auth = auth,
                                         .expires_at_ms = in.expires_at_ms};
        ret = store(rq, &s);
    }
    codec_push_subscription_fini(&in);
    json_decref(doc);
    return ret;
}

int
handle_push_subscription_delete(struct request *rq)
{
    struct db *db;
    int ret;

    if ((db = handler_db_no_query(rq, &ret)) == NULL)
        return ret;
    return handler_reply_deleted(
        rq, db_push_subscription_delete(db, rq->tenant_id, rq->who.sub, rq->match.args[0]),
        API_E_PUSH_SUBSCRIPTION_NOT_FOUND);
}
