/* log.c -- stderr logger. A line is formatted into a stack buffer and written with one write(2),
 * so lines from different threads never interleave. Long lines are truncated, never split. Every
 * message is escaped (log_escape) before it is written: request paths, headers, database errors
 * that quote input all pass through here, and no byte of theirs can end a line or start a forged
 * one, nor reach a terminal as an escape sequence. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define LOG_LINE_MAX 2048

static enum log_level threshold = LOG_LEVEL_INFO;
static const char *const names[] = {"ERROR", "WARN", "INFO", "DEBUG"};

void
log_set_level(enum log_level level)
{
    threshold = level;
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
log_enabled(enum log_level level)
{
    return level <= threshold;
}

size_t
log_escape(char *dst, size_t cap, const char *src, size_t n)
{
    static const char hex[] = "0123456789abcdef";
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
            dst[len++] = hex[c >> 4];
            dst[len++] = hex[c & 0xf];
        } else {
            dst[len++] = (char)c;
        }
    }
    dst[len] = '\0';
    return len;
}

void
log_write(enum log_level level, const char *fmt, ...)
{
    char line[LOG_LINE_MAX], msg[LOG_LINE_MAX];
    struct timespec ts;
    struct tm tm;
    size_t n;
    va_list ap;

    if (!log_enabled(level))
        return;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    n = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
    n += (size_t)snprintf(line + n, sizeof(line) - n, ".%03ldZ %s ", ts.tv_nsec / 1000000,
                          names[level]);
    va_start(ap, fmt);
    int m = vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (m < 0)
        m = 0;
    n += log_escape(line + n, sizeof(line) - n - 1, msg,
                    (size_t)m < sizeof(msg) ? (size_t)m : sizeof(msg) - 1);
    line[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, n);
    (void)w; /* nowhere to report a failed log write */
}
