/* stats.c -- GET /v1/stats?window=1h|24h: the tenant's pending deliveries, reminders due in the
 * next hour, and the window's fires, outcomes and lateness, overall, per channel and in buckets
 * (12 of 5 minutes for 1h, 24 of an hour for 24h). The document is built by PostgreSQL
 * (db_stats.c) and sent as it comes. */
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>

#include "db_stats.h"
#include "handler.h"
#include "http_routes.h"

#define STATS_HOUR_S 3600
#define STATS_BUCKET_1H_S 300
#define STATS_WINDOW_WHY "must be 1h or 24h"

struct stats_query {
    const char *bad_key, *why;
    int window_s, seen;
};

static enum MHD_Result
take_arg(void *arg, enum MHD_ValueKind kind, const char *key, const char *value)
{
    struct stats_query *q = arg;

    (void)kind;
    if (strcmp(key, "window") != 0)
        q->why = "is not taken: the only parameter is window";
    else if (q->seen++ > 0)
        q->why = "must be given at most once";
    else if (value != NULL && strcmp(value, "1h") == 0)
        q->window_s = STATS_HOUR_S;
    else if (value != NULL && strcmp(value, "24h") == 0)
        q->window_s = DB_STATS_WINDOW_MAX_S;
    else
        q->why = STATS_WINDOW_WHY;
    if (q->why == NULL)
        return MHD_YES;
    q->bad_key = key;
    return MHD_NO;
}

int
handle_stats(struct request *rq)
{
    struct stats_query q = {.window_s = STATS_HOUR_S};
    struct db *db;
    char *json;
    int ret;

    MHD_get_connection_values(rq->conn, MHD_GET_ARGUMENT_KIND, take_arg, &q);
    if (q.bad_key != NULL)
        return http_reply_query(rq, q.bad_key, q.why);
    if ((db = handler_db(rq, &ret)) == NULL)
        return ret;
    int bucket_s = q.window_s == STATS_HOUR_S ? STATS_BUCKET_1H_S : STATS_HOUR_S;
    enum db_status st = db_stats(db, rq->tenant_id, q.window_s, bucket_s, &json);
    if (st != DB_ONE_RESULT)
        return handler_db_problem(rq, st);
    ret = http_reply_raw(rq, MHD_HTTP_OK, json, strlen(json), NULL, NULL);
    free(json);
    return ret;
}
