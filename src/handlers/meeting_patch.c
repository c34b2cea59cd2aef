/* meeting_patch.c -- PATCH /v1/meetings/{id} with an RFC 7396 merge patch, applied to the
 * meeting's writable fields and validated as a whole, like a PUT of the result. */
#include "handler.h"
#include "http_routes.h"

int
handle_meeting_patch(struct request *rq)
{
    json_t *doc;
    int ret;

    if (handler_no_query(rq, &ret) != 0 || handler_meeting_id(rq, &ret) == NULL ||
        handler_require_type(rq, "application/merge-patch+json", &ret) != 0 ||
        (doc = handler_parse_body(rq, &ret)) == NULL)
        return ret;
    ret = handler_meeting_replace(rq, doc, true);
    json_decref(doc);
    return ret;
}
