/* meetings_list.c -- GET /v1/meetings?from=&to=&limit=&cursor=: one page of the tenant's live
 * meetings ordered by (starts_at, id), keyset-paginated (expand=true: meetings_expand.c). The
 * cursor is opaque to clients: hex of "v1:<starts_at_ms>:<id>" of the last item returned. */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handler.h"
#include "hex.h"
#include "http_routes.h"
#include "meetings_expand.h"
#include "timefmt.h"

#define LIST_LIMIT_DEFAULT 50
#define CURSOR_RAW_MAX 80
#define CURSOR_MAX HEX_ENCODED_LEN(CURSOR_RAW_MAX)

/* expand=true|false, the list's own parameter next to the page's. */
struct expand_arg {
    bool expand; /* expand=true: occurrences of series (meetings_expand.c) */
    int seen;
};

static int
cursor_decode(const char *s, struct db_list_query *q)
{
    char raw[CURSOR_RAW_MAX + 1];
    const char *p = handler_cursor_open(s, raw, CURSOR_RAW_MAX, "v1");
    int64_t starts;

    if (p == NULL || handler_cursor_ms(&p, ':', &starts) != 0 || !meeting_id_valid(p))
        return -1;
    q->has_after = true;
    q->after_starts_at_ms = starts;
    memcpy(q->after_id, p, MEETING_ID_LEN + 1);
    return 0;
}

static void
cursor_encode(const struct meeting *last, char out[CURSOR_MAX + 1])
{
    char raw[CURSOR_RAW_MAX + 1];
    snprintf(raw, sizeof(raw), "v1:%lld:%s", (long long)last->starts_at_ms, last->id);
    hex_encode(raw, strlen(raw), out);
}

static int
take_expand(struct handler_page *p, const char *key, const char *value)
{
    struct expand_arg *e = p->extra_arg;

    if (strcmp(key, "expand") != 0)
        return 0;
    if (e->seen++ != 0) {
        p->bad_why = "must be given at most once";
        return -1;
    }
    if (value != NULL && strcmp(value, "true") == 0)
        e->expand = true;
    else if (value == NULL || strcmp(value, "false") != 0) {
        p->bad_why = "must be true or false";
        return -1;
    }
    return 1;
}

static int
reply_page(struct request *rq, struct db_meeting_list *l)
{
    json_t *items = json_array();
    char cursor[CURSOR_MAX + 1] = "";
    for (size_t i = 0; i < l->n; i++)
        json_array_append_new(items, codec_meeting_encode(&l->m[i]));
    if (l->more && l->n > 0)
        cursor_encode(&l->m[l->n - 1], cursor);
    json_t *page = json_object();
    json_object_set_new(page, "items", items);
    json_object_set_new(page, "next_cursor", cursor[0] ? json_string(cursor) : json_null());
    return http_reply_json(rq, MHD_HTTP_OK, page, NULL);
}

/* "{id,id}" of a token's mtg claim (validated ids: hex digits and dashes only). */
static const char *
mtg_array(const struct principal *who, char *buf)
{
    size_t len = 0;

    buf[len++] = '{';
    for (size_t i = 0; i < who->n_mtg; i++) {
        if (i > 0)
            buf[len++] = ',';
        memcpy(buf + len, who->mtg[i], MEETING_ID_LEN);
        len += MEETING_ID_LEN;
    }
    buf[len++] = '}';
    buf[len] = '\0';
    return buf;
}

int
handle_meetings_list(struct request *rq)
{
    struct expand_arg e = {0};
    struct handler_page page = {
        .from_ms = INT64_MIN,
        .to_ms = INT64_MAX,
        .limit = LIST_LIMIT_DEFAULT,
        .allowed = "is not taken: the parameters are from, to, limit, cursor and expand",
        .extra = take_expand,
        .extra_arg = &e,
    };
    struct db_list_query q = {0};
    struct db_meeting_list l = {0};
    struct db *db;
    int ret;

    if (handler_page_query(rq, &page, &ret) != 0)
        return ret;
    q.from_ms = page.from_ms;
    q.to_ms = page.to_ms;
    q.limit = page.limit;
    if (page.cursor != NULL && (e.expand ? meetings_expand_cursor_decode(page.cursor, &q)
                                         : cursor_decode(page.cursor, &q)) != 0)
        return http_reply_query(rq, "cursor", HANDLER_CURSOR_FORM);
    if ((db = http_request_db(rq)) == NULL)
        return http_reply_problem(rq, API_E_DB_UNAVAILABLE, NULL);
    char mtg[PRINCIPAL_MTG_MAX * (MEETING_ID_LEN + 1) + 3];
    if (rq->who.browser) { /* only what it organizes or takes part in, within its mtg */
        q.viewer = rq->who.sub;
        q.viewer_meetings = rq->who.n_mtg > 0 ? mtg_array(&rq->who, mtg) : NULL;
    }
    if (e.expand)
        return meetings_expand(rq, db, &q);
    enum db_status st = db_meeting_list(db, rq->tenant_id, &q, &l);
    ret = st == DB_ONE_RESULT || st == DB_NO_RESULTS
              ? reply_page(rq, &l)
              : http_reply_problem(rq, API_E_DB_UNAVAILABLE, NULL);
    db_meeting_list_fini(&l);
    return ret;
}
