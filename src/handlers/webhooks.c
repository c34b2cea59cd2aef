/* webhooks.c -- POST /v1/webhooks, GET /v1/webhooks, GET, PATCH and DELETE /v1/webhooks/{id}: a
 * tenant's receivers. The secret is made here and shown once, in the 201 answer; lists never
 * carry it. PATCH changes url, description and disabled (a webhook turned off gets its rows
 * recorded failed without a request, for a recover once it is on again). POST .../rotate-secret
 * makes a new secret, shown once; the old one signs beside it for TOCSIN_WEBHOOK_ROTATE_OVERLAP_S.
 * The URL is checked for shape and for the addresses it resolves to: each must be public or in a
 * network of TOCSIN_WEBHOOK_ALLOW_NETS (a host name listed there passes whatever it resolves to;
 * TOCSIN_WEBHOOK_ALLOW_PRIVATE=1 allows any). Delivery checks again, as DNS answers change. */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>

#include "db_webhook.h"
#include "handler.h"
#include "http_routes.h"
#include "timefmt.h"
#include "webhook.h"
#include "webhook_sign.h"

/* As webhook.h promises: a URL's rejection reason fits a field error's message, and a URL within
 * the codec's bound is within webhook_target_check's. */
_Static_assert(WEBHOOK_ERR_MAX == CODEC_MESSAGE_MAX, "a webhook reason fits a field error");
_Static_assert(WEBHOOK_URL_MAX == CODEC_URL_MAX, "one bound for webhook URLs");

static json_t *
time_or_null(int64_t ms)
{
    char buf[TIMEFMT_BUF];
    return ms ? json_string(timefmt_format(ms, buf)) : json_null();
}

/* disabled (turned off), open (the breaker's count of failures since the last success, the
 * latest recent), failing (the latest attempt failed) or healthy (it succeeded, or none yet). */
static const char *
health_state(const struct db_webhook *w)
{
    if (w->disabled_at_ms != 0)
        return "disabled";
    if (w->open)
        return "open";
    return w->last_failure_ms > w->last_success_ms ? "failing" : "healthy";
}

static json_t *
health(const struct db_webhook *w)
{
    int64_t n = w->ok_1h + w->failed_1h;

    return json_pack("{s:s, s:I, s:o, s:o, s:o, s:o}", "state", health_state(w), "attempts_1h",
                     (json_int_t)n, "success_rate_1h",
                     n > 0 ? json_real((double)w->ok_1h / (double)n) : json_null(),
                     "last_success_at", time_or_null(w->last_success_ms), "last_failure_at",
                     time_or_null(w->last_failure_ms), "last_error",
                     w->last_error ? json_string(w->last_error) : json_null());
}

static json_t *
encode(const struct db_webhook *w, const char *secret)
{
    char created[TIMEFMT_BUF];
    char disabled[TIMEFMT_BUF];
    json_t *v = json_pack(
        "{s:s, s:s, s:o, s:s, s:b, s:o}", "id", w->id, "url", w->url, "description",
        w->description ? json_string(w->description) : json_null(), "created_at",
        timefmt_format(w->created_at_ms, created), "disabled", w->disabled_at_ms != 0,
        "disabled_at",
        w->disabled_at_ms ? json_string(timefmt_format(w->disabled_at_ms, disabled)) : json_null());
    if (v != NULL && secret != NULL)
        json_object_set_new(v, "secret", json_string(secret));
    else if (v != NULL && json_object_set_new(v, "health", health(w)) != 0) {
        json_decref(v);
        return NULL;
    }
    return v;
}

static int
create(struct request *rq, struct db_webhook *w)
{
    char secret[WEBHOOK_SECRET_LEN + 1], location[64];
    struct db *db = http_request_db(rq);

    if (db == NULL || meeting_new_id(w->id) != 0 || webhook_sign_secret_new(secret) != 0)
        return http_reply_problem(rq, API_E_DB_UNAVAILABLE, NULL);
    w->secret = secret;
    enum db_status st = db_webhook_insert(db, rq->tenant_id, w);
    if (st != DB_ONE_RESULT)
        return handler_db_failure(rq, st, API_E_WEBHOOK_LIMIT,
                                  "a tenant may register at most 100 webhooks");
    snprintf(location, sizeof location, "/v1/webhooks/%s", w->id);
    struct http_reply_meta meta = {NULL, location, NULL, NULL};
    return http_reply_json(rq, MHD_HTTP_CREATED, encode(w, secret), &meta);
}

