/* deliveries.c -- GET /v1/deliveries: the tenant's deliveries on every channel, searched by
 * status, channel, webhook, meeting, fire time and q (a case-insensitive substring of the
 * meeting's title, the recipient or the last error), newest first, each with its meeting's id and
 * title; keyset-paginated by the outbox id (the cursor is hex of "s1:<id>" of the last item).
 * GET /v1/deliveries/{id}: one of them with its kept attempts (time, outcome, HTTP status,
 * duration, error, the replica that sent it). The page of delivery items, which GET
 * /v1/meetings/{id}/deliveries shares, lives here too: rows encoded as they are read, sent within
 * TOCSIN_PAGE_BYTES_MAX (http_page.h). */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_page.h"
#include "db_delivery.h"
#include "handler.h"
#include "hex.h"
#include "http_page.h"
#include "http_routes.h"
#include "timefmt.h"

#define PAGE_DEFAULT 50
#define CURSOR_RAW_MAX 32
#define CURSOR_MAX HEX_ENCODED_LEN(CURSOR_RAW_MAX)
#define CURSOR_TAG_MAX 4

/* The page in flight: the rows' JSON one after another (the database's rows are gone once read),
 * item i from end[i - 1] to end[i]. */
struct deliveries_page {
    struct strbuf texts;
    size_t n;
    size_t end[DB_LIST_LIMIT_MAX];
    int64_t ids[DB_LIST_LIMIT_MAX];
    char tag[CURSOR_TAG_MAX + 1];
    bool with_meeting, more;
};

static json_t *
time_or_null(int64_t ms)
{
    char buf[TIMEFMT_BUF];
    return ms ? json_string(timefmt_format(ms, buf)) : json_null();
}

static json_t *
text_or_null(const char *s)
{
    return s != NULL ? json_string(s) : json_null();
}

json_t *
deliveries_json(const struct db_delivery *d, bool with_meeting)
{
    char id[24], rid[24], fire[TIMEFMT_BUF];
    bool pending = strcmp(d->status, "pending") == 0;
    const char *channel = meeting_channel_name(d->channel);

    snprintf(id, sizeof id, "%lld", (long long)d->id);
    snprintf(rid, sizeof rid, "%lld", (long long)d->reminder_id);
    json_t *v = json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:s, s:i, s:o, s:o, s:o, s:o}", "id", id,
                          "reminder_id", rid, "fire_at", timefmt_format(d->fire_at_ms, fire),
                          "channel", channel ? channel : "unknown", "webhook_id",
                          text_or_null(d->webhook_id[0] ? d->webhook_id : NULL), "recipient",
                          text_or_null(d->recipient), "status", d->status, "attempts", d->attempts,
                          "last_error", text_or_null(d->last_error), "last_status",
                          d->last_status ? json_integer(d->last_status) : json_null(),
                          "next_attempt_at", time_or_null(pending ? d->next_attempt_at_ms : 0),
                          "delivered_at", time_or_null(d->delivered_at_ms));
    if (v != NULL && with_meeting &&
        (json_object_set_new(v, "meeting_id", json_string(d->meeting_id)) != 0 ||
         json_object_set_new(v, "meeting_title", text_or_null(d->meeting_title)) != 0)) {
        json_decref(v);
        return NULL;
    }
    return v;
}

struct deliveries_page *
deliveries_page_new(const char *tag, bool with_meeting)
{
    struct deliveries_page *p = calloc(1, sizeof *p);

    if (p != NULL) {
        snprintf(p->tag, sizeof p->tag, "%s", tag);
        p->with_meeting = with_meeting;
    }
    return p;
}

void
deliveries_page_add(void *arg, const struct db_delivery *d)
{
    struct deliveries_page *p = arg;
    json_t *v = deliveries_json(d, p->with_meeting);

    if (v == NULL)
        p->texts.bad = true;
    else if (p->n < DB_LIST_LIMIT_MAX && codec_dump_append(v, &p->texts) == 0) {
        p->ids[p->n] = d->id;
        p->end[p->n++] = p->texts.len;
    }
    json_decref(v);
}

