/* handler.c -- checks and replies shared by the endpoint handlers. */
#include "handler.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine.h"
#include "hex.h"
#include "http_auth.h"
#include "log.h"
#include "mirror.h"
#include "panic.h"
#include "timefmt.h"

#define CONTENT_TYPE_MAX 128

/* Compares the media type (before ';', trailing spaces and tabs trimmed, case-insensitive) and
 * accepts only a utf-8 charset parameter: JSON is UTF-8 by definition and anything else is a
 * client bug. */
static bool
param_is(const char *p, size_t len, const char *want)
{
    return len == strlen(want) && strncasecmp(p, want, len) == 0;
}

static int
type_matches(const char *h, const char *want)
{
    size_t n = strcspn(h, ";");
    while (n > 0 && (h[n - 1] == ' ' || h[n - 1] == '\t'))
        n--;
    if (n != strlen(want) || strncasecmp(h, want, n) != 0)
        return 0;
    const char *p = h + strcspn(h, ";");
    while (*p == ';') {
        p++;
        p += strspn(p, " \t");
        size_t plen = strcspn(p, ";"), len = plen;
        while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        /* The whole parameter: comparing only its own length took prefixes ("c", "charset=utf"). */
        if (len > 0 && !param_is(p, len, "charset=utf-8") && !param_is(p, len, "charset=\"utf-8\""))
            return 0;
        p += plen;
    }
    return 1;
}

int
handler_require_type(struct request *rq, const char *want, int *ret)
{
    const char *h = http_request_header(rq, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (h != NULL && strlen(h) <= CONTENT_TYPE_MAX && type_matches(h, want))
        return 0;
    *ret = http_reply_problem(rq, API_E_UNSUPPORTED_MEDIA_TYPE,
                              strcmp(want, "application/json") == 0
                                  ? "Content-Type must be application/json"
                                  : "Content-Type must be application/merge-patch+json");
    return -1;
}

static enum MHD_Result
first_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    *(const char **)cls = key;
    return MHD_NO;
}

int
handler_no_query(struct request *rq, int *ret)
{
    const char *key = NULL;
    MHD_get_connection_values(rq->conn, MHD_GET_ARGUMENT_KIND, first_arg, &key);
    if (key == NULL)
        return 0;
    *ret = http_reply_query(rq, key, "is not taken: this endpoint has no query parameters");
    return -1;
}

json_t *
handler_parse_body(struct request *rq, int *ret)
{
    char err[CODEC_MESSAGE_MAX];
    json_t *doc = codec_parse(rq->body ? rq->body : "", rq->body_len, err, sizeof(err));
    if (doc == NULL)
        *ret = http_reply_problem(rq, API_E_BAD_JSON, err);
    return doc;
}

const char *
handler_meeting_id(struct request *rq, int *ret)
{
    if (rq->match.nargs == 1 && meeting_id_valid(rq->match.args[0]))
        return rq->match.args[0];
    *ret = http_reply_problem(rq, API_E_MEETING_NOT_FOUND, NULL);
    return NULL;
}

json_t *
handler_json_body(struct request *rq, int *ret)
{
    if (handler_no_query(rq, ret) != 0 || handler_require_type(rq, "application/json", ret) != 0)
        return NULL;
    return handler_parse_body(rq, ret);
}

struct db *
handler_db(struct request *rq, int *ret)
{
    struct db *db = http_request_db(rq);

    if (db == NULL)
        *ret = http_reply_problem(rq, API_E_DB_UNAVAILABLE, NULL);
    return db;
}

int
handler_db_failure(struct request *rq, enum db_status st, enum api_error no_results,
                   const char *detail)
{
    switch (st) {
    case DB_HARD_ERROR:
    case DB_SOFT_ERROR:
        return http_reply_problem(rq, API_E_DB_UNAVAILABLE, NULL);
    case DB_NO_RESULTS:
        return http_reply_problem(rq, no_results, detail);
    case DB_ONE_RESULT:
        break;
    }
    TOCSIN_UNREACHABLE("handler_db_failure called for a success");
}

