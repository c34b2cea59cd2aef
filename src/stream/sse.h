/* sse.h -- Server-Sent Events as the WHATWG HTML standard defines them ("Server-sent events",
 * the event stream format): the resume cursor a client sends back (Last-Event-ID or
 * ?last_event_id=), and frames written whole into a bounded, growable per-stream buffer that the
 * HTTP layer drains. Pure; a buffer is not locked here: its stream's owner serialises access. */
#ifndef TOCSIN_SSE_H
#define TOCSIN_SSE_H

#include <stddef.h>
#include <stdint.h>

#define SSE_CURSOR_DIGITS_MAX 19 /* INT64_MAX has 19 digits */
#define SSE_BUF_FIRST 512        /* bytes allocated by the first write */

/* Pending bytes are data[off..len). A write is refused once max or more of them wait, so at most
 * max plus one frame wait. Zero-initialised by sse_buf_init. */
struct sse_buf {
    char *data; /* malloc'ed, NULL while empty */
    size_t off, len, cap;
    size_t max;
};

enum sse_status {
    SSE_OK,
    SSE_E_FULL,    /* max pending bytes or more wait, or no memory: nothing was written */
    SSE_E_INVALID, /* a value the format cannot carry (CR, LF or NUL where banned): a bug */
};

/* Parses a cursor: 1..SSE_CURSOR_DIGITS_MAX ASCII digits (no sign, space or other byte) whose
 * value fits in int64. Returns 0 with *seq set, or -1 for anything else (*seq untouched): the
 * caller answers garbage with a reset, never with an error. text may be NULL (-1). */
int sse_cursor_parse(const char *text, int64_t *seq);

/* An empty buffer that takes frames while fewer than max bytes wait (max 0: none). Nothing is
 * allocated yet. */
void sse_buf_init(struct sse_buf *b, size_t max);
/* Frees the storage; b is then as after sse_buf_init with max 0. Accepts a zeroed buffer. */
void sse_buf_fini(struct sse_buf *b);
/* Bytes written and not taken yet. */
size_t sse_buf_pending(const struct sse_buf *b);
/* Copies up to n pending bytes into out and drops them from b; returns how many. When b
 * becomes empty its storage is freed: an idle stream holds no buffer (thousands of them wait
 * between heartbeats), and a frame every few seconds costs one small allocation. */
size_t sse_buf_take(struct sse_buf *b, char *out, size_t n);

/* Appends one event: "id: <id>" when id >= 0, "event: <event>" when event is not NULL (it must
 * be non-empty, without CR, LF or NUL), one "data: " line per line of data when data is not NULL
 * (data_len bytes, no NUL; CR LF, LF and CR all end a line, so the client reads each of them
 * back as LF), then the blank line that dispatches it. Data "" is one empty data line: the
 * client dispatches an event with empty data. Without data (NULL) the client dispatches nothing
 * and only the id takes effect. All or nothing: SSE_OK, or an error with b unchanged. */
enum sse_status sse_write_event(struct sse_buf *b, int64_t id, const char *event, const char *data,
                                size_t data_len);
/* The frame sse_write_event would append, as a malloc'ed NUL-terminated string of *len bytes
 * (free() it): one event built once and appended to many buffers with sse_buf_append. NULL for
 * what sse_write_event calls invalid, or out of memory. */
char *sse_frame_event(int64_t id, const char *event, const char *data, size_t data_len,
                      size_t *len);
/* Appends n bytes that already are whole frames (from sse_frame_event). All or nothing: SSE_OK,
 * or SSE_E_FULL with b unchanged. */
enum sse_status sse_buf_append(struct sse_buf *b, const char *frames, size_t n);
/* Appends ": <text>" and a blank line: a heartbeat the client ignores. text without CR, LF. */
enum sse_status sse_write_comment(struct sse_buf *b, const char *text);
/* Appends "retry: <ms>" and a blank line: the client's reconnection delay. ms >= 0. */
enum sse_status sse_write_retry(struct sse_buf *b, int64_t ms);

#endif
