/* meetings_batch.c -- POST /v1/meetings/batch: the body's shape checked as a whole (400, 413),
 * then its items written as one batch (meeting_batch.c), their Redis keys armed in one pipeline
 * before the answer, and one result per item in input order. A database failure answers 503
 * for the whole batch, with nothing written. API keys only (http_routes.c). */
#include <microhttpd.h>
#include <stdio.h>

#include "engine.h"
#include "handler.h"
#include "http_routes.h"
#include "log.h"
#include "meeting_batch.h"

#define BATCH_DETAIL_MAX 128
_Static_assert(HTTP_BULK_BODY_MAX >= MEETING_BATCH_MAX * 1024, "a batch of 1 KiB meetings fits");

static int
reply_results(struct request *rq, const struct meeting_batch *b)
{
    json_t *list = json_array();

    for (size_t i = 0; list != NULL && i < meeting_batch_count(b); i++)
        if (json_array_append_new(list, meeting_batch_result(b, i)) != 0) {
            json_decref(list);
            list = NULL;
        }
    if (list == NULL)
        return http_reply_problem(rq, API_E_INTERNAL, NULL);
    return http_reply_json(rq, MHD_HTTP_OK, json_pack("{s:o}", "items", list), NULL);
}

/* The body's shape, before any item: {"items": [1..MEETING_BATCH_MAX values]}, nothing else.
 * NULL after replying 400 (not that shape) or 413 (too many items). */
static json_t *
items_of(struct request *rq, json_t *doc, int *ret)
{
    char detail[BATCH_DETAIL_MAX];
    json_t *items = json_is_object(doc) ? json_object_get(doc, "items") : NULL;

    if (!json_is_array(items) || json_object_size(doc) != 1 || json_array_size(items) == 0) {
        struct codec_errors errs = {.n = 1};
        snprintf(errs.e[0].field, sizeof errs.e[0].field, "%s", items != NULL ? "items" : "");
        snprintf(errs.e[0].message, sizeof errs.e[0].message,
                 "the body must be {\"items\": [...]} with 1..%d meetings and nothing else",
                 MEETING_BATCH_MAX);
        *ret = http_reply_validation(rq, &errs);
        return NULL;
    }
    if (json_array_size(items) > MEETING_BATCH_MAX) {
        snprintf(detail, sizeof detail, "a batch holds at most %d meetings, this one %zu",
                 MEETING_BATCH_MAX, json_array_size(items));
        *ret = http_reply_problem(rq, API_E_BATCH_TOO_LARGE, detail);
        return NULL;
    }
    return items;
}

/* The items written, armed and answered: 200 with the results, or a 5xx with nothing written. */
static int
write_batch(struct request *rq, struct db *db, json_t *items)
{
    struct meeting_batch *b = meeting_batch_new(rq->cfg, rq->tenant_id, items);
    int ret;

    if (b == NULL)
        return http_reply_problem(rq, API_E_INTERNAL, NULL);
    if (meeting_batch_write(b, db) != DB_ONE_RESULT) {
        ret = http_reply_problem(rq, API_E_DB_UNAVAILABLE, NULL);
    } else {
        if (meeting_batch_mirror(b, rq->w->mi, rq->w->engine) != 0) {
            LOG_WARN("redis: a batch's reminder keys left for the reconciler");
            engine_mirror_failed(rq->w->engine);
        }
        ret = reply_results(rq, b);
    }
    meeting_batch_free(b);
    return ret;
}

int
handle_meetings_batch(struct request *rq)
{
    json_t *doc, *items;
    struct db *db;
    int ret;

    if ((doc = handler_json_body(rq, &ret)) == NULL)
        return ret;
    if ((items = items_of(rq, doc, &ret)) != NULL && (db = handler_db(rq, &ret)) != NULL)
        ret = write_batch(rq, db, items);
    json_decref(doc);
    return ret;
}
