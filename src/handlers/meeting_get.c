/* meeting_get.c -- GET /v1/meetings/{id}: 200 with an ETag, or 304 when If-None-Match matches. */
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>

#include "handler.h"
#include "http_routes.h"

int
handle_meeting_get(struct request *rq)
{
    struct meeting m;
    struct db *db;
    const char *id;
    char etag[HTTP_ETAG_MAX];
    char *body = NULL;
    int ret;

    if (handler_no_query(rq, &ret) != 0 || (id = handler_meeting_id(rq, &ret)) == NULL)
        return ret;
    if ((db = http_request_db(rq)) == NULL)
        return http_reply_problem(rq, API_E_DB_UNAVAILABLE, NULL);
    meeting_init(&m);
    enum db_status st = db_meeting_get(db, rq->tenant_id, id, &m, false);
    if (st != DB_ONE_RESULT) {
        ret = handler_db_problem(rq, st);
    } else if (handler_meeting_visible(rq, &m, &ret) != 0) {
        /* replied 404: a browser token sees only meetings it organizes or takes part in */
    } else if (handler_meeting_body(&m, &body, etag) != 0) {
        ret = http_reply_problem(rq, API_E_INTERNAL, NULL);
    } else {
        const char *inm = http_request_header(rq, MHD_HTTP_HEADER_IF_NONE_MATCH);
        struct http_reply_meta meta = {etag, NULL, NULL, NULL};
        if (inm != NULL && http_reply_etag_matches(inm, etag, 1))
            ret = http_reply_not_modified(rq, &meta);
        else
            ret = http_reply_raw(rq, MHD_HTTP_OK, body, strlen(body), NULL, &meta);
    }
    free(body);
    meeting_fini(&m);
    return ret;
}