static int
page_item(void *arg, size_t i, struct strbuf *out)
{
    struct deliveries_page *p = arg;
    size_t from = i > 0 ? p->end[i - 1] : 0;

    strbuf_put(out, p->texts.p + from, p->end[i] - from);
    return out->bad ? -1 : 0;
}

static json_t *
page_tail(void *arg, size_t sent)
{
    struct deliveries_page *p = arg;
    char raw[CURSOR_RAW_MAX + 1], cursor[CURSOR_MAX + 1] = "";

    if (sent > 0 && (sent < p->n || p->more)) {
        snprintf(raw, sizeof raw, "%s:%lld", p->tag, (long long)p->ids[sent - 1]);
        hex_encode(raw, strlen(raw), cursor);
    }
    return handler_page_tail(cursor);
}

void
deliveries_page_free(void *arg)
{
    struct deliveries_page *p = arg;

    if (p == NULL)
        return;
    strbuf_fini(&p->texts);
    free(p);
}

int
deliveries_page_reply(struct request *rq, struct deliveries_page *p_steal, enum db_status st,
                      bool more)
{
    if (st == DB_ONE_RESULT && p_steal->texts.bad) {
        deliveries_page_free(p_steal);
        return http_reply_problem(rq, API_E_INTERNAL, NULL);
    }
    if (st != DB_ONE_RESULT) {
        deliveries_page_free(p_steal);
        return handler_db_problem(rq, st);
    }
    p_steal->more = more;
    return http_page_reply(rq, &(struct http_page_source){p_steal, p_steal->n, page_item, page_tail,
                                                          deliveries_page_free});
}

int
deliveries_cursor(const char *s, const char *tag, int64_t *id)
{
    char raw[CURSOR_RAW_MAX + 1];
    const char *p = handler_cursor_open(s, raw, CURSOR_RAW_MAX, tag);

    return p != NULL ? handler_cursor_id(&p, '\0', id) : -1;
}

/* ---- GET /v1/deliveries ---- */

static const char *const statuses[] = {"pending", "delivered", "failed", "skipped"};
static const char *const channels[] = {"webhook", "stream", "push", "email"};

/* value when it is one of names[0..n), else NULL. */
static const char *
one_of(const char *value, const char *const *names, size_t n)
{
    for (size_t i = 0; value != NULL && i < n; i++)
        if (strcmp(value, names[i]) == 0)
            return names[i];
    return NULL;
}

/* Each parameter at most once: a second one is a client's mistake, not a wider search. */
static int
once(struct handler_page *p, const char **slot, const char *value, const char *why)
{
    if (*slot != NULL) {
        p->bad_why = "must be given at most once";
        return -1;
    }
    *slot = value;
    p->bad_why = why;
    return value != NULL ? 1 : -1;
}

static int
take_filter(struct handler_page *p, const char *key, const char *value)
{
    struct db_delivery_query *q = p->extra_arg;

    if (strcmp(key, "status") == 0)
        return once(p, &q->status, one_of(value, statuses, 4),
                    "must be one of pending, delivered, failed, skipped");
    if (strcmp(key, "channel") == 0)
        return once(p, &q->channel, one_of(value, channels, 4),
                    "must be one of webhook, stream, push, email");
    if (strcmp(key, "webhook_id") == 0 || strcmp(key, "meeting_id") == 0) {
        const char **slot = key[0] == 'w' ? &q->webhook_id : &q->meeting_id;
        return once(p, slot, value != NULL && meeting_id_valid(value) ? value : NULL,
                    "must be a UUID in lower case");
    }
    if (strcmp(key, "q") == 0)
        return once(p, &q->q, handler_search_q_valid(value) ? value : NULL, HANDLER_SEARCH_Q_FORM);
    return 0;
}

