/* http_request.c -- what a handler asks of its request (http_request.h): a header, a query
 * argument, and the worker thread's database connection, opened on first use and, while
 * PostgreSQL is unreachable, tried again at most every DB_RECONNECT_WAIT_MS. */
#include "http_request.h"

#include <microhttpd.h>

#include "db.h"
#include "log.h"
#include "timefmt.h"

struct db *
http_request_db(struct request *rq)
{
    struct http_worker *w = rq->w;
    if (w->db != NULL)
        return w->db;
    if (timefmt_mono_ms() < w->db_retry_ms)
        return NULL;
    w->db = db_open(w->cfg->database_url, w->db_open_err, sizeof(w->db_open_err));
    if (w->db == NULL) {
        w->db_retry_ms = timefmt_mono_ms() + DB_RECONNECT_WAIT_MS;
        /* the engine's threads log the outage */
        LOG_DEBUG("database unreachable: %s", w->db_open_err);
    }
    return w->db;
}

const char *
http_request_header(struct request *rq, const char *name)
{
    return MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, name);
}

const char *
http_request_query(struct request *rq, const char *name)
{
    return MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, name);
}
