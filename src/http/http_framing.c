/* http_framing.c -- RFC 9112 framing checks over the fields MHD parsed (http_framing.h). Each
 * refusal closes a hole measured against libmicrohttpd 0.9.75: it frames a body by the first of
 * two different Content-Length values, keeps a connection open after Content-Length together
 * with chunked (and answers a smuggled second request), waits for the idle timeout on any coding
 * but "chunked", stores "Content-Length : 5" as an unknown field, leaving the body to be read
 * as the next request, takes a bare LF for a line end and glues a folded line to the field's
 * name ("Content-Length:" then " 5" is a field "Content-Length5" with an empty value). */
#include "http_framing.h"

#include <microhttpd.h>
#include <string.h>
#include <strings.h>

static bool
is_tchar(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static bool
name_is(const char *name, size_t len, const char *want)
{
    return strlen(want) == len && strncasecmp(name, want, len) == 0;
}

static bool
is_ows(char c)
{
    return c == ' ' || c == '\t';
}

/* The transfer codings of one Transfer-Encoding value, a comma list; parameters make a coding
 * other than chunked, empty list elements are allowed (RFC 9110, section 5.6.1). */
static void
add_codings(struct http_framing *f, const char *v, size_t n)
{
    size_t i = 0;
    while (i < n) {
        while (i < n && (is_ows(v[i]) || v[i] == ','))
            i++;
        if (i == n)
            break;
        size_t start = i;
        while (i < n && v[i] != ',')
            i++;
        size_t len = i - start;
        while (len > 0 && is_ows(v[start + len - 1]))
            len--;
        f->chunked_last = name_is(v + start, len, "chunked");
        if (f->chunked_last)
            f->n_chunked++;
        else
            f->n_other_codes++;
    }
}

/* The leading decimal digits of v[0..n): v is not NUL-terminated, so no strspn. */
static size_t
digits(const char *v, size_t n)
{
    size_t i = 0;

    while (i < n && v[i] >= '0' && v[i] <= '9')
        i++;
    return i;
}

static void
add_length(struct http_framing *f, const char *v, size_t n)
{
    if (n == 0 || n >= sizeof(f->length) || digits(v, n) < n) {
        f->length_conflict = true;
        return;
    }
    if (f->n_length++ == 0) {
        memcpy(f->length, v, n);
        f->length[n] = '\0';
    } else if (strlen(f->length) != n || memcmp(f->length, v, n) != 0) {
        f->length_conflict = true;
    }
}

void
http_framing_field(struct http_framing *f, const char *name, size_t name_len, const char *value,
                   size_t value_len)
{
    for (size_t i = 0; i < name_len; i++)
        f->bad_name |= !is_tchar((unsigned char)name[i]);
    f->bad_name |= name_len == 0;
    for (size_t i = 0; i < value_len; i++) {
        unsigned char c = (unsigned char)value[i];
        f->bad_value |= (c < 0x20 && c != '\t') || c == 0x7f;
    }
    if (name_is(name, name_len, "Content-Length")) {
        add_length(f, value, value_len);
    } else if (name_is(name, name_len, "Transfer-Encoding")) {
        f->n_te++;
        add_codings(f, value, value_len);
    } else if (name_is(name, name_len, "Host")) {
        f->n_host++;
    }
}

/* Bytes between the end of a line's text and the next field's name, or the head's end. */
#define CRLF_GAP 2
#define LAST_GAP (2 * CRLF_GAP) /* the last line's CRLF and the empty line */

void
http_framing_lines_start(struct http_framing *f, const char *head, size_t head_size,
                         const char *text_end)
{
    f->lines = true;
    f->head = (uintptr_t)head;
    f->head_end = f->head + head_size;
    f->text_end = (uintptr_t)text_end;
}

/* What the gap between a line's text and what follows says: CRLF, a bare LF (one byte less),
 * or a continuation line in between (the only way MHD puts more bytes there). */
static void
add_gap(struct http_framing *f, uintptr_t next, uintptr_t want)
{
    if (next < f->text_end || next - f->text_end > want)
        f->folded = true;
    else if (next - f->text_end < want)
        f->bare_lf = true;
}

void
http_framing_line(struct http_framing *f, const char *name, const char *value, size_t value_len)
{
    uintptr_t at = (uintptr_t)name;

    if (!f->lines)
        return;
    if (at < f->head || at >= f->head_end)
        f->folded = true; /* MHD moved the name to glue a continuation line to it */
    else
        add_gap(f, at, CRLF_GAP);
    f->text_end = (uintptr_t)value + value_len;
}

void
http_framing_lines_end(struct http_framing *f)
{
    if (f->lines)
        add_gap(f, f->head_end, LAST_GAP);
}

enum api_error
http_framing_verdict(const struct http_framing *f, bool http10, const char **detail)
{
    if (f->folded)
        *detail = "a header field is continued on the next line (obs-fold)";
    else if (f->bare_lf)
        *detail = "every line of the request head must end with CRLF, not LF alone";
    else if (f->bad_name)
        *detail = "a header field name is not a token (no spaces or control bytes)";
    else if (f->bad_value)
        *detail = "a header field value holds a control byte";
    else if (f->length_conflict)
        *detail = "Content-Length must be one decimal number, given once";
    else if (f->n_te > 0 && f->n_length > 0)
        *detail = "Content-Length and Transfer-Encoding exclude each other";
    else if (f->n_te > 0 && http10)
        *detail = "HTTP/1.0 has no Transfer-Encoding";
    else if (f->n_te > 0 && (f->n_other_codes > 0 || f->n_chunked != 1 || !f->chunked_last))
        *detail = "the only transfer coding accepted is chunked, once";
    else if (!http10 && f->n_host != 1)
        *detail = "HTTP/1.1 requests carry exactly one Host field";
    else
        return API_E_NONE;
    return API_E_BAD_REQUEST;
}

const char *
http_framing_target_refusal(const char *raw_target)
{
    bool path = true;

    for (const char *p = raw_target; *p != '\0'; p++) { /* one pass, no strchr per '%' */
        path = path && *p != '?';
        if (p[0] != '%')
            continue;
        if (p[1] == '0' && p[2] == '0')
            return "the request target holds %00";
        if (path && p[1] == '2' && (p[2] == 'F' || p[2] == 'f'))
            return "the request path holds %2F (an encoded slash)";
    }
    return NULL;
}

static enum MHD_Result
on_field(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size, const char *value,
         size_t value_size)
{
    http_framing_field(cls, key, key_size, value ? value : "", value ? value_size : 0);
    if (value != NULL)
        http_framing_line(cls, key, value, value_size);
    return MHD_YES;
}

enum api_error
http_framing_check(struct MHD_Connection *conn, const char *method, const char *version,
                   const char *target_refusal, const char **detail)
{
    struct http_framing f = {0};
    const union MHD_ConnectionInfo *size =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);

    if (target_refusal != NULL) {
        *detail = target_refusal;
        return API_E_BAD_REQUEST;
    }
    /* MHD answers the size from the first callback on, when the head is in: never NULL here. */
    if (size != NULL)
        http_framing_lines_start(&f, method, size->header_size, version + strlen(version));
    MHD_get_connection_values_n(conn, MHD_HEADER_KIND, on_field, &f);
    http_framing_lines_end(&f);
    return http_framing_verdict(&f, strcmp(version, MHD_HTTP_VERSION_1_0) == 0, detail);
}
