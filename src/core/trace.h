/* trace.h -- request ids and W3C Trace Context (traceparent) for the logs and for outgoing
 * webhook requests. An X-Request-Id from the client is kept when it is 1..TRACE_REQUEST_ID_MAX
 * bytes of a safe set ([A-Za-z0-9] and -_.:/+=@), so it can go into a log line and a response
 * header as it is; otherwise one is made. A traceparent is taken only when it is well-formed
 * (https://www.w3.org/TR/trace-context/ section 3.2); anything else is ignored. Pure, but for the
 * random bytes of the made ids. */
#ifndef TOCSIN_TRACE_H
#define TOCSIN_TRACE_H

#include <stdbool.h>

#define TRACE_REQUEST_ID_MAX 128
#define TRACE_ID_LEN 32     /* hex digits of a trace id */
#define TRACE_SPAN_LEN 16   /* hex digits of a parent (span) id */
#define TRACE_PARENT_LEN 55 /* "00-<trace id>-<span id>-<flags>" */

/* Whether s is a request id we keep as it is. */
bool trace_request_id_valid(const char *s);
/* A new request id: 32 random hex digits. 0, or -1 when no random bytes could be had. */
int trace_request_id_make(char out[TRACE_REQUEST_ID_MAX + 1]);
/* Parses a traceparent header value; 0 with its trace id (and span id, when span is not NULL) as
 * lower-case hex, or -1 when it is not a valid one: a version other than two lower-case hex
 * digits or ff, an all-zero trace or span id, upper-case hex, version 00 with anything after the
 * flags, or a later version whose extra part does not start with '-'. */
int trace_parent_parse(const char *s, char trace_id[TRACE_ID_LEN + 1],
                       char span_id[TRACE_SPAN_LEN + 1]);
/* A traceparent for an outgoing request: its trace id is derived from key (the same key gives the
 * same trace id on every replica and every retry, so a receiver can tie the attempts of one
 * delivery together), its span id is random (each attempt is a span of its own), flags 00 (tocsin
 * records no traces). 0, or -1 when no random bytes could be had. */
int trace_parent_for(const char *key, char out[TRACE_PARENT_LEN + 1]);

#endif
