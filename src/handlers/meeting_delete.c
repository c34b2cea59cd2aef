/* meeting_delete.c -- DELETE /v1/meetings/{id}. PostgreSQL first (the truth): the meeting is
 * soft-deleted and its pending reminders cancelled; then the Redis keys, best effort -- a key
 * left behind expires into an event that finds no pending row, and the reconciler never re-arms
 * a cancelled reminder. */
#include <microhttpd.h>

#include "handler.h"
#include "http_routes.h"

int
handle_meeting_delete(struct request *rq)
{
    struct reminder_keys gone = {0};
    struct db *db;
    const char *id;
    int ret;

    if (handler_no_query(rq, &ret) != 0 || (id = handler_meeting_id(rq, &ret)) == NULL)
        return ret;
    if ((db = http_db(rq)) == NULL)
        return http_reply_problem(rq, API_E_DB_UNAVAILABLE, NULL);
    enum db_status st = db_meeting_delete(db, rq->tenant_id, id, &gone);
    if (st != DB_ONE_RESULT)
        return handler_db_problem(rq, st);
    handler_mirror_sync(rq, &gone, NULL);
    return http_reply_empty(rq, MHD_HTTP_NO_CONTENT);
}
