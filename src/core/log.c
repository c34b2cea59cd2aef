/* log.c -- stderr logger. A line is formatted into a stack buffer and written with one write(2),
 * so lines from different threads never interleave. Long lines are truncated, never split, and a
 * JSON line is always closed. Every message and value is escaped before it is written (log_escape
 * for text, log_json_escape for JSON): request paths, headers, database errors that quote input
 * all pass through here, and no byte of theirs can end a line, start a forged one, break the JSON
 * of a line or reach a terminal as an escape sequence. */
#include "log.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "hex.h"

#define LOG_LINE_MAX 4096               /* bytes of one line, newline included */
#define LOG_BODY_MAX (LOG_LINE_MAX - 2) /* room left for "}\n" (JSON) or "\n" (text) */
#define LOG_MSG_MAX 2048                /* bytes of a formatted message before escaping */
#define LOG_VALUE_MAX 1024              /* bytes of one escaped member value */
#define LOG_MEMBERS_ROOM 1536           /* bytes the message leaves for the members */
#define LOG_TS_MAX 32

static enum log_level threshold = LOG_LEVEL_INFO;
static enum log_format format = LOG_FORMAT_TEXT;
static const char *const names[] = {"ERROR", "WARN", "INFO", "DEBUG"};
static const char *const json_names[] = {"error", "warn", "info", "debug"};

static _Thread_local const char *ctx_request_id;
static _Thread_local const char *ctx_trace_id;

struct line {
    char buf[LOG_LINE_MAX];
    size_t len; /* <= LOG_BODY_MAX until the end is written */
};

bool
log_throttle_take(struct log_throttle *t, int64_t now_ms, unsigned long *unlogged,
                  int64_t *since_ms)
{
    bool take;

    pthread_mutex_lock(&t->lock);
    take = !t->logged || now_ms - t->logged_ms >= t->every_ms;
    if (take) {
        *unlogged = t->unlogged;
        *since_ms = t->logged ? now_ms - t->logged_ms : 0;
        t->logged = true;
        t->logged_ms = now_ms;
        t->unlogged = 0;
    } else {
        t->unlogged++;
    }
    pthread_mutex_unlock(&t->lock);
    return take;
}

void
log_set_level(enum log_level level)
{
    threshold = level;
}

void
log_set_format(enum log_format f)
{
    format = f;
}