int
handler_db_problem(struct request *rq, enum db_status st)
{
    return handler_db_failure(rq, st, API_E_MEETING_NOT_FOUND, NULL);
}

int
handler_reply_items(struct request *rq, enum db_status st, json_t *items_steal)
{
    if (st != DB_ONE_RESULT) {
        json_decref(items_steal);
        return http_reply_problem(rq, API_E_DB_UNAVAILABLE, NULL);
    }
    return http_reply_json(rq, MHD_HTTP_OK, json_pack("{s:o}", "items", items_steal), NULL);
}

int
handler_meeting_body(const struct meeting *m, char **body, char etag[HTTP_ETAG_MAX])
{
    json_t *v = codec_meeting_encode(m);
    *body = v ? codec_dump(v) : NULL;
    json_decref(v);
    if (*body == NULL)
        return -1;
    http_reply_etag(*body, strlen(*body), etag);
    return 0;
}

enum db_status
handler_meeting_body_st(struct db *db, const struct meeting *m, char **body,
                        char etag[HTTP_ETAG_MAX])
{
    if (handler_meeting_body(m, body, etag) == 0)
        return DB_ONE_RESULT;
    db_note_error(db, "meeting %s: cannot encode its body", m->id);
    return DB_HARD_ERROR;
}

void
handler_mirror_sync(struct request *rq, const struct reminder_keys *gone, const struct meeting *m)
{
    struct reminder_keys fresh = {0};
    bool failed = false;

    if (gone != NULL && gone->n > 0 && mirror_disarm(rq->w->mi, gone->k, gone->n) != 0) {
        LOG_WARN("redis: %zu stale reminder keys left for the reconciler", gone->n);
        failed = true;
    }
    if (m != NULL) {
        meeting_pending_keys(m, &fresh);
        engine_reminders_changed(rq->w->engine, fresh.k, fresh.n);
    }
    if (fresh.n > 0 && mirror_arm(rq->w->mi, fresh.k, fresh.n, timefmt_now_ms(), 0) != 0) {
        LOG_WARN("redis: meeting %s: %zu reminder keys left for the reconciler", m->id, fresh.n);
        failed = true;
    }
    if (failed)
        engine_mirror_failed(rq->w->engine);
}

int
handler_meeting_visible(struct request *rq, const struct meeting *m, int *ret)
{
    if (!rq->who.browser ||
        (http_auth_meeting_allowed(rq, m->id) && codec_people_in_meeting(m, rq->who.sub)))
        return 0;
    *ret = http_reply_problem(rq, API_E_MEETING_NOT_FOUND, NULL);
    return -1;
}

int
handler_meeting_organized(struct request *rq, const struct meeting *m, int *ret)
{
    if (!rq->who.browser || (m->organizer_id != NULL && strcmp(m->organizer_id, rq->who.sub) == 0))
        return 0;
    *ret = http_reply_problem(rq, API_E_NOT_ORGANIZER, NULL);
    return -1;
}

const char *
handler_cursor_open(const char *s, char *raw, size_t raw_max, const char *tag)
{
    size_t n = s ? strlen(s) : 0, len, tag_len = strlen(tag);

    if (n == 0 || hex_decode(s, n, (uint8_t *)raw, raw_max, &len) != 0)
        return NULL;
    raw[len] = '\0';
    if (len <= tag_len || memcmp(raw, tag, tag_len) != 0 || raw[tag_len] != ':')
        return NULL;
    return raw + tag_len + 1;
}

/* A decimal number at *p in 0..max that ends at sep; strtoll, not sscanf: a number past int64 is
 * refused, not undefined behaviour. */
static int
cursor_int(const char **p, char sep, int64_t max, int64_t *out)
{
    char *end;
    long long v;

    errno = 0;
    v = strtoll(*p, &end, 10);
    if (errno != 0 || end == *p || *end != sep || v < 0 || v > max)
        return -1;
    *out = v;
    *p = sep == '\0' ? end : end + 1;
    return 0;
}

int
handler_cursor_ms(const char **p, char sep, int64_t *out)
{
    return cursor_int(p, sep, TIMEFMT_MS_MAX, out);
}

