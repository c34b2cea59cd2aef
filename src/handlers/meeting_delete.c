/* meeting_delete.c -- DELETE /v1/meetings/{id}. PostgreSQL first (the truth): the meeting is
 * soft-deleted and its pending reminders cancelled; then the Redis keys, best effort -- a key
 * left behind expires into an event that finds no pending row, and the reconciler never re-arms
 * a cancelled reminder. A browser token deletes only what it organizes: the meeting is read first
 * (its organizer never changes, so the check stays true for the delete). With If-Match, the
 * meeting is locked, its current ETag compared and the delete made in one transaction, as PUT
 * and PATCH do: 412 when another change came first. */
#include <microhttpd.h>
#include <stdlib.h>

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

struct conditional_tx {
    int64_t tenant_id;
    const char *id, *if_match;
    struct reminder_keys gone;
    bool mismatch; /* the ETag did not match: nothing deleted */
};

static enum db_status
conditional_tx_run(struct db *db, void *arg)
{
    struct conditional_tx *t = arg;
    struct meeting m;
    char etag[HTTP_ETAG_MAX], *body = NULL;

    t->gone.n = 0;
    t->mismatch = false;
    meeting_init(&m);
    enum db_status st = db_meeting_get(db, t->tenant_id, t->id, &m, true);
    if (st == DB_ONE_RESULT)
        st = handler_meeting_body_st(db, &m, &body, etag);
    meeting_fini(&m);
    free(body);
    if (st != DB_ONE_RESULT)
        return st;
    if (!http_reply_etag_matches(t->if_match, etag, 0)) {
        t->mismatch = true;
        return DB_NO_RESULTS;
    }
    return db_meeting_delete_tx(db, t->tenant_id, t->id, &t->gone);
}

int
handle_meeting_delete(struct request *rq)
{
    struct conditional_tx t = {.tenant_id = rq->tenant_id};
    struct db *db;
    enum db_status st;
    int ret;

    if (handler_no_query(rq, &ret) != 0 || (t.id = handler_meeting_id(rq, &ret)) == NULL)
        return ret;
    if ((db = http_request_db(rq)) == NULL)
        return http_reply_problem(rq, API_E_DB_UNAVAILABLE, NULL);
    if (may_delete(rq, db, t.id, &ret) != 0)
        return ret;
    t.if_match = http_request_header(rq, MHD_HTTP_HEADER_IF_MATCH);
    if (t.if_match != NULL)
        st = db_tx_run(db, conditional_tx_run, &t);
    else
        st = db_meeting_delete(db, rq->tenant_id, t.id, &t.gone);
    if (st == DB_NO_RESULTS && t.mismatch)
        return http_reply_problem(rq, API_E_PRECONDITION_FAILED,
                                  "If-Match does not match the current ETag");
    if (st != DB_ONE_RESULT)
        return handler_db_problem(rq, st);
    handler_mirror_sync(rq, &t.gone, NULL);
    return http_reply_empty(rq, MHD_HTTP_NO_CONTENT);
}