int
log_level_parse(const char *s, enum log_level *out)
{
    for (int i = 0; i <= LOG_LEVEL_DEBUG; i++) {
        if (strcasecmp(s, names[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    }
    return -1;
}

int
log_format_parse(const char *s, enum log_format *out)
{
    if (strcmp(s, "text") == 0)
        *out = LOG_FORMAT_TEXT;
    else if (strcmp(s, "json") == 0)
        *out = LOG_FORMAT_JSON;
    else
        return -1;
    return 0;
}

int
log_enabled(enum log_level level)
{
    return level <= threshold;
}

void
log_context_set(const char *request_id, const char *trace_id)
{
    ctx_request_id = request_id;
    ctx_trace_id = trace_id;
}

size_t
log_escape(char *dst, size_t cap, const char *src, size_t n)
{
    size_t len = 0;

    if (cap == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)src[i];
        size_t need = c == '\\' ? 2 : (c < 0x20 || c > 0x7e) ? 4 : 1;
        if (len + need >= cap)
            break;
        if (c == '\\') {
            dst[len++] = '\\';
            dst[len++] = '\\';
        } else if (need == 4) {
            dst[len++] = '\\';
            dst[len++] = 'x';
            dst[len++] = hex_digit(c >> 4);
            dst[len++] = hex_digit(c & 0xf);
        } else {
            dst[len++] = (char)c;
        }
    }
    dst[len] = '\0';
    return len;
}

/* The length (2..4) of the well-formed UTF-8 sequence at s (RFC 3629: shortest form, no
 * surrogates, at most U+10FFFF) with its code point in *cp, or 0 when it is not one. */
static size_t
utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned char c = s[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xbf; /* the range of the second byte */

    if (c >= 0xc2 && c <= 0xdf)
        len = 2, *cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3, *cp = c & 0x0f, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4, *cp = c & 0x07, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        *cp = *cp << 6 | (s[i] & 0x3f);
    }
    return len;
}

static void
put_u(char *out, uint32_t u)
{

    out[0] = '\\';
    out[1] = 'u';
    for (int i = 0; i < 4; i++)
        out[2 + i] = hex_digit((u >> (12 - 4 * i)) & 0xf);
}

size_t
log_json_escape(char *dst, size_t cap, const char *src, size_t n)
{
    const unsigned char *s = (const unsigned char *)src;
    size_t len = 0, i = 0;

    if (cap == 0)
        return 0;
    while (i < n) {
        char esc[12];
        size_t need = 1, used = 1;
        uint32_t cp = s[i];
        if (s[i] == '"' || s[i] == '\\') {
            esc[0] = '\\';
            esc[1] = (char)s[i];
            need = 2;
        } else if (s[i] >= 0x20 && s[i] <= 0x7e) {
            esc[0] = (char)s[i];
        } else {
            if (s[i] >= 0x80 && (used = utf8_decode(s + i, n - i, &cp)) == 0) {
                used = 1; /* one byte of an invalid sequence */
                cp = 0xfffd;
            }
            if (cp >= 0x10000) {
                put_u(esc, 0xd800 + ((cp - 0x10000) >> 10));
                put_u(esc + 6, 0xdc00 + ((cp - 0x10000) & 0x3ff));
                need = 12;
            } else {
                put_u(esc, cp);
                need = 6;
            }
        }
        if (len + need >= cap)
            break;
        memcpy(dst + len, esc, need);
        len += need;
        i += used;
    }
    dst[len] = '\0';
    return len;
}

static void
put_raw(struct line *l, const char *s, size_t n)
{
    if (l->len + n <= LOG_BODY_MAX) {
        memcpy(l->buf + l->len, s, n);
        l->len += n;
    }
}

/* " key=value" (text) or ,"key":"value" (JSON); a value is cut to LOG_VALUE_MAX bytes, so one
 * long value leaves room for the others, and a value cut short still closes. */
static void
put_member(struct line *l, const char *key, const char *v, size_t vn, bool number)
{
    char head[64];
    int k = snprintf(head, sizeof head, format == LOG_FORMAT_JSON ? ",\"%s\":" : " %s=", key);
    size_t room;

    if (k < 0 || (size_t)k >= sizeof head || l->len + (size_t)k + 2 > LOG_BODY_MAX)
        return;
    put_raw(l, head, (size_t)k);
    room = LOG_BODY_MAX + 1 - l->len; /* text: the escape's NUL may take the last byte */
    if (format == LOG_FORMAT_TEXT) {
        l->len += log_escape(l->buf + l->len, room < LOG_VALUE_MAX ? room : LOG_VALUE_MAX, v, vn);
        return;
    }
    /* A number is ours (formatted by the caller); anything else found there becomes a string. */
    if (number && vn > 0 && strspn(v, "-+.0123456789eE") == vn &&
        (v[0] == '-' || (v[0] >= '0' && v[0] <= '9')) && v[vn - 1] >= '0' && v[vn - 1] <= '9' &&
        l->len + vn <= LOG_BODY_MAX) {
        put_raw(l, v, vn);
        return;
    }
    l->buf[l->len++] = '"';
    room = LOG_BODY_MAX - l->len; /* JSON: and one byte for the closing quote */
    l->len += log_json_escape(l->buf + l->len, room < LOG_VALUE_MAX ? room : LOG_VALUE_MAX, v, vn);
    l->buf[l->len++] = '"';
}

static void
put_start(struct line *l, enum log_level level, const char *msg, size_t mn)
{
    char ts[LOG_TS_MAX];
    struct timespec now;
    struct tm tm;

    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    size_t t = strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(ts + t, sizeof ts - t, ".%03ldZ", now.tv_nsec / 1000000);
    if (format == LOG_FORMAT_TEXT) {
        l->len = (size_t)snprintf(l->buf, LOG_BODY_MAX, "%s %s ", ts, names[level]);
        l->len += log_escape(l->buf + l->len, LOG_BODY_MAX - l->len - LOG_MEMBERS_ROOM, msg, mn);
        return;
    }
    l->len = (size_t)snprintf(l->buf, LOG_BODY_MAX, "{\"ts\":\"%s\",\"level\":\"%s\",\"msg\":\"",
                              ts, json_names[level]);
    /* The message takes what is left but room for the closing quote and the members. */
    l->len += log_json_escape(l->buf + l->len, LOG_BODY_MAX - l->len - LOG_MEMBERS_ROOM, msg, mn);
    l->buf[l->len++] = '"';
}

static void
put_context(struct line *l)
{
    if (ctx_request_id != NULL)
        put_member(l, "request_id", ctx_request_id, strlen(ctx_request_id), false);
    if (ctx_trace_id != NULL)
        put_member(l, "trace_id", ctx_trace_id, strlen(ctx_trace_id), false);
}

static void vlog(enum log_level level, const struct log_field *f, size_t n, const char *fmt,
                 va_list ap) __attribute__((format(printf, 4, 0)));

static void
vlog(enum log_level level, const struct log_field *f, size_t n, const char *fmt, va_list ap)
{
    struct line l;
    char msg[LOG_MSG_MAX];
    int m = vsnprintf(msg, sizeof msg, fmt, ap);
    size_t mn = m < 0 ? 0 : (size_t)m < sizeof msg ? (size_t)m : sizeof msg - 1;

    put_start(&l, level, msg, mn);
    /* JSON: the ids first, so that no field can crowd them out (member order means nothing
     * there); text: after the fields, at the end of the line where they are easy to find. */
    if (format == LOG_FORMAT_JSON)
        put_context(&l);
    for (size_t i = 0; i < n; i++)
        if (f[i].value != NULL && (format == LOG_FORMAT_JSON || !f[i].json_only))
            put_member(&l, f[i].key, f[i].value, strlen(f[i].value), f[i].number);
    if (format == LOG_FORMAT_TEXT)
        put_context(&l);
    if (format == LOG_FORMAT_JSON)
        l.buf[l.len++] = '}';
    l.buf[l.len++] = '\n';
    ssize_t w = write(STDERR_FILENO, l.buf, l.len);
    (void)w; /* nowhere to report a failed log write */
}

void
log_write(enum log_level level, const char *fmt, ...)
{
    va_list ap;

    if (!log_enabled(level))
        return;
    va_start(ap, fmt);
    vlog(level, NULL, 0, fmt, ap);
    va_end(ap);
}

void
log_fields(enum log_level level, const struct log_field *f, size_t n, const char *fmt, ...)
{
    va_list ap;

    if (!log_enabled(level))
        return;
    va_start(ap, fmt);
    vlog(level, f, n, fmt, ap);
    va_end(ap);
}
