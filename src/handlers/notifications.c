/* notifications.c -- GET /v1/me/notifications?after=&limit=: the participant's inbox, the same
 * events with the same ids as the stream (docs/design.md section 7), and the tenant's head, so that
 * a page can load what it missed and then open the stream at the head with nothing lost between.
 * Without after: the newest limit events; with it: the first limit events after it. Either way
 * oldest first, and only those of the token's meetings (mtg) whose meeting lists the participant
 * now (a participant removed since the fire reads none of it). Each item carries the reader's
 * marks (read_at, archived_at: inbox_marks.c sets them), unread=true|false and
 * archived=true|false filter by them, and the answer carries the unread count. The stream's
 * `inbox` events (changes of marks) are not items. */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "db_inbox.h"
#include "db_stream.h"
#include "handler.h"
#include "http_routes.h"
#include "stream_body.h"

#define INBOX_LIMIT_DEFAULT 50
#define INBOX_LIMIT_MAX 200
#define NUMBER_DIGITS_MAX 19

struct inbox_args {
    bool has_after;
    int64_t after;
    size_t limit;
    enum db_inbox_filter unread, archived;
    int seen_after, seen_limit, seen_unread, seen_archived;
    const char *bad, *bad_why;
};

/* A true|false filter given at most once. */
static int
filter_arg(const char *value, int *seen, enum db_inbox_filter *out, const char **why)
{
    bool yes = value != NULL && strcmp(value, "true") == 0;
    bool no = value != NULL && strcmp(value, "false") == 0;

    *why = (*seen)++ == 0 ? "must be true or false" : "must be given at most once";
    *out = yes ? DB_INBOX_YES : DB_INBOX_NO;
    return (yes || no) && *seen == 1;
}

static int
number(const char *s, int64_t *out)
{
    size_t n = s ? strlen(s) : 0;
    int64_t v = 0;

    if (n == 0 || n > NUMBER_DIGITS_MAX)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9' || v > (INT64_MAX - (s[i] - '0')) / 10)
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

static enum MHD_Result
take_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    struct inbox_args *a = cls;
    int64_t v = 0;
    int ok;

    (void)kind;
    if (strcmp(key, "after") == 0) {
        ok = number(value, &a->after) == 0;
        a->bad_why = a->seen_after++ == 0 ? "must be a sequence number (digits)"
                                          : "must be given at most once";
        ok = ok && a->seen_after == 1;
        a->has_after = true;
    } else if (strcmp(key, "limit") == 0) {
        ok = number(value, &v) == 0 && v >= 1 && v <= INBOX_LIMIT_MAX;
        a->bad_why = a->seen_limit++ == 0 ? "must be an integer from 1 to 200"
                                          : "must be given at most once";
        ok = ok && a->seen_limit == 1;
        a->limit = (size_t)v;
    } else if (strcmp(key, "unread") == 0) {
        ok = filter_arg(value, &a->seen_unread, &a->unread, &a->bad_why);
    } else if (strcmp(key, "archived") == 0) {
        ok = filter_arg(value, &a->seen_archived, &a->archived, &a->bad_why);
    } else {
        ok = 0;
        a->bad_why = "is not taken: the parameters are after, limit, unread and archived";
    }
    if (!ok)
        a->bad = key;
    return ok ? MHD_YES : MHD_NO;
}

/* Whether the audience of ev (narrowed by stream_bodies to what its meeting lists now) holds sub.
 * The statement checked it too, but against its own read of the meeting; this one is the read the
 * body was built from. */
static bool
still_listed(const struct db_stream_event *ev, const char *sub)
{
    json_t *aud = json_loads(ev->audience_json, 0, NULL), *v;
    bool found = false;
    size_t i;

    json_array_foreach(aud, i, v)
    {
        const char *id = json_string_value(v);
        found = found || (id != NULL && strcmp(id, sub) == 0);
    }
    json_decref(aud);
    return found;
}

/* Items in seq order; events of deleted meetings, and of meetings that no longer list the
 * reader, are left out. */
static json_t *
items_of(const struct db_stream_event *ev, char *const *bodies, size_t n, const char *sub)
{
    json_t *items = json_array();

    for (size_t i = 0; items != NULL && i < n; i++) {
        json_t *body =
            bodies[i] && still_listed(&ev[i], sub) ? json_loads(bodies[i], 0, NULL) : NULL;
        if (body == NULL)
            continue;
        json_object_set_new(body, "seq", json_integer(ev[i].seq));
        body = codec_inbox_marks(body, ev[i].read_at_ms, ev[i].archived_at_ms);
        if (body == NULL || json_array_append_new(items, body) != 0) {
            json_decref(items);
            return NULL;
        }
    }
    return items;
}

static enum db_status
load(struct db *db, struct request *rq, const struct inbox_args *a, struct db_stream_event *ev,
     size_t *n, int64_t *head, int64_t *unread)
{
    struct db_stream_reader who = {rq->who.sub, rq->who.mtg, rq->who.n_mtg,
                                   true,        a->unread,   a->archived};
    struct db_stream_head h;
    enum db_status st = db_stream_heads(db, &rq->tenant_id, 1, &h);

    _Static_assert(PRINCIPAL_MTG_MAX <= DB_STREAM_MTG_MAX, "a token's meetings fit a reader");
    if (st == DB_ONE_RESULT)
        st = db_inbox_unread(db, rq->tenant_id, &who, unread);
    if (st != DB_ONE_RESULT)
        return st;
    *head = h.seq;
    if (a->has_after)
        return db_stream_events(db, rq->tenant_id, a->after, h.seq, &who, a->limit, ev, n);
    return db_stream_latest(db, rq->tenant_id, &who, a->limit, ev, n);
}

int
handle_notifications(struct request *rq)
{
    struct inbox_args a = {.limit = INBOX_LIMIT_DEFAULT};
    struct db_stream_event ev[INBOX_LIMIT_MAX];
    char *bodies[INBOX_LIMIT_MAX];
    struct db *db;
    size_t n = 0;
    int64_t head = 0, unread = 0;
    int ret;

    _Static_assert(INBOX_LIMIT_MAX == 200, "the limit's form in the problem detail");
    MHD_get_connection_values(rq->conn, MHD_GET_ARGUMENT_KIND, take_arg, &a);
    if (a.bad != NULL)
        return http_reply_query(rq, a.bad, a.bad_why);
    if ((db = http_request_db(rq)) == NULL)
        return http_reply_problem(rq, API_E_DB_UNAVAILABLE, NULL);
    enum db_status st = load(db, rq, &a, ev, &n, &head, &unread);
    if (st == DB_ONE_RESULT)
        st = stream_bodies(db, ev, n, bodies);
    if (st != DB_ONE_RESULT) {
        ret = http_reply_problem(rq, API_E_DB_UNAVAILABLE, NULL);
    } else {
        json_t *page = json_pack("{s:o, s:I, s:I}", "items", items_of(ev, bodies, n, rq->who.sub),
                                 "head", (json_int_t)head, "unread_count", (json_int_t)unread);
        ret = http_reply_json(rq, MHD_HTTP_OK, page, NULL);
        for (size_t i = 0; i < n; i++)
            free(bodies[i]);
    }
    for (size_t i = 0; i < n; i++)
        db_stream_event_fini(&ev[i]);
    return ret;
}
