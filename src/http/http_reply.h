/* http_reply.h -- the only code that queues MHD responses, and that builds them but for the
 * streams' (http_stream.c): JSON, problem+json (RFC 9457), empty, 304. Each function queues the
 * response and returns the MHD result for the access handler to return. Headers common to all
 * replies (X-Request-Id, Cache-Control, X-Content-Type-Options, the CORS headers of docs/design.md
 * section 7 on /v1/ paths) are added here. */
#ifndef TOCSIN_HTTP_REPLY_H
#define TOCSIN_HTTP_REPLY_H

#include <jansson.h>
#include <stddef.h>

#include "api_errors.h"
#include "codec.h"
#include "http_request.h"

#define HTTP_ETAG_MAX 40 /* quoted 32 hex digits */

struct MHD_Response;

/* Optional headers of a JSON reply. */
struct http_reply_meta {
    const char *etag;                   /* full quoted value, or NULL */
    const char *location;               /* or NULL */
    const char *service_worker_allowed; /* the Service-Worker-Allowed header, or NULL */
    const char *cache_control;          /* or NULL: no-store, for everything but the assets */
};

/* Replies with a body already serialized (copied). content_type NULL means application/json. */
int http_reply_raw(struct request *rq, unsigned status, const char *body, size_t len,
                   const char *content_type, const struct http_reply_meta *meta);
/* An HTML page of tocsin's own (the unsubscribe page), body copied: text/html, never cached, and
 * headers that let it run nothing: a Content-Security-Policy with no source for scripts, styles
 * or frames and forms only to its own origin, no framing, no Referer (its URL holds a token). */
int http_reply_page(struct request *rq, unsigned status, const char *body, size_t len);
/* Serializes v compactly and replies; steals v. */
int http_reply_json(struct request *rq, unsigned status, json_t *v_steal,
                    const struct http_reply_meta *meta);
/* application/problem+json for e; detail may be NULL. 401 adds WWW-Authenticate, 405 adds Allow
 * (from rq->match.allow). */
int http_reply_problem(struct request *rq, enum api_error e, const char *detail);
/* http_reply_problem with a Retry-After of retry_after_s seconds (429, 503). */
int http_reply_problem_retry(struct request *rq, enum api_error e, const char *detail,
                             unsigned retry_after_s);
/* 204 to a CORS preflight (OPTIONS on a /v1/ path): the CORS headers when the Origin is
 * allowed, none otherwise (the browser then blocks the request). */
int http_reply_preflight(struct request *rq);
/* Queues a response built elsewhere in the HTTP layer (a stream), with the common headers;
 * takes resp (destroys its reference). */
int http_reply_response(struct request *rq, unsigned status, struct MHD_Response *resp);
/* 400 bad_query naming the query parameter and the form it needs: detail "query parameter
 * '<param>' <message>" and errors [{field: param, message}], the shape of a validation problem.
 * param is the client's: escaped to printable ASCII and cut to HTTP_QUERY_NAME_MAX bytes. */
#define HTTP_QUERY_NAME_MAX 64
int http_reply_query(struct request *rq, const char *param, const char *message);
/* 400 validation problem with an errors[] array. */
int http_reply_validation(struct request *rq, const struct codec_errors *errs);
/* The problem+json body of e as a value, not sent: a part of a larger answer (a batch's item).
 * With errs (may be NULL) it carries their "errors" and the first one's message as its detail.
 * New reference. */
json_t *http_reply_problem_doc(enum api_error e, const char *detail,
                               const struct codec_errors *errs);
/* The same shape for another problem e about fields (errs->n >= 1): detail the first message. */
int http_reply_fields(struct request *rq, enum api_error e, const struct codec_errors *errs);
int http_reply_empty(struct request *rq, unsigned status);
/* 304 with meta's ETag and Cache-Control (the ones its 200 would carry). */
int http_reply_not_modified(struct request *rq, const struct http_reply_meta *meta);

/* Strong ETag of a serialized representation: a quoted hash, into out (HTTP_ETAG_MAX bytes). */
void http_reply_etag(const char *body, size_t len, char out[HTTP_ETAG_MAX]);
/* Does an If-Match / If-None-Match header value (a list of ETags, W/ accepted for
 * If-None-Match, or "*") match etag? */
int http_reply_etag_matches(const char *header, const char *etag, int weak_ok);

#endif
