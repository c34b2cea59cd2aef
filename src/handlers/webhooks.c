/* webhooks.c -- POST /v1/webhooks, GET /v1/webhooks, DELETE /v1/webhooks/{id}: a tenant's
 * receivers. The secret is made here and shown once, in the 201 answer; lists never carry it.
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
encode(const struct db_webhook *w, const char *secret)
{
    char created[TIMEFMT_BUF];
    json_t *v = json_pack("{s:s, s:s, s:o, s:s}", "id", w->id, "url", w->url, "description",
                          w->description ? json_string(w->description) : json_null(), "created_at",
                          timefmt_format(w->created_at_ms, created));
    if (v != NULL && secret != NULL)
        json_object_set_new(v, "secret", json_string(secret));
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
