/* http_reply.h -- the only code that builds MHD responses: JSON, problem+json (RFC 9457), empty,
 * 304. Each function queues the response and returns the MHD result for the access handler to
 * return. Headers common to all replies (Cache-Control, X-Content-Type-Options) are added here. */
#ifndef TOCSIN_HTTP_REPLY_H
#define TOCSIN_HTTP_REPLY_H

#include <jansson.h>
#include <stddef.h>

#include "api_errors.h"
#include "codec.h"
#include "http_request.h"

#define HTTP_ETAG_MAX 40 /* quoted 32 hex digits */

/* Optional headers of a JSON reply. */
struct http_reply_meta {
    const char *etag;     /* full quoted value, or NULL */
    const char *location; /* or NULL */
};

/* Replies with a body already serialized (copied). content_type NULL means application/json. */
int http_reply_raw(struct request *rq, unsigned status, const char *body, size_t len,
                   const char *content_type, const struct http_reply_meta *meta);
/* Serializes v compactly and replies; steals v. */
int http_reply_json(struct request *rq, unsigned status, json_t *v_steal,
                    const struct http_reply_meta *meta);
/* application/problem+json for e; detail may be NULL. 401 adds WWW-Authenticate, 405 adds Allow
 * (from rq->match.allow). */
int http_reply_problem(struct request *rq, enum api_error e, const char *detail);
/* 400 validation problem with an errors[] array. */
int http_reply_validation(struct request *rq, const struct codec_errors *errs);
int http_reply_empty(struct request *rq, unsigned status);
int http_reply_not_modified(struct request *rq, const char *etag);

/* Strong ETag of a serialized representation: a quoted hash, into out (HTTP_ETAG_MAX bytes). */
void http_etag(const char *body, size_t len, char out[HTTP_ETAG_MAX]);
/* Does an If-Match / If-None-Match header value (a list of ETags, W/ accepted for
 * If-None-Match, or "*") match etag? */
int http_etag_matches(const char *header, const char *etag, int weak_ok);

#endif
