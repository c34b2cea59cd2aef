/* meetings_list.c -- GET /v1/meetings?from=&to=&q=&limit=&cursor=: one page of the tenant's live
 * meetings ordered by (starts_at, id), those whose title holds q (case-insensitive) when it is
 * given, keyset-paginated (expand=true: meetings_expand.c, without q), at most
 * limit of them and within TOCSIN_PAGE_BYTES_MAX (http_page.h). The cursor is opaque to clients:
 * hex of "v1:<starts_at_ms>:<id>" of the last item returned. */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_page.h"
#include "handler.h"
#include "hex.h"
#include "http_page.h"
#include "http_routes.h"
#include "meetings_expand.h"
#include "timefmt.h"

#define LIST_LIMIT_DEFAULT 50
#define CURSOR_RAW_MAX 80
#define CURSOR_MAX HEX_ENCODED_LEN(CURSOR_RAW_MAX)

/* expand=true|false and q, the list's own parameters next to the page's. */
struct expand_arg {
    bool expand; /* expand=true: occurrences of series (meetings_expand.c) */
    int seen;
    const char *q; /* a substring of the title, or NULL */
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

/* What the cursor after an item needs of it. */
struct list_key {
    int64_t starts_at_ms;
    char id[MEETING_ID_LEN + 1];
};

static void
cursor_encode(const struct list_key *last, char out[CURSOR_MAX + 1])
{
    char raw[CURSOR_RAW_MAX + 1];
    snprintf(raw, sizeof(raw), "v1:%lld:%s", (long long)last->starts_at_ms, last->id);
    hex_encode(raw, strlen(raw), out);
}

static int
take_expand(struct handler_page *p, const char *key, const char *value)
{
    struct expand_arg *e = p->extra_arg;

    if (strcmp(key, "q") == 0) {
        p->bad_why = e->q != NULL ? "must be given at most once" : HANDLER_SEARCH_Q_FORM;
        if (e->q != NULL || !handler_search_q_valid(value))
            return -1;
        e->q = value;
        return 1;
    }
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

/* The page in flight (http_page.h): the meetings read, each finalised once encoded, so that a
 * page read slowly holds less and less; the cursor needs only the keys. */
struct list_page {
    struct db_meeting_list l;
    struct list_key keys[DB_LIST_LIMIT_MAX];
};

static int
list_item(void *arg, size_t i, struct strbuf *out)
{
    struct list_page *p = arg;
    struct meeting *m = &p->l.m[i];
    int rc = codec_meeting_append(m, out);

    p->keys[i].starts_at_ms = m->starts_at_ms;
    memcpy(p->keys[i].id, m->id, sizeof m->id);
    meeting_fini(m);
    return rc;
}

static json_t *
list_tail(void *arg, size_t sent)
{
    struct list_page *p = arg;
    char cursor[CURSOR_MAX + 1] = "";

    if (sent > 0 && (sent < p->l.n || p->l.more))
        cursor_encode(&p->keys[sent - 1], cursor);
    return handler_page_tail(cursor);
}

static void
list_free(void *arg)
{
    struct list_page *p = arg;

    db_meeting_list_fini(&p->l);
    free(p);
}

static int
list_page(struct request *rq, struct db *db, const struct db_list_query *q)
{
    struct list_page *p = calloc(1, sizeof *p);

    if (p == NULL)
        return http_reply_problem(rq, API_E_INTERNAL, NULL);
    enum db_status st = db_meeting_list(db, rq->tenant_id, q, &p->l);
    if (st != DB_ONE_RESULT && st != DB_NO_RESULTS) {
        list_free(p);
        return http_reply_problem(rq, API_E_DB_UNAVAILABLE, NULL);
    }
    return http_page_reply(rq,
                           &(struct http_page_source){p, p->l.n, list_item, list_tail, list_free});
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
        .allowed = "is not taken: the parameters are from, to, q, limit, cursor and expand",
        .extra = take_expand,
        .extra_arg = &e,
    };
    struct db_list_query q = {.bytes_max = (size_t)rq->cfg->page_bytes_max};
    struct db *db;
    int ret;

    if (handler_page_query(rq, &page, &ret) != 0)
        return ret;
    q.from_ms = page.from_ms;
    q.to_ms = page.to_ms;
    q.limit = page.limit;
    q.title_q = e.q;
    if (e.expand && e.q != NULL) /* a calendar range shows all; a search lists meetings */
        return http_reply_query(rq, "q", "is not taken with expand=true");
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
    return e.expand ? meetings_expand(rq, db, &q) : list_page(rq, db, &q);
}
