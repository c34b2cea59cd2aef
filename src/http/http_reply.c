/* http_reply.c -- queues every HTTP response and builds all but the streams' (http_stream.c).
 * Handlers never touch MHD responses. */
#include "http_reply.h"

#include <microhttpd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "db.h"
#include "log.h"
#include "timefmt.h"

#define PROBLEM_DETAIL_MAX 300
#define RETRY_AFTER_MAX 16

/* What a page from another origin may send and read (docs/design.md section 7). */
#define CORS_ALLOW_METHODS "GET, POST, PUT, PATCH, DELETE"
#define CORS_ALLOW_HEADERS                                                                         \
    "Authorization, Content-Type, Idempotency-Key, If-Match, If-None-Match, Last-Event-ID"
#define CORS_EXPOSE_HEADERS "ETag, Location, Retry-After, WWW-Authenticate"
#define CORS_MAX_AGE "7200"             /* seconds: Chromium's cap */
#define CORS_REFUSED_LOG_EVERY_MS 60000 /* refused preflights: one log line at most this often */
#define CORS_ORIGIN_LOG_MAX 200         /* bytes of the Origin a refusal's line shows */
#define CORS_REFUSED_MORE_MAX 96        /* its " (and N more ...)" */

/* The CORS headers of a /v1/ reply when TOCSIN_CORS_ORIGINS is set: Vary always (the reply
 * depends on Origin), the rest only for an allowed origin. Returns whether the origin was
 * allowed. */
static bool
add_cors(struct request *rq, struct MHD_Response *resp)
{
    const struct cors_origins *c = rq->cfg != NULL ? &rq->cfg->cors : NULL;
    const char *origin = http_request_header(rq, "Origin");

    if (c == NULL || (!c->any && c->n == 0) || rq->path == NULL ||
        strncmp(rq->path, "/v1/", 4) != 0)
        return false;
    MHD_add_response_header(resp, "Vary", "Origin");
    if (!cors_origin_allowed(c, origin))
        return false;
    MHD_add_response_header(resp, "Access-Control-Allow-Origin", c->any ? "*" : origin);
    MHD_add_response_header(resp, "Access-Control-Expose-Headers", CORS_EXPOSE_HEADERS);
    return true;
}

/* Every reply names its request: the client's X-Request-Id, or the one made for it. */
static void
add_request_id(struct request *rq, struct MHD_Response *resp)
{
    if (rq->request_id[0] != '\0')
        MHD_add_response_header(resp, "X-Request-Id", rq->request_id);
}

static int
queue(struct request *rq, unsigned status, struct MHD_Response *resp)
{
    if (resp == NULL)
        return MHD_NO;
    add_request_id(rq, resp);
    add_cors(rq, resp);
    if (MHD_get_response_header(resp, "Cache-Control") == NULL)
        MHD_add_response_header(resp, "Cache-Control", "no-store"); /* API data is private */
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    if (rq->page_policy != NULL) { /* a page of ours: its own files only, never framed */
        MHD_add_response_header(resp, "Content-Security-Policy", rq->page_policy);
        MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    }
    rq->status = status;
    rq->answered = true;
    enum MHD_Result r = MHD_queue_response(rq->conn, status, resp);
    MHD_destroy_response(resp);
    return r;
}

int
http_reply_raw(struct request *rq, unsigned status, const char *body, size_t len,
               const char *content_type, const struct http_reply_meta *meta)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (resp == NULL)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", content_type ? content_type : "application/json");
    if (meta != NULL && meta->etag != NULL)
        MHD_add_response_header(resp, "ETag", meta->etag);
    if (meta != NULL && meta->location != NULL) {
        MHD_add_response_header(resp, "Location", meta->location);
        snprintf(rq->location, sizeof rq->location, "%s", meta->location);
    }
    if (meta != NULL && meta->service_worker_allowed != NULL)
        MHD_add_response_header(resp, "Service-Worker-Allowed", meta->service_worker_allowed);
    if (meta != NULL && meta->cache_control != NULL)
        MHD_add_response_header(resp, "Cache-Control", meta->cache_control);
    return queue(rq, status, resp);
}

int
http_reply_json(struct request *rq, unsigned status, json_t *v_steal,
                const struct http_reply_meta *meta)
{
    char *s = v_steal ? codec_dump(v_steal) : NULL;
    json_decref(v_steal);
    if (s == NULL) {
        LOG_ERROR("out of memory serializing a reply");
        return MHD_NO;
    }
    int r = http_reply_raw(rq, status, s, strlen(s), NULL, meta);
    free(s);
    return r;
}

