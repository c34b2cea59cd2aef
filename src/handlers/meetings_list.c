/* meetings_list.c -- GET /v1/meetings?from=&to=&limit=&cursor=: one page of the tenant's live
 * meetings ordered by (starts_at, id), keyset-paginated. The cursor is opaque to clients: hex of
 * "v1:<starts_at_ms>:<id>" of the last item returned. */
#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handler.h"
#include "hex.h"
#include "http_routes.h"
#include "timefmt.h"

#define LIST_LIMIT_DEFAULT 50
#define CURSOR_RAW_MAX 80
#define CURSOR_MAX HEX_ENCODED_LEN(CURSOR_RAW_MAX)

struct list_args {
    struct db_list_query q;
    const char *bad;     /* the first offending parameter, for the problem detail */
    const char *bad_why; /* and the form it needs */
    int seen_from, seen_to, seen_limit, seen_cursor;
};

#define TIME_FORM "must be an RFC 3339 date-time with an offset, e.g. 2030-01-14T09:00:00Z"

static int
cursor_decode(const char *s, struct db_list_query *q)
{
    char raw[CURSOR_RAW_MAX + 1], *end;
    size_t n = strlen(s), len;
    long long ms;

    if (n == 0 || hex_decode(s, n, (uint8_t *)raw, CURSOR_RAW_MAX, &len) != 0)
        return -1;
    raw[len] = '\0';
    if (strncmp(raw, "v1:", 3) != 0)
        return -1;
    /* strtoll, not sscanf: a number past int64 is refused, not undefined behaviour. */
    errno = 0;
    ms = strtoll(raw + 3, &end, 10);
    if (errno != 0 || end == raw + 3 || *end != ':' || !meeting_id_valid(end + 1))
        return -1;
    q->has_after = true;
    q->after_starts_at_ms = ms;
    memcpy(q->after_id, end + 1, MEETING_ID_LEN + 1);
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
parse_time_arg(const char *v, int64_t *out)
{
    return v == NULL ? -1 : timefmt_parse(v, strlen(v), out);
}

static enum MHD_Result
take_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    struct list_args *a = cls;
    int ok, once = 1;
    char *end = NULL;

    if (strcmp(key, "from") == 0) {
        once = a->seen_from++ == 0;
        ok = parse_time_arg(value, &a->q.from_ms) == 0;
        a->bad_why = TIME_FORM;
    } else if (strcmp(key, "to") == 0) {
        once = a->seen_to++ == 0;
        ok = parse_time_arg(value, &a->q.to_ms) == 0;
        a->bad_why = TIME_FORM;
    } else if (strcmp(key, "cursor") == 0) {
        once = a->seen_cursor++ == 0;
        ok = value != NULL && cursor_decode(value, &a->q) == 0;
        a->bad_why = "must be a next_cursor returned by this endpoint, as it was returned";
    } else if (strcmp(key, "limit") == 0) {
        /* Digits only: strtol alone would take "+3", " 3" and "-0". */
        long v = value && *value >= '0' && *value <= '9' ? strtol(value, &end, 10) : 0;
        once = a->seen_limit++ == 0;
        ok = end != NULL && *end == '\0' && v >= 1 && v <= DB_LIST_LIMIT_MAX;
        a->q.limit = (size_t)v;
        a->bad_why = "must be an integer from 1 to 200";
    } else {
        ok = 0;
        a->bad_why = "is not taken: the parameters are from, to, limit and cursor";
    }
    if (!once)
        a->bad_why = "must be given at most once";
    if (!ok || !once) {
        a->bad = key;
        return MHD_NO;
    }
    return MHD_YES;
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
    struct list_args a = {
        .q = {.from_ms = INT64_MIN, .to_ms = INT64_MAX, .limit = LIST_LIMIT_DEFAULT}};
    struct db_meeting_list l = {0};
    struct db *db;

    _Static_assert(DB_LIST_LIMIT_MAX == 200, "the limit's form in the problem detail");
    MHD_get_connection_values(rq->conn, MHD_GET_ARGUMENT_KIND, take_arg, &a);
    if (a.bad != NULL)
        return http_reply_query(rq, a.bad, a.bad_why);
    if (a.q.from_ms != INT64_MIN && a.q.to_ms != INT64_MAX && a.q.from_ms > a.q.to_ms)
        return http_reply_query(rq, "from", "must not be after 'to'");
    if ((db = http_db(rq)) == NULL)
        return http_reply_problem(rq, API_E_DB_UNAVAILABLE, NULL);
    char mtg[PRINCIPAL_MTG_MAX * (MEETING_ID_LEN + 1) + 3];
    if (rq->who.browser) { /* only what it organizes or takes part in, within its mtg */
        a.q.viewer = rq->who.sub;
        a.q.viewer_meetings = rq->who.n_mtg > 0 ? mtg_array(&rq->who, mtg) : NULL;
    }
    enum db_status st = db_meeting_list(db, rq->tenant_id, &a.q, &l);
    int ret = st == DB_ONE_RESULT || st == DB_NO_RESULTS
                  ? reply_page(rq, &l)
                  : http_reply_problem(rq, API_E_DB_UNAVAILABLE, NULL);
    db_meeting_list_fini(&l);
    return ret;
}