int
handler_cursor_id(const char **p, char sep, int64_t *out)
{
    if (**p < '0' || **p > '9')
        return -1;
    return cursor_int(p, sep, INT64_MAX, out);
}

json_t *
handler_page_tail(const char *cursor)
{
    return json_pack("{s:o}", "next_cursor", cursor[0] != '\0' ? json_string(cursor) : json_null());
}

struct db *
handler_db_no_query(struct request *rq, int *ret)
{
    return handler_no_query(rq, ret) != 0 ? NULL : handler_db(rq, ret);
}

int
handler_reply_deleted(struct request *rq, enum db_status st, enum api_error not_found)
{
    if (st != DB_ONE_RESULT)
        return handler_db_failure(rq, st, not_found, NULL);
    return http_reply_empty(rq, MHD_HTTP_NO_CONTENT);
}

#define TIME_FORM "must be an RFC 3339 date-time with an offset, e.g. 2030-01-14T09:00:00Z"

static int
page_time(const char *value, int64_t *out)
{
    return value != NULL && timefmt_parse(value, strlen(value), out) == 0;
}

static enum MHD_Result
page_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    struct handler_page *p = cls;
    char *end = NULL;
    int ok, once = 1;

    _Static_assert(DB_LIST_LIMIT_MAX == 200, "the limit's form in the problem detail");
    if (!p->no_range && strcmp(key, "from") == 0) {
        once = p->seen_from++ == 0;
        ok = page_time(value, &p->from_ms);
        p->bad_why = TIME_FORM;
    } else if (!p->no_range && strcmp(key, "to") == 0) {
        once = p->seen_to++ == 0;
        ok = page_time(value, &p->to_ms);
        p->bad_why = TIME_FORM;
    } else if (strcmp(key, "cursor") == 0) {
        once = p->seen_cursor++ == 0;
        ok = (p->cursor = value) != NULL;
        p->bad_why = HANDLER_CURSOR_FORM;
    } else if (strcmp(key, "limit") == 0) {
        /* Digits only: strtol alone would take "+3", " 3" and "-0". */
        long v = value && *value >= '0' && *value <= '9' ? strtol(value, &end, 10) : 0;
        once = p->seen_limit++ == 0;
        ok = end != NULL && *end == '\0' && v >= 1 && v <= DB_LIST_LIMIT_MAX;
        p->limit = (size_t)v;
        p->bad_why = "must be an integer from 1 to 200";
    } else if (p->extra == NULL || (ok = p->extra(p, key, value)) == 0) {
        ok = 0;
        p->bad_why = p->allowed;
    }
    if (!once)
        p->bad_why = "must be given at most once";
    if (ok <= 0 || !once) {
        p->bad = key;
        return MHD_NO;
    }
    return MHD_YES;
}

bool
handler_search_q_valid(const char *v)
{
    size_t n = v != NULL ? strlen(v) : 0;
    json_t *s = n >= 1 && n <= DB_SEARCH_Q_MAX ? json_stringn(v, n) : NULL; /* UTF-8 only */

    _Static_assert(DB_SEARCH_Q_MAX == 200, "HANDLER_SEARCH_Q_FORM");
    json_decref(s);
    return s != NULL;
}

int
handler_page_query(struct request *rq, struct handler_page *p, int *ret)
{
    MHD_get_connection_values(rq->conn, MHD_GET_ARGUMENT_KIND, page_arg, p);
    if (p->bad != NULL) {
        *ret = http_reply_query(rq, p->bad, p->bad_why);
        return -1;
    }
    if (p->from_ms != INT64_MIN && p->to_ms != INT64_MAX && p->from_ms > p->to_ms) {
        *ret = http_reply_query(rq, "from", "must not be after 'to'");
        return -1;
    }
    return 0;
}

bool
handler_idempotency_key_valid(const char *k)
{
    size_t n = strlen(k);
    if (n == 0 || n > IDEMPOTENCY_KEY_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (k[i] < 0x21 || k[i] > 0x7e)
            return false;
    return true;
}