static json_t *
problem_new(enum api_error e, const char *detail)
{
    char type[80];
    snprintf(type, sizeof(type), "urn:tocsin:problem:%s", api_errors_code(e));
    json_t *p = json_object();
    json_object_set_new(p, "type", json_string(type));
    json_object_set_new(p, "title", json_string(api_errors_title(e)));
    json_object_set_new(p, "status", json_integer(api_errors_status(e)));
    /* detail is ours or cut client text: json_string refuses invalid UTF-8 (a sequence cut at
     * PROBLEM_DETAIL_MAX included), and the title stands in for it. */
    char d[PROBLEM_DETAIL_MAX];
    snprintf(d, sizeof(d), "%s", detail ? detail : api_errors_title(e));
    json_t *ds = json_string(d);
    json_object_set_new(p, "detail", ds ? ds : json_string(api_errors_title(e)));
    json_object_set_new(p, "code", json_string(api_errors_code(e)));
    return p;
}

static int
reply_problem_json(struct request *rq, enum api_error e, json_t *p)
{
    unsigned status = api_errors_status(e);
    char *s = codec_dump(p);
    json_decref(p);
    if (s == NULL)
        return MHD_NO;
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_FREE);
    if (resp == NULL) {
        free(s);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", "application/problem+json");
    if (e == API_E_INVALID_TOKEN)
        MHD_add_response_header(resp, "WWW-Authenticate", "Bearer error=\"invalid_token\"");
    else if (e == API_E_INSUFFICIENT_SCOPE)
        MHD_add_response_header(resp, "WWW-Authenticate", "Bearer error=\"insufficient_scope\"");
    else if (status == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(resp, "WWW-Authenticate", "Bearer");
    if (rq->retry_after_s > 0) {
        char ra[RETRY_AFTER_MAX];
        snprintf(ra, sizeof ra, "%u", rq->retry_after_s);
        MHD_add_response_header(resp, "Retry-After", ra);
    }
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(resp, "Allow", rq->match.allow);
    return queue(rq, status, resp);
}

/* The database failure behind a 503. The threads that hold long-lived connections (scheduler,
 * dispatch, recon, ...) log an outage once when it starts and once when it ends; a request logs
 * it at debug only, or at error when it is a hard error, which is our bug. */
static void
log_db_failure(const struct request *rq)
{
    struct db *db = rq->w != NULL ? rq->w->db : NULL;

    if (db != NULL && db_err(db) == DB_HARD_ERROR)
        LOG_ERROR("database: %s", db_errmsg(db));
    else
        LOG_DEBUG("database unavailable: %s", db != NULL ? db_errmsg(db) : "not connected");
}

int
http_reply_problem(struct request *rq, enum api_error e, const char *detail)
{
    if (e == API_E_DB_UNAVAILABLE)
        log_db_failure(rq);
    return reply_problem_json(rq, e, problem_new(e, detail));
}

int
http_reply_problem_retry(struct request *rq, enum api_error e, const char *detail,
                         unsigned retry_after_s)
{
    rq->retry_after_s = retry_after_s;
    return reply_problem_json(rq, e, problem_new(e, detail));
}

/* A refused preflight is logged at info, but at most once per CORS_REFUSED_LOG_EVERY_MS with the
 * count of those not logged. Info, not debug: it is the one sign on the server side of a web app
 * whose origin TOCSIN_CORS_ORIGINS misses (its users only see a CORS error in their browser), so
 * an operator should see it at the default level, with the origin to add. Throttled: any client
 * can send preflights without credentials, and a line for each would let it add log lines at
 * will; each request still has its access line. */
static void
log_refused_preflight(struct request *rq)
{
    static struct log_throttle refused = LOG_THROTTLE_INIT(CORS_REFUSED_LOG_EVERY_MS);
    const char *origin = http_request_header(rq, "Origin");
    unsigned long unlogged;
    int64_t since_ms;
    char more[CORS_REFUSED_MORE_MAX] = "";

    if (!log_enabled(LOG_LEVEL_INFO) ||
        !log_throttle_take(&refused, timefmt_mono_ms(), &unlogged, &since_ms))
        return;
    if (unlogged > 0)
        snprintf(more, sizeof more, " (and %lu more refused in the last %lld s)", unlogged,
                 (long long)since_ms / 1000);
    LOG_INFO("cors: preflight for %s from origin %.*s refused: not in TOCSIN_CORS_ORIGINS%s",
             rq->path, CORS_ORIGIN_LOG_MAX, origin ? origin : "(none)", more);
}

int
http_reply_preflight(struct request *rq)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);

    if (resp == NULL)
        return MHD_NO;
    add_request_id(rq, resp);
    if (add_cors(rq, resp)) {
        MHD_add_response_header(resp, "Access-Control-Allow-Methods", CORS_ALLOW_METHODS);
        MHD_add_response_header(resp, "Access-Control-Allow-Headers", CORS_ALLOW_HEADERS);
        MHD_add_response_header(resp, "Access-Control-Max-Age", CORS_MAX_AGE);
    } else {
        log_refused_preflight(rq);
    }
    rq->status = MHD_HTTP_NO_CONTENT;
    rq->answered = true;
    enum MHD_Result r = MHD_queue_response(rq->conn, MHD_HTTP_NO_CONTENT, resp);
    MHD_destroy_response(resp);
    return r;
}

