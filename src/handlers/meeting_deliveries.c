/* meeting_deliveries.c -- GET /v1/meetings/{id}/deliveries?limit=&cursor=: each notification of
 * the meeting's reminders, one per occurrence, channel and target (a webhook, a participant's push
 * subscription or email, the stream), with its status, attempts and last error, oldest first;
 * keyset-paginated by the outbox id (the cursor is hex of "d1:<id>" of the last item), at most
 * limit of them and within TOCSIN_PAGE_BYTES_MAX (http_page.h). */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_page.h"
#include "db_outbox.h"
#include "handler.h"
#include "hex.h"
#include "http_page.h"
#include "http_routes.h"
#include "timefmt.h"

#define PAGE_DEFAULT 50
#define CURSOR_RAW_MAX 32
#define CURSOR_MAX HEX_ENCODED_LEN(CURSOR_RAW_MAX)

/* The page in flight: the rows' JSON one after another (the database's rows are gone once read),
 * item i from end[i - 1] to end[i]. */
struct deliveries_page {
    struct strbuf texts;
    size_t n;
    size_t end[DB_LIST_LIMIT_MAX];
    int64_t ids[DB_LIST_LIMIT_MAX];
    struct db_delivery_page db;
};

static int
cursor_decode(const char *s, int64_t *after)
{
    char raw[CURSOR_RAW_MAX + 1];
    const char *p = handler_cursor_open(s, raw, CURSOR_RAW_MAX, "d1");

    return p != NULL ? handler_cursor_id(&p, '\0', after) : -1;
}

static json_t *
time_or_null(int64_t ms)
{
    char buf[TIMEFMT_BUF];
    return ms ? json_string(timefmt_format(ms, buf)) : json_null();
}

static void
add_row(void *arg, const struct db_delivery *d)
{
    struct deliveries_page *p = arg;
    char id[24], rid[24], fire[TIMEFMT_BUF];
    bool pending = d->status[0] == 'p';
    const char *channel = meeting_channel_name(d->channel);

    snprintf(id, sizeof id, "%lld", (long long)d->id);
    snprintf(rid, sizeof rid, "%lld", (long long)d->reminder_id);
    json_t *v = json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:s, s:i, s:o, s:o, s:o, s:o}", "id", id,
                          "reminder_id", rid, "fire_at", timefmt_format(d->fire_at_ms, fire),
                          "channel", channel ? channel : "unknown", "webhook_id",
                          d->webhook_id[0] ? json_string(d->webhook_id) : json_null(), "recipient",
                          d->recipient ? json_string(d->recipient) : json_null(), "status",
                          d->status, "attempts", d->attempts, "last_error",
                          d->last_error ? json_string(d->last_error) : json_null(), "last_status",
                          d->last_status ? json_integer(d->last_status) : json_null(),
                          "next_attempt_at", time_or_null(pending ? d->next_attempt_at_ms : 0),
                          "delivered_at", time_or_null(d->delivered_at_ms));
    if (p->n < DB_LIST_LIMIT_MAX && codec_dump_append(v, &p->texts) == 0) {
        p->ids[p->n] = d->id;
        p->end[p->n++] = p->texts.len;
    }
    json_decref(v);
}

static int
deliveries_item(void *arg, size_t i, struct strbuf *out)
{
    struct deliveries_page *p = arg;
    size_t from = i > 0 ? p->end[i - 1] : 0;

    strbuf_put(out, p->texts.p + from, p->end[i] - from);
    return out->bad ? -1 : 0;
}

static json_t *
deliveries_tail(void *arg, size_t sent)
{
    struct deliveries_page *p = arg;
    char raw[CURSOR_RAW_MAX + 1], cursor[CURSOR_MAX + 1] = "";

    if (sent > 0 && (sent < p->n || p->db.more)) {
        snprintf(raw, sizeof raw, "d1:%lld", (long long)p->ids[sent - 1]);
        hex_encode(raw, strlen(raw), cursor);
    }
    return handler_page_tail(cursor);
}

static void
deliveries_free(void *arg)
{
    struct deliveries_page *p = arg;

    strbuf_fini(&p->texts);
    free(p);
}

int
handle_meeting_deliveries(struct request *rq)
{
    struct handler_page a = {
        .from_ms = INT64_MIN,
        .to_ms = INT64_MAX,
        .limit = PAGE_DEFAULT,
        .allowed = "is not taken: the parameters are limit and cursor",
        .no_range = true,
    };
    struct deliveries_page *p;
    struct db *db;
    const char *id;
    int64_t after = 0;
    int ret;

    if ((id = handler_meeting_id(rq, &ret)) == NULL || handler_page_query(rq, &a, &ret) != 0)
        return ret;
    if (a.cursor != NULL && cursor_decode(a.cursor, &after) != 0)
        return http_reply_query(rq, "cursor", HANDLER_CURSOR_FORM);
    if ((db = http_request_db(rq)) == NULL)
        return http_reply_problem(rq, API_E_DB_UNAVAILABLE, NULL);
    if ((p = calloc(1, sizeof *p)) == NULL)
        return http_reply_problem(rq, API_E_INTERNAL, NULL);
    p->db = (struct db_delivery_page){after, a.limit, false};
    enum db_status st = db_outbox_deliveries(db, rq->tenant_id, id, &p->db, add_row, p);
    if (st == DB_ONE_RESULT && p->texts.bad) {
        deliveries_free(p);
        return http_reply_problem(rq, API_E_INTERNAL, NULL);
    }
    if (st != DB_ONE_RESULT) {
        deliveries_free(p);
        return handler_db_problem(rq, st);
    }
    return http_page_reply(
        rq, &(struct http_page_source){p, p->n, deliveries_item, deliveries_tail, deliveries_free});
}
