/* log.c -- stderr logger. A line is formatted into a stack buffer and written with one write(2),
 * so lines from different threads never interleave. Long lines are truncated, never split. */
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

void
log_write(enum log_level level, const char *fmt, ...)
{
    char line[LOG_LINE_MAX];
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
    int m = vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
    va_end(ap);
    if (m < 0)
        m = 0;
    n += (size_t)m < sizeof(line) - n - 1 ? (size_t)m : sizeof(line) - n - 2;
    line[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, n);
    (void)w; /* nowhere to report a failed log write */
}