int
handle_deliveries_list(struct request *rq)
{
    struct db_delivery_query q = {.from_ms = INT64_MIN, .to_ms = INT64_MAX, .before_id = INT64_MAX};
    struct handler_page a = {
        .from_ms = INT64_MIN,
        .to_ms = INT64_MAX,
        .limit = PAGE_DEFAULT,
        .allowed = "is not taken: the parameters are status, channel, webhook_id, meeting_id, "
                   "from, to, q, limit and cursor",
        .extra = take_filter,
        .extra_arg = &q,
    };
    struct deliveries_page *p;
    struct db *db;
    bool more;
    int ret;

    if (handler_page_query(rq, &a, &ret) != 0)
        return ret;
    if (a.cursor != NULL && deliveries_cursor(a.cursor, "s1", &q.before_id) != 0)
        return http_reply_query(rq, "cursor", HANDLER_CURSOR_FORM);
    q.from_ms = a.from_ms;
    q.to_ms = a.to_ms;
    q.limit = a.limit;
    if ((db = handler_db(rq, &ret)) == NULL)
        return ret;
    if ((p = deliveries_page_new("s1", true)) == NULL)
        return http_reply_problem(rq, API_E_INTERNAL, NULL);
    enum db_status st = db_delivery_search(db, rq->tenant_id, &q, deliveries_page_add, p, &more);
    return deliveries_page_reply(rq, p, st, more);
}

/* ---- GET /v1/deliveries/{id} ---- */

/* The delivery and its attempts as they are read. */
struct detail {
    json_t *v, *attempts;
};

static void
detail_row(void *arg, const struct db_delivery *d)
{
    struct detail *x = arg;

    x->v = deliveries_json(d, true);
}

static void
detail_attempt(void *arg, const struct db_delivery_attempt *a)
{
    struct detail *x = arg;
    char at[TIMEFMT_BUF];
    json_t *v = json_pack("{s:i, s:s, s:s, s:o, s:I, s:o, s:s}", "n", a->n, "at",
                          timefmt_format(a->at_ms, at), "status", a->outcome, "http_status",
                          a->http_status ? json_integer(a->http_status) : json_null(),
                          "duration_ms", (json_int_t)a->duration_ms, "error",
                          text_or_null(a->error), "instance", a->instance);

    if (v == NULL || json_array_append_new(x->attempts, v) != 0)
        x->attempts = NULL; /* out of memory: the reply is a 500 (the array is freed below) */
}

/* The {id} path argument: a delivery id (digits, 1..INT64_MAX), else -1. */
int
deliveries_id(struct request *rq, int64_t *id)
{
    const char *p = rq->match.args[0];

    return handler_cursor_id(&p, '\0', id) == 0 && *id > 0 ? 0 : -1;
}

int
handle_delivery_get(struct request *rq)
{
    struct detail x = {NULL, json_array()};
    json_t *attempts = x.attempts;
    struct db *db;
    int64_t id;
    int ret;

    if (deliveries_id(rq, &id) != 0) {
        json_decref(attempts);
        return http_reply_problem(rq, API_E_DELIVERY_NOT_FOUND, NULL);
    }
    if ((db = handler_db_no_query(rq, &ret)) == NULL) {
        json_decref(attempts);
        return ret;
    }
    enum db_status st = db_delivery_get(db, rq->tenant_id, id, detail_row, detail_attempt, &x);
    if (st != DB_ONE_RESULT) {
        json_decref(attempts);
        return handler_db_failure(rq, st, API_E_DELIVERY_NOT_FOUND, NULL);
    }
    /* attempts is the count in a list's item; here the attempts themselves, and the count
     * beside them (only the newest DB_OUTBOX_ATTEMPTS_KEPT are kept). */
    json_t *count = x.v != NULL ? json_object_get(x.v, "attempts") : NULL;
    if (x.attempts == NULL || count == NULL || json_object_set(x.v, "attempt_count", count) != 0 ||
        json_object_set(x.v, "attempts", attempts) != 0) {
        json_decref(attempts);
        json_decref(x.v);
        return http_reply_problem(rq, API_E_INTERNAL, NULL);
    }
    json_decref(attempts);
    return http_reply_json(rq, MHD_HTTP_OK, x.v, NULL);
}
