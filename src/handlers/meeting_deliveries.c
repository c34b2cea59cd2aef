/* meeting_deliveries.c -- GET /v1/meetings/{id}/deliveries: each notification of the meeting's
 * reminders, one per occurrence, channel and target (a webhook, a participant's push subscription
 * or email, the stream), with its status, attempts and last error. */
#include <microhttpd.h>

#include "db_outbox.h"
#include "handler.h"
#include "http_routes.h"
#include "timefmt.h"

static json_t *
time_or_null(int64_t ms)
{
    char buf[TIMEFMT_BUF];
    return ms ? json_string(timefmt_format(ms, buf)) : json_null();
}

static void
add_row(void *arg, const struct db_delivery *d)
{
    char id[24], rid[24], fire[TIMEFMT_BUF];
    bool pending = d->status[0] == 'p';
    const char *channel = meeting_channel_name(d->channel);

    snprintf(id, sizeof id, "%lld", (long long)d->id);
    snprintf(rid, sizeof rid, "%lld", (long long)d->reminder_id);
    json_array_append_new(
        arg, json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:s, s:i, s:o, s:o, s:o, s:o}", "id", id,
                       "reminder_id", rid, "fire_at", timefmt_format(d->fire_at_ms, fire),
                       "channel", channel ? channel : "unknown", "webhook_id",
                       d->webhook_id[0] ? json_string(d->webhook_id) : json_null(), "recipient",
                       d->recipient ? json_string(d->recipient) : json_null(), "status", d->status,
                       "attempts", d->attempts, "last_error",
                       d->last_error ? json_string(d->last_error) : json_null(), "last_status",
                       d->last_status ? json_integer(d->last_status) : json_null(),
                       "next_attempt_at", time_or_null(pending ? d->next_attempt_at_ms : 0),
                       "delivered_at", time_or_null(d->delivered_at_ms)));
}

int
handle_meeting_deliveries(struct request *rq)
{
    struct db *db;
    const char *id;
    json_t *items;
    int ret;

    if (handler_no_query(rq, &ret) != 0 || (id = handler_meeting_id(rq, &ret)) == NULL)
        return ret;
    if ((db = http_request_db(rq)) == NULL)
        return http_reply_problem(rq, API_E_DB_UNAVAILABLE, NULL);
    items = json_array();
    enum db_status st = db_outbox_deliveries(db, rq->tenant_id, id, add_row, items);
    if (st != DB_ONE_RESULT) {
        json_decref(items);
        return handler_db_problem(rq, st);
    }
    return http_reply_json(rq, MHD_HTTP_OK, json_pack("{s:o}", "items", items), NULL);
}
