/* sse.c -- the cursor parser and frame writers of sse.h. A frame is measured first and then
 * written into room reserved for exactly that size, so a full buffer never holds half a frame. */
#include "sse.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define I64_TEXT_MAX 21 /* "-9223372036854775808" and NUL */
_Static_assert(sizeof "-9223372036854775808" == I64_TEXT_MAX, "INT64_MIN's text and NUL");
_Static_assert(sizeof "9223372036854775807" - 1 == SSE_CURSOR_DIGITS_MAX, "INT64_MAX's digits");

int
sse_cursor_parse(const char *text, int64_t *seq)
{
    int64_t v = 0;
    size_t n = 0;

    if (text == NULL)
        return -1;
    for (; text[n] != '\0'; n++) {
        int d = text[n] - '0';
        if (d < 0 || d > 9 || n >= SSE_CURSOR_DIGITS_MAX || v > (INT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    if (n == 0)
        return -1;
    *seq = v;
    return 0;
}

void
sse_buf_init(struct sse_buf *b, size_t max)
{
    memset(b, 0, sizeof *b);
    b->max = max;
}

void
sse_buf_fini(struct sse_buf *b)
{
    free(b->data);
    sse_buf_init(b, 0);
}

size_t
sse_buf_pending(const struct sse_buf *b)
{
    return b->len - b->off;
}

size_t
sse_buf_take(struct sse_buf *b, char *out, size_t n)
{
    size_t pending = sse_buf_pending(b);

    if (n > pending)
        n = pending;
    if (n == 0)
        return 0; /* data may be NULL: no memcpy from it, even of 0 bytes */
    memcpy(out, b->data + b->off, n);
    b->off += n;
    if (b->off == b->len) {
        b->off = b->len = 0;
        free(b->data);
        b->data = NULL;
        b->cap = 0;
    }
    return n;
}

/* Makes room for need more bytes at data + len; returns where to write them, or NULL once max
 * bytes or more wait. The bound is on what waits, not on the frame: a reader that has taken
 * what it was given gets the next frame whatever its size (a frame larger than max would
 * otherwise cut every reader it is sent to, again on each resume). */
static char *
reserve(struct sse_buf *b, size_t need)
{
    size_t pending = sse_buf_pending(b), cap;
    char *p;

    if (pending >= b->max)
        return NULL;
    if (b->off > 0 && b->len + need > b->cap) {
        memmove(b->data, b->data + b->off, pending);
        b->off = 0;
        b->len = pending;
    }
    if (b->len + need > b->cap) {
        cap = b->cap > 0 ? b->cap : SSE_BUF_FIRST;
        while (cap < b->len + need)
            cap *= 2;
        if (cap > b->max + need) /* len < max here: len + need still fits */
            cap = b->max + need;
        if ((p = realloc(b->data, cap)) == NULL)
            return NULL;
        b->data = p;
        b->cap = cap;
    }
    return b->data + b->len;
}

/* Copies n bytes to out + *o unless out is NULL (the measuring pass), and counts them. */
static void
put(char *out, size_t *o, const char *s, size_t n)
{
    if (out != NULL)
        memcpy(out + *o, s, n);
    *o += n;
}

/* Writes (or with out NULL, measures) the frame; the two passes share this one function so
 * that they cannot disagree. */
static size_t
frame(char *out, const char *id, const char *event, const char *data, size_t data_len)
{
    size_t o = 0, i = 0;

    if (id != NULL) {
        put(out, &o, "id: ", 4);
        put(out, &o, id, strlen(id));
        put(out, &o, "\n", 1);
    }
    if (event != NULL) {
        put(out, &o, "event: ", 7);
        put(out, &o, event, strlen(event));
        put(out, &o, "\n", 1);
    }
    while (data != NULL) {
        size_t start = i;

        while (i < data_len && data[i] != '\n' && data[i] != '\r')
            i++;
        put(out, &o, "data: ", 6);
        put(out, &o, data + start, i - start);
        put(out, &o, "\n", 1);
        if (i == data_len)
            break;
        i += data[i] == '\r' && i + 1 < data_len && data[i + 1] == '\n' ? 2 : 1;
    }
    put(out, &o, "\n", 1);
    return o;
}

static enum sse_status
append(struct sse_buf *b, const char *id, const char *event, const char *data, size_t data_len)
{
    size_t n = frame(NULL, id, event, data, data_len);
    char *at = reserve(b, n);

    if (at == NULL)
        return SSE_E_FULL;
    frame(at, id, event, data, data_len);
    b->len += n;
    return SSE_OK;
}

/* True when the n bytes at s hold no CR, no LF and no NUL. */
static bool
one_line(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\r' || s[i] == '\n' || s[i] == '\0')
            return false;
    }
    return true;
}

static bool
event_ok(const char *event, const char *data, size_t data_len)
{
    if (event != NULL && (event[0] == '\0' || !one_line(event, strlen(event))))
        return false;
    return data == NULL || memchr(data, '\0', data_len) == NULL;
}

enum sse_status
sse_write_event(struct sse_buf *b, int64_t id, const char *event, const char *data, size_t data_len)
{
    char id_text[I64_TEXT_MAX];

    if (!event_ok(event, data, data_len))
        return SSE_E_INVALID;
    snprintf(id_text, sizeof id_text, "%" PRId64, id);
    return append(b, id >= 0 ? id_text : NULL, event, data, data_len);
}

char *
sse_frame_event(int64_t id, const char *event, const char *data, size_t data_len, size_t *len)
{
    char id_text[I64_TEXT_MAX], *out;

    if (!event_ok(event, data, data_len))
        return NULL;
    snprintf(id_text, sizeof id_text, "%" PRId64, id);
    *len = frame(NULL, id >= 0 ? id_text : NULL, event, data, data_len);
    if ((out = malloc(*len + 1)) == NULL)
        return NULL;
    frame(out, id >= 0 ? id_text : NULL, event, data, data_len);
    out[*len] = '\0';
    return out;
}

enum sse_status
sse_buf_append(struct sse_buf *b, const char *frames, size_t n)
{
    char *at = reserve(b, n);

    if (at == NULL)
        return SSE_E_FULL;
    memcpy(at, frames, n);
    b->len += n;
    return SSE_OK;
}

enum sse_status
sse_write_comment(struct sse_buf *b, const char *text)
{
    size_t n = strlen(text);
    char *at;

    if (!one_line(text, n))
        return SSE_E_INVALID;
    if ((at = reserve(b, n + 4)) == NULL)
        return SSE_E_FULL;
    memcpy(at, ": ", 2);
    memcpy(at + 2, text, n);
    memcpy(at + 2 + n, "\n\n", 2);
    b->len += n + 4;
    return SSE_OK;
}

enum sse_status
sse_write_retry(struct sse_buf *b, int64_t ms)
{
    char line[sizeof "retry: \n\n" + I64_TEXT_MAX];
    int n;
    char *at;

    if (ms < 0)
        return SSE_E_INVALID;
    n = snprintf(line, sizeof line, "retry: %" PRId64 "\n\n", ms);
    if ((at = reserve(b, (size_t)n)) == NULL)
        return SSE_E_FULL;
    memcpy(at, line, (size_t)n);
    b->len += (size_t)n;
    return SSE_OK;
}
