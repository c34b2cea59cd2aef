/* delivery_retry.c -- sending again: POST /v1/deliveries/{id}/retry queues one failed (or
 * delivered: a resend) delivery again, due at once; POST /v1/webhooks/{id}/recover {"since"}
 * queues every failed delivery of a webhook whose reminder fired since then, in fire order. Both
 * only make rows due in the outbox: the delivery workers' claim (db_outbox.c, FOR UPDATE SKIP
 * LOCKED) hands each to one worker of one replica, which sends it once with the same webhook-id
 * and records a new attempt. */
#include <microhttpd.h>
#include <stdio.h>
#include <string.h>

#include "db_delivery.h"
#include "handler.h"
#include "http_routes.h"
#include "timefmt.h"

int
handle_delivery_retry(struct request *rq)
{
    char was[DB_DELIVERY_STATUS_MAX];
    struct db *db;
    bool queued;
    int64_t id;
    int ret;

    if (deliveries_id(rq, &id) != 0)
        return http_reply_problem(rq, API_E_DELIVERY_NOT_FOUND, NULL);
    if ((db = handler_db_no_query(rq, &ret)) == NULL)
        return ret;
    enum db_status st = db_delivery_retry(db, rq->tenant_id, id, was, &queued);
    if (st != DB_ONE_RESULT)
        return handler_db_failure(rq, st, API_E_DELIVERY_NOT_FOUND, NULL);
    if (!queued && was[0] == 'p')
        return http_reply_problem(rq, API_E_DELIVERY_PENDING,
                                  "it goes out at its next attempt; retry it once it failed");
    if (!queued && strcmp(was, "skipped") == 0)
        return http_reply_problem(rq, API_E_DELIVERY_NOT_RETRIABLE,
                                  "the participant's preferences skipped it; it is never sent");
    if (!queued)
        return http_reply_problem(
            rq, API_E_DELIVERY_NOT_RETRIABLE,
            "a stream delivery is written with the fire and never sent again");
    return http_reply_json(rq, MHD_HTTP_ACCEPTED, json_pack("{s:s}", "status", "pending"), NULL);
}

int
handle_webhook_recover(struct request *rq)
{
    struct codec_errors errs = {0};
    int64_t since_ms, queued;
    bool disabled;
    json_t *doc;
    struct db *db;
    int ret;

    if ((doc = handler_json_body(rq, &ret)) == NULL)
        return ret;
    enum api_error e = codec_webhook_recover_decode(doc, timefmt_now_ms(), &since_ms, &errs);
    json_decref(doc);
    if (e != API_E_NONE)
        return http_reply_validation(rq, &errs);
    if ((db = handler_db(rq, &ret)) == NULL)
        return ret;
    enum db_status st =
        db_delivery_recover(db, rq->tenant_id, rq->match.args[0], since_ms, &queued, &disabled);
    if (st != DB_ONE_RESULT)
        return handler_db_failure(rq, st, API_E_WEBHOOK_NOT_FOUND, NULL);
    if (disabled)
        return http_reply_problem(rq, API_E_WEBHOOK_DISABLED,
                                  "turn it on first (PATCH with disabled false), then recover");
    return http_reply_json(rq, MHD_HTTP_ACCEPTED, json_pack("{s:I}", "queued", (json_int_t)queued),
                           NULL);
}
