/* log.h -- one line per event on stderr: "<iso time> <LEVEL> <message>".
 * Thread-safe (one write(2) per line). The level is set once at start from TOCSIN_LOG_LEVEL. */
#ifndef TOCSIN_LOG_H
#define TOCSIN_LOG_H

#include <stddef.h>

enum log_level { LOG_LEVEL_ERROR, LOG_LEVEL_WARN, LOG_LEVEL_INFO, LOG_LEVEL_DEBUG };

/* Sets the threshold; call before threads start. */
void log_set_level(enum log_level level);
/* Parses "error|warn|info|debug"; returns 0, or -1 for anything else. */
int log_level_parse(const char *s, enum log_level *out);
int log_enabled(enum log_level level);
void log_write(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Copies src[0..n) to dst (cap bytes, always NUL-terminated when cap > 0) with each byte outside
 * printable ASCII (0x20..0x7e) written as \xHH and the backslash as \\, so that no input can end a
 * line or send a terminal escape. Stops before an escape that would not fit. Returns the length
 * written. log_write applies it to every message. */
size_t log_escape(char *dst, size_t cap, const char *src, size_t n);

#define LOG_ERROR(...) log_write(LOG_LEVEL_ERROR, __VA_ARGS__)
#define LOG_WARN(...) log_write(LOG_LEVEL_WARN, __VA_ARGS__)
#define LOG_INFO(...) log_write(LOG_LEVEL_INFO, __VA_ARGS__)
#define LOG_DEBUG(...)                                                                             \
    do {                                                                                           \
        if (log_enabled(LOG_LEVEL_DEBUG))                                                          \
            log_write(LOG_LEVEL_DEBUG, __VA_ARGS__);                                               \
    } while (0)

#endif