int
handle_webhooks_post(struct request *rq)
{
    struct codec_errors errs = {0};
    struct db_webhook w = {0};
    char why[WEBHOOK_ERR_MAX];
    json_t *doc;
    int ret;

    if ((doc = handler_json_body(rq, &ret)) == NULL)
        return ret;
    if (codec_webhook_decode(doc, &w.url, &w.description, &errs) != API_E_NONE) {
        ret = http_reply_validation(rq, &errs);
    } else if (webhook_target_check(w.url, &rq->w->cfg->webhook_allow, why, sizeof why) != 0) {
        snprintf(errs.e[0].field, sizeof errs.e[0].field, "url");
        snprintf(errs.e[0].message, sizeof errs.e[0].message, "%.150s", why);
        errs.n = 1;
        ret = http_reply_validation(rq, &errs);
    } else {
        ret = create(rq, &w);
    }
    free(w.url);
    free(w.description);
    json_decref(doc);
    return ret;
}

static void
add_row(void *arg, const struct db_webhook *w)
{
    json_array_append_new(arg, encode(w, NULL));
}

int
handle_webhooks_list(struct request *rq)
{
    struct db *db;
    json_t *items;
    int ret;

    if ((db = handler_db_no_query(rq, &ret)) == NULL)
        return ret;
    items = json_array();
    return handler_reply_items(rq, db_webhook_list(db, rq->tenant_id, add_row, items), items);
}

int
handle_webhook_delete(struct request *rq)
{
    struct db *db;
    int ret;

    if ((db = handler_db_no_query(rq, &ret)) == NULL)
        return ret;
    return handler_reply_deleted(rq, db_webhook_delete(db, rq->tenant_id, rq->match.args[0]),
                                 API_E_WEBHOOK_NOT_FOUND);
}

/* The one webhook a GET or PATCH read (a db_webhook_row_fn into a json_t **). */
static void
set_one(void *arg, const struct db_webhook *w)
{
    json_t **out = arg;

    *out = encode(w, NULL);
}

static int
reply_one(struct request *rq, enum db_status st, json_t *v)
{
    if (st != DB_ONE_RESULT) {
        json_decref(v);
        return handler_db_failure(rq, st, API_E_WEBHOOK_NOT_FOUND, NULL);
    }
    if (v == NULL)
        return http_reply_problem(rq, API_E_INTERNAL, NULL);
    return http_reply_json(rq, MHD_HTTP_OK, v, NULL);
}

int
handle_webhook_get(struct request *rq)
{
    struct db *db;
    json_t *v = NULL;
    int ret;

    if ((db = handler_db_no_query(rq, &ret)) == NULL)
        return ret;
    enum db_status st = db_webhook_get(db, rq->tenant_id, rq->match.args[0], set_one, &v);
    return reply_one(rq, st, v);
}

/* Checks and applies the change c to webhook id; the reply. */
static int
patch(struct request *rq, const struct db_webhook_change *c)
{
    struct codec_errors errs = {0};
    char why[WEBHOOK_ERR_MAX];
    struct db *db;
    json_t *v = NULL;
    int ret;

    if (c->url != NULL &&
        webhook_target_check(c->url, &rq->w->cfg->webhook_allow, why, sizeof why) != 0) {
        codec_add_error(&errs, "url", "%.150s", why);
        return http_reply_validation(rq, &errs);
    }
    if ((db = handler_db(rq, &ret)) == NULL)
        return ret;
    enum db_status st = db_webhook_update(db, rq->tenant_id, rq->match.args[0], c, set_one, &v);
    return reply_one(rq, st, v);
}

int
handle_webhook_patch(struct request *rq)
{
    struct codec_errors errs = {0};
    struct db_webhook_change c = {0};
    char *url = NULL, *description = NULL;
    json_t *doc;
    int ret;

    if (handler_no_query(rq, &ret) != 0 ||
        handler_require_type(rq, "application/merge-patch+json", &ret) != 0 ||
        (doc = handler_parse_body(rq, &ret)) == NULL)
        return ret;
    if (codec_webhook_patch_decode(doc, &url, &description, &c.set_description, &c.disabled,
                                   &errs) != API_E_NONE) {
        ret = http_reply_validation(rq, &errs);
    } else {
        c.url = url;
        c.description = description;
        ret = patch(rq, &c);
    }
    free(url);
    free(description);
    json_decref(doc);
    return ret;
}

int
handle_webhook_rotate(struct request *rq)
{
    char secret[WEBHOOK_SECRET_LEN + 1], until[TIMEFMT_BUF];
    int64_t until_ms;
    struct db *db;
    int ret;

    if ((db = handler_db_no_query(rq, &ret)) == NULL)
        return ret;
    if (webhook_sign_secret_new(secret) != 0)
        return http_reply_problem(rq, API_E_INTERNAL, "no random bytes for a secret");
    enum db_status st = db_webhook_rotate(db, rq->tenant_id, rq->match.args[0], secret,
                                          rq->w->cfg->webhook_rotate_overlap_s, &until_ms);
    if (st != DB_ONE_RESULT)
        return handler_db_failure(rq, st, API_E_WEBHOOK_NOT_FOUND, NULL);
    return http_reply_json(rq, MHD_HTTP_OK,
                           json_pack("{s:s, s:s}", "secret", secret, "previous_until",
                                     timefmt_format(until_ms, until)),
                           NULL);
}
