/* http_request.c -- what a handler asks of its request (http_request.h): a header, a query
 * argument, and the worker thread's database connection, opened on first use and, while
 * PostgreSQL is unreachable, tried again at most every DB_RETRY_BACKOFF_MS. */
#include "http_request.h"

#include <microhttpd.h>

#include "db.h"
#include "log.h"
#include "timefmt.h"

#define DB_RETRY_BACKOFF_MS 1000

struct db *
http_request_db(struct request *rq)
{
    struct http_worker *w = rq->w;
    char err[DB_ERR_MAX];
    if (w->db != NULL)
        return w->db;
    if (timefmt_mono_ms() < w->db_retry_ms)
        return NULL;
    w->db = db_open(w->cfg->database_url, err, sizeof(err));
    if (w->db == NULL) {
        w->db_retry_ms = timefmt_mono_ms() + DB_RETRY_BACKOFF_MS;
        LOG_DEBUG("database unreachable: %s", err); /* the engine's threads log the outage */
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