int
http_reply_response(struct request *rq, unsigned status, struct MHD_Response *resp)
{
    return queue(rq, status, resp);
}

int
http_reply_fields(struct request *rq, enum api_error e, const struct codec_errors *errs)
{
    return reply_problem_json(rq, e, http_reply_problem_doc(e, NULL, errs));
}

json_t *
http_reply_problem_doc(enum api_error e, const char *detail, const struct codec_errors *errs)
{
    json_t *p = problem_new(e, errs != NULL && errs->n > 0 ? errs->e[0].message : detail);
    json_t *list = errs != NULL ? json_array() : NULL;
    for (size_t i = 0; list != NULL && i < errs->n; i++)
        json_array_append_new(list, json_pack("{s:s, s:s}", "field", errs->e[i].field, "message",
                                              errs->e[i].message));
    if (list != NULL)
        json_object_set_new(p, "errors", list);
    return p;
}

int
http_reply_validation(struct request *rq, const struct codec_errors *errs)
{
    return http_reply_fields(rq, API_E_VALIDATION, errs);
}

int
http_reply_query(struct request *rq, const char *param, const char *message)
{
    char name[HTTP_QUERY_NAME_MAX + 1], detail[PROBLEM_DETAIL_MAX];

    log_escape(name, sizeof name, param, strlen(param));
    snprintf(detail, sizeof detail, "query parameter '%s' %s", name, message);
    json_t *p = problem_new(API_E_BAD_QUERY, detail);
    json_object_set_new(p, "errors", json_pack("[{s:s, s:s}]", "field", name, "message", message));
    return reply_problem_json(rq, API_E_BAD_QUERY, p);
}

int
http_reply_empty(struct request *rq, unsigned status)
{
    return queue(rq, status, MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT));
}

int
http_reply_not_modified(struct request *rq, const struct http_reply_meta *meta)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (resp != NULL && meta->etag != NULL)
        MHD_add_response_header(resp, "ETag", meta->etag);
    if (resp != NULL && meta->cache_control != NULL)
        MHD_add_response_header(resp, "Cache-Control", meta->cache_control);
    return queue(rq, MHD_HTTP_NOT_MODIFIED, resp);
}

#define ETAG_HEX_DIGITS 32 /* of the body's SHA-256: 128 bits tell representations apart */
_Static_assert(ETAG_HEX_DIGITS <= CRYPTO_SHA256_HEX_LEN && ETAG_HEX_DIGITS + 3 <= HTTP_ETAG_MAX,
               "HTTP_ETAG_MAX holds the quoted digits and the NUL");

void
http_reply_etag(const char *body, size_t len, char out[HTTP_ETAG_MAX])
{
    char hex[CRYPTO_SHA256_HEX_LEN + 1];
    crypto_sha256_hex(body, len, hex);
    snprintf(out, HTTP_ETAG_MAX, "\"%.32s\"", hex);
}

int
http_reply_etag_matches(const char *header, const char *etag, int weak_ok)
{
    size_t elen = strlen(etag);
    const char *p = header;

    while (*p != '\0') {
        p += strspn(p, " \t,");
        if (*p == '\0')
            break;
        if (*p == '*' && (p[1] == '\0' || p[1] == ',' || p[1] == ' ' || p[1] == '\t'))
            return 1;
        int weak = strncmp(p, "W/", 2) == 0;
        if (weak)
            p += 2;
        size_t n = strcspn(p, ",");
        while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
            n--;
        if ((!weak || weak_ok) && n == elen && memcmp(p, etag, elen) == 0)
            return 1;
        p += strcspn(p, ",");
    }
    return 0;
}
