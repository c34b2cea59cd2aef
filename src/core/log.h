/* log.h -- one line per event on stderr, as text ("<iso time> <LEVEL> <message> key=value...") or
 * as one JSON object per line (TOCSIN_LOG_FORMAT=json). Thread-safe (one write(2) per line). The
 * level and the format are set once at start; the request a thread is handling (its request id
 * and trace id) is added to every line that thread writes meanwhile. */
#ifndef TOCSIN_LOG_H
#define TOCSIN_LOG_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum log_level { LOG_LEVEL_ERROR, LOG_LEVEL_WARN, LOG_LEVEL_INFO, LOG_LEVEL_DEBUG };
enum log_format { LOG_FORMAT_TEXT, LOG_FORMAT_JSON };

/* Set the threshold and the format; call before threads start. */
void log_set_level(enum log_level level);
void log_set_format(enum log_format format);
/* Parses "error|warn|info|debug"; returns 0, or -1 for anything else. */
int log_level_parse(const char *s, enum log_level *out);
/* Parses "text|json"; returns 0, or -1 for anything else. */
int log_format_parse(const char *s, enum log_format *out);
int log_enabled(enum log_level level);
void log_write(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A named value added to one line: " key=value" in text, "key":"value" in JSON. value is any
 * bytes (escaped like the message); a number is written bare in JSON (the caller formatted it);
 * json_only leaves it out of the text format, whose message already says it. */
struct log_field {
    const char *key; /* [a-z_]+ */
    const char *value;
    bool number;
    bool json_only;
};
void log_fields(enum log_level level, const struct log_field *f, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The request this thread is handling: request_id and trace_id (either may be NULL) go on every
 * line the thread writes until the next call; log_context_set(NULL, NULL) ends it. The strings are
 * borrowed and must stay valid until then. */
void log_context_set(const char *request_id, const char *trace_id);

/* Copies src[0..n) to dst (cap bytes, always NUL-terminated when cap > 0) with each byte outside
 * printable ASCII (0x20..0x7e) written as \xHH and the backslash as \\, so that no input can end a
 * line or send a terminal escape. Stops before an escape that would not fit. Returns the length
 * written. The text format applies it to every message and value. */
size_t log_escape(char *dst, size_t cap, const char *src, size_t n);
/* The same for the inside of a JSON string: printable ASCII but '"' and '\' as is, those two
 * backslash-escaped, control bytes as \u00XX, each valid UTF-8 character as \uXXXX (a surrogate
 * pair above U+FFFF), each byte of an invalid sequence as \ufffd. The output is printable ASCII
 * and always a valid JSON string body, whatever the input. Stops before an escape that would not
 * fit. Returns the length written. */
size_t log_json_escape(char *dst, size_t cap, const char *src, size_t n);

/* At most one line per every_ms for one kind of event that anyone can cause (a client, a peer),
 * from any thread, with the count of those not logged: the first event logs, then one per
 * interval. Define one with LOG_THROTTLE_INIT(every_ms) as a static. */
struct log_throttle {
    pthread_mutex_t lock;
    int64_t every_ms;
    bool logged; /* a line was logged, at logged_ms (monotonic) */
    int64_t logged_ms;
    unsigned long unlogged; /* events since then that were not logged */
};
#define LOG_THROTTLE_INIT(every)                                                                   \
    {                                                                                              \
        PTHREAD_MUTEX_INITIALIZER, (every), false, 0, 0                                            \
    }
/* An event at now_ms (monotonic): true when it may be logged, with *unlogged the events not
 * logged since the last line and *since_ms the time since that line (both 0 for the first);
 * false when it is only counted. */
bool log_throttle_take(struct log_throttle *t, int64_t now_ms, unsigned long *unlogged,
                       int64_t *since_ms);

#define LOG_ERROR(...) log_write(LOG_LEVEL_ERROR, __VA_ARGS__)
#define LOG_WARN(...) log_write(LOG_LEVEL_WARN, __VA_ARGS__)
#define LOG_INFO(...) log_write(LOG_LEVEL_INFO, __VA_ARGS__)
#define LOG_DEBUG(...)                                                                             \
    do {                                                                                           \
        if (log_enabled(LOG_LEVEL_DEBUG))                                                          \
            log_write(LOG_LEVEL_DEBUG, __VA_ARGS__);                                               \
    } while (0)

#endif
