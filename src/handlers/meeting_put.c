/* meeting_put.c -- PUT /v1/meetings/{id}: full replacement of the writable fields. */
#include "handler.h"
#include "http_routes.h"

int
handle_meeting_put(struct request *rq)
{
    json_t *doc;
    int ret;

    if (handler_no_query(rq, &ret) != 0 || handler_meeting_id(rq, &ret) == NULL ||
        handler_require_type(rq, "application/json", &ret) != 0 ||
        (doc = handler_parse_body(rq, &ret)) == NULL)
        return ret;
    ret = handler_meeting_replace(rq, doc, false);
    json_decref(doc);
    return ret;
}
