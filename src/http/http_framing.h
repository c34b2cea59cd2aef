/* http_framing.h -- the RFC 9112 message-framing and field checks that libmicrohttpd 0.9.75 does
 * not make, applied once the request head is in and before any handler or authentication runs.
 * A request that fails one is answered 400 on MHD's first callback, which makes MHD close the
 * connection after the answer (a response queued before the body is read discards the rest of
 * the connection): a request that two parsers could frame differently is never followed by
 * another one on the same connection. */
#ifndef TOCSIN_HTTP_FRAMING_H
#define TOCSIN_HTTP_FRAMING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api_errors.h"

struct MHD_Connection;

/* What the fields of one request head add up to; fill with http_framing_field. */
struct http_framing {
    bool bad_name;          /* a field name that is not an RFC 9110 token (space, CTL, ...) */
    bool bad_value;         /* a control byte other than HTAB, or DEL, in a field value */
    unsigned n_length;      /* Content-Length fields */
    bool length_conflict;   /* Content-Length values that differ or are not 1*DIGIT */
    char length[24];        /* the first Content-Length value */
    unsigned n_te;          /* Transfer-Encoding fields */
    unsigned n_chunked;     /* "chunked" codings among them */
    unsigned n_other_codes; /* any other transfer coding */
    bool chunked_last;      /* the last coding seen is chunked */
    unsigned n_host;        /* Host fields */
    /* Line ends, which MHD does not keep (http_framing_lines_start says how they are found). */
    bool lines;         /* the line checks run (http_framing_lines_start was called) */
    uintptr_t head;     /* MHD's copy of the head: from the request line's first byte */
    uintptr_t head_end; /* to just after the empty line that ends it */
    uintptr_t text_end; /* where the text of the line before the next field ends */
    bool folded;        /* a field continued on the next line (obs-fold) */
    bool bare_lf;       /* a line ended by LF alone */
};

/* Adds one field (name[0..name_len), value[0..value_len)) to f; start from a zeroed struct. */
void http_framing_field(struct http_framing *f, const char *name, size_t name_len,
                        const char *value, size_t value_len);
/* The line checks (RFC 9112 sections 2.2 and 5.2): every line of a request head ends with CRLF,
 * and no field value is continued on the next line (obs-fold). libmicrohttpd 0.9.75 takes a bare
 * LF for a line end and glues a continuation line to the field's name, and keeps neither fact; what
 * it does keep is the head where it parsed it: one buffer, from the request line's first byte
 * (the method it passes) for MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE bytes, each field's name
 * and value pointing into it, a NUL written over each CR, LF and name's colon. A line that ends
 * with CRLF therefore leaves exactly 2 bytes between the end of its text (the version or a value)
 * and the next field's name, and 4 after the last one (its CRLF and the empty line's); a bare LF
 * leaves 1 or 3, and a continuation line more, while the field it continued moves out of the
 * buffer (MHD copies its name to append the continuation). Only addresses are compared, no byte
 * is read. tests/api/malformed.test.mjs holds heads of every shape against the real parser.
 * Start with the head (head_size bytes at head) and the end of the request line's text
 * (text_end: just after the version), then give every field in order to http_framing_line. */
void http_framing_lines_start(struct http_framing *f, const char *head, size_t head_size,
                              const char *text_end);
void http_framing_line(struct http_framing *f, const char *name, const char *value,
                       size_t value_len);
/* After the last field: the empty line that ends the head. */
void http_framing_lines_end(struct http_framing *f);
/* The verdict on a head with fields f: API_E_NONE, or API_E_BAD_REQUEST with *detail set to a
 * static sentence. http10: the request line said HTTP/1.0 (no Transfer-Encoding allowed, Host
 * optional). */
enum api_error http_framing_verdict(const struct http_framing *f, bool http10, const char **detail);
/* Why the raw (still percent-encoded) request target is refused, a static sentence, or NULL:
 * %00 anywhere (decoded, a NUL would cut the path or a query value short: /v1/meetings/<id>%00x
 * named the meeting <id>), or %2F in the path (libmicrohttpd decodes the path before routing, so
 * /v1/meetings/<id>%2Foccurrences was the occurrences list, which a proxy that allows or refuses
 * by path prefix reads as something else; no resource has a slash in a segment). */
const char *http_framing_target_refusal(const char *raw_target);
/* Runs the checks above over the request head MHD parsed: target_refusal (from
 * http_framing_target_refusal) first. method and version are the strings MHD passed to the
 * request's first callback (they point into its copy of the head). */
enum api_error http_framing_check(struct MHD_Connection *conn, const char *method,
                                  const char *version, const char *target_refusal,
                                  const char **detail);

#endif
