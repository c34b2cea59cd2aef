/* meeting_deliveries.c -- GET /v1/meetings/{id}/deliveries?limit=&cursor=: each notification of
 * the meeting's reminders, one per occurrence, channel and target (a webhook, a participant's push
 * subscription or email, the stream), with its status, attempts and last error, oldest first;
 * keyset-paginated by the outbox id (the cursor is hex of "d1:<id>" of the last item), at most
 * limit of them and within TOCSIN_PAGE_BYTES_MAX (the page of deliveries.c). */
#include <microhttpd.h>

#include "db_outbox.h"
#include "handler.h"
#include "http_routes.h"

#define PAGE_DEFAULT 50

int
handle_meeting_deliveries(struct request *rq)
{
    struct handler_page a = {
        .from_ms = INT64_MIN,
        .to_ms = INT64_MAX,
        .limit = PAGE_DEFAULT,
        .allowed = "is not taken: the parameters are limit and cursor",
        .no_range = true,
    };
    struct deliveries_page *p;
    struct db *db;
    const char *id;
    int64_t after = 0;
    int ret;

    if ((id = handler_meeting_id(rq, &ret)) == NULL || handler_page_query(rq, &a, &ret) != 0)
        return ret;
    if (a.cursor != NULL && deliveries_cursor(a.cursor, "d1", &after) != 0)
        return http_reply_query(rq, "cursor", HANDLER_CURSOR_FORM);
    if ((db = http_request_db(rq)) == NULL)
        return http_reply_problem(rq, API_E_DB_UNAVAILABLE, NULL);
    if ((p = deliveries_page_new("d1", false)) == NULL)
        return http_reply_problem(rq, API_E_INTERNAL, NULL);
    struct db_delivery_page page = {after, a.limit, false};
    enum db_status st = db_outbox_deliveries(db, rq->tenant_id, id, &page, deliveries_page_add, p);
    return deliveries_page_reply(rq, p, st, page.more);
}
