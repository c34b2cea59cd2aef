/* meeting_delete.c -- DELETE /v1/meetings/{id}. PostgreSQL first (the truth): the meeting is
 * soft-deleted and its pending reminders cancelled; then the Redis keys, best effort -- a key
 * left behind expires into an event that finds no pending row, and the reconciler never re-arms
 * a cancelled reminder. A browser token deletes only what it organizes: the meeting is read first
 * (its organizer never changes, so the check stays true for the delete). */
#include <microhttpd.h>

#include "handler.h"
#include "http_routes.h"

/* 0 when rq's browser token may delete meeting id (API keys always may); else replies. */
static int
may_delete(struct request *rq, struct db *db, const char *id, int *ret)
{
    struct meeting m;
    int rc = 0;

    if (!rq->who.browser)
        return 0;
    meeting_init(&m);
    enum db_status st = db_meeting_get(db, rq->tenant_id, id, &m, false);
    if (st != DB_ONE_RESULT) {
        *ret = handler_db_problem(rq, st);
        rc = -1;
    } else if (handler_meeting_visible(rq, &m, ret) != 0 ||
               handler_meeting_organized(rq, &m, ret) != 0) {
        rc = -1;
    }
    meeting_fini(&m);
    return rc;
}

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
    if (may_delete(rq, db, id, &ret) != 0)
        return ret;
    enum db_status st = db_meeting_delete(db, rq->tenant_id, id, &gone);
    if (st != DB_ONE_RESULT)
        return handler_db_problem(rq, st);
    handler_mirror_sync(rq, &gone, NULL);
    return http_reply_empty(rq, MHD_HTTP_NO_CONTENT);
}
