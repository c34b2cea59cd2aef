/* test_log.c -- log_escape and log_json_escape: no input byte can end a log line, start a forged
 * one, break a JSON line or reach a terminal as an escape sequence; printable ASCII passes
 * unchanged; valid UTF-8 keeps its characters in JSON, invalid bytes become U+FFFD; truncation
 * never cuts an escape in half. Then whole lines in both formats, read back from stderr: one line
 * each, the request context and the fields in them, and every JSON line parsed by jansson. Last,
 * log_throttle's one line per interval and its count of the events not logged. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "log.h"

static const struct {
    const char *in;
    size_t n; /* 0: strlen(in) */
    const char *want;
} cases[] = {
    {"GET /v1/meetings 200", 0, "GET /v1/meetings 200"},
    {"/v1/x\n2026-01-01T00:00:00.000Z INFO forged", 0,
     "/v1/x\\x0a2026-01-01T00:00:00.000Z INFO forged"},
    {"a\rb", 0, "a\\x0db"},
    {"\x1b[31mred", 0, "\\x1b[31mred"},
    {"tab\there", 0, "tab\\x09here"},
    {"del\x7f", 0, "del\\x7f"},
    {"caf\xc3\xa9", 0, "caf\\xc3\\xa9"},
    {"back\\slash", 0, "back\\\\slash"},
    {"\\x0a", 0, "\\\\x0a"}, /* a literal "\x0a" in input stays distinguishable */
    {"nul\0after", 9, "nul\\x00after"},
    {"", 0, ""},
};

static const struct {
    const char *in;
    size_t n; /* 0: strlen(in) */
    const char *want;
} json_table[] = {
    {"GET /v1/meetings 200", 0, "GET /v1/meetings 200"},
    {"a\"b\\c", 0, "a\\\"b\\\\c"},
    {"line\nforged\r", 0, "line\\u000aforged\\u000d"},
    {"\x1b[31m\x7f", 0, "\\u001b[31m\\u007f"},
    {"nul\0x", 5, "nul\\u0000x"},
    {"caf\xc3\xa9", 0, "caf\\u00e9"},                        /* U+00E9 */
    {"\xc2\x9b", 0, "\\u009b"},                              /* C1 CSI as UTF-8: escaped */
    {"\xe2\x80\xa8", 0, "\\u2028"},                          /* line separator */
    {"\xf0\x9f\x98\x80", 0, "\\ud83d\\ude00"},               /* U+1F600: a surrogate pair */
    {"\xff\xfe", 0, "\\ufffd\\ufffd"},                       /* never valid in UTF-8 */
    {"\xc3", 0, "\\ufffd"},                                  /* cut short */
    {"\xc0\xaf", 0, "\\ufffd\\ufffd"},                       /* overlong '/' */
    {"\xed\xa0\x80", 0, "\\ufffd\\ufffd\\ufffd"},            /* a surrogate, U+D800 */
    {"\xf4\x90\x80\x80", 0, "\\ufffd\\ufffd\\ufffd\\ufffd"}, /* past U+10FFFF */
    {"\xe2\x82x", 0, "\\ufffd\\ufffdx"},                     /* a bad continuation */
};

/* Parses "<body>" as a JSON string; returns its value (malloc'ed) or NULL. */
static char *
json_string_of(const char *body)
{
    size_t n = strlen(body);
    char *doc = malloc(n + 3);
    json_error_t e;

    doc[0] = '"';
    memcpy(doc + 1, body, n);
    doc[n + 1] = '"';
    doc[n + 2] = '\0';
    json_t *v = json_loads(doc, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
    free(doc);
    char *s = v && json_is_string(v) ? strdup(json_string_value(v)) : NULL;
    json_decref(v);
    return s;
}

static bool
printable(const char *s)
{
    for (; *s; s++)
        if (*s < 0x20 || *s > 0x7e)
            return false;
    return true;
}

static void
json_cases(void)
{
    char out[256];

    for (size_t i = 0; i < sizeof json_table / sizeof json_table[0]; i++) {
        size_t n = json_table[i].n ? json_table[i].n : strlen(json_table[i].in);
        size_t len = log_json_escape(out, sizeof out, json_table[i].in, n);
        CHECK(strcmp(out, json_table[i].want) == 0, "json case %zu: got %s want %s", i, out,
              json_table[i].want);
        CHECK(len == strlen(out), "json case %zu: length %zu", i, len);
        char *back = json_string_of(out);
        CHECK(back != NULL, "json case %zu: %s is not a JSON string body", i, out);
        free(back);
    }
    /* Valid UTF-8 reads back as itself. */
    const char *utf8 = "Gr\xc3\xbc\xc3\x9f \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80 \"q\" \\";
    log_json_escape(out, sizeof out, utf8, strlen(utf8));
    char *back = json_string_of(out);
    CHECK(back != NULL && strcmp(back, utf8) == 0, "UTF-8 round trip: %s", back ? back : "(null)");
    free(back);
}

/* Every byte alone and every pair of bytes: the output is printable ASCII and a JSON string. */
static void
json_every_byte(void)
{
    char out[64], in[2];

    for (int a = 0; a < 256; a++) {
        in[0] = (char)a;
        log_json_escape(out, sizeof out, in, 1);
        char *back = json_string_of(out);
        CHECK(back != NULL && printable(out), "byte 0x%02x: %s", a, out);
        free(back);
        for (int b = 0; b < 256; b++) {
            in[1] = (char)b;
            log_json_escape(out, sizeof out, in, 2);
            if (!printable(out) || strchr(out, '"') != NULL) {
                char *raw = strchr(out, '"');
                /* a quote is only ever escaped */
                CHECK(raw != NULL && raw > out && raw[-1] == '\\', "bytes %02x %02x: %s", a, b,
                      out);
            }
            back = json_string_of(out);
            CHECK(back != NULL, "bytes %02x %02x: %s is not a JSON string", a, b, out);
            free(back);
        }
    }
}

static void
json_truncation(void)
{
    char out[16];

    /* "ab" + \u000a needs 8 bytes and the NUL: with 8 it stops before the escape. */
    CHECK(log_json_escape(out, 8, "ab\ncd", 5) == 2 && strcmp(out, "ab") == 0, "cut: %s", out);
    CHECK(log_json_escape(out, 9, "ab\ncd", 5) == 8 && strcmp(out, "ab\\u000a") == 0, "fits: %s",
          out);
    /* a surrogate pair is written whole or not at all */
    CHECK(log_json_escape(out, 12, "\xf0\x9f\x98\x80", 4) == 0, "pair cut: %s", out);
    CHECK(log_json_escape(out, 1, "abc", 3) == 0 && out[0] == '\0', "cap 1: empty");
}

/* Runs fn with stderr sent to a temporary file; returns what was written (malloc'ed). */
static char *
capture(void (*fn)(void))
{
    char path[] = "/tmp/test_log_XXXXXX";
    int fd = mkstemp(path), saved = dup(STDERR_FILENO);
    char *text = calloc(1, 65536);

    unlink(path);
    dup2(fd, STDERR_FILENO);
    fn();
    dup2(saved, STDERR_FILENO);
    close(saved);
    lseek(fd, 0, SEEK_SET);
    ssize_t n = read(fd, text, 65535);
    text[n > 0 ? n : 0] = '\0';
    close(fd);
    return text;
}

static const char hostile[] = "/v1/x\n2026-01-01T00:00:00.000Z ERROR forged\r\x1b[2J\"}\xff\xc3";

static void
write_lines(void)
{
    struct log_field f[] = {
        {"route", "/v1/meetings/{id}", false, false},
        {"path", hostile, false, true},
        {"status", "404", true, true},
        {"duration_ms", "0.250", true, true},
        {"bogus_number", "1}{", true, true}, /* not a number: written as a string */
        {"absent", NULL, false, false},
    };
    log_context_set("req-1", "4bf92f3577b34da6a3ce929d0e0e4736");
    log_fields(LOG_LEVEL_INFO, f, sizeof f / sizeof f[0], "http GET %s 404", hostile);
    log_context_set(NULL, NULL);
    LOG_WARN("no context %s", hostile);
    LOG_DEBUG("below the threshold");
}

static void
write_long(void)
{
    static char big[8000];
    memset(big, '\n', sizeof big - 1);
    struct log_field f[] = {{"path", big, false, true}, {"route", "/r", false, false}};
    log_context_set("req-long", NULL);
    log_fields(LOG_LEVEL_ERROR, f, 2, "%s", big);
    log_context_set(NULL, NULL);
}

static void
lines(void)
{
    log_set_level(LOG_LEVEL_INFO);
    log_set_format(LOG_FORMAT_TEXT);
    char *text = capture(write_lines);
    char *nl = strchr(text, '\n');
    CHECK(nl != NULL && strchr(nl + 1, '\n') != NULL && strchr(nl + 1, '\n')[1] == '\0',
          "text: two lines: %s", text);
    CHECK(strstr(text, " INFO http GET /v1/x\\x0a2026-01-01T00:00:00.000Z ERROR forged\\x0d"
                       "\\x1b[2J\"}\\xff\\xc3 404 route=/v1/meetings/{id} request_id=req-1 "
                       "trace_id=4bf92f3577b34da6a3ce929d0e0e4736\n") != NULL,
          "text line: %s", text);
    CHECK(strstr(text, "path=") == NULL && strstr(text, "status=") == NULL, "json-only fields");
    CHECK(strstr(text, " WARN no context /v1/x\\x0a") != NULL && strstr(nl + 1, "req-1") == NULL,
          "context ended: %s", text);
    free(text);

    log_set_format(LOG_FORMAT_JSON);
    text = capture(write_lines);
    size_t n_lines = 0;
    for (char *line = text, *end; (end = strchr(line, '\n')) != NULL; line = end + 1) {
        *end = '\0';
        json_error_t e;
        json_t *v = json_loads(line, 0, &e);
        CHECK(v != NULL && json_is_object(v), "JSON line %zu does not parse (%s): %s", n_lines,
              e.text, line);
        CHECK(printable(line), "JSON line %zu: not printable ASCII", n_lines);
        if (v != NULL && n_lines == 0) {
            CHECK(strcmp(json_string_value(json_object_get(v, "level")), "info") == 0, "level");
            CHECK(strncmp(json_string_value(json_object_get(v, "msg")), "http GET /v1/x\n", 15) ==
                      0,
                  "msg keeps the bytes, escaped");
            CHECK(strcmp(json_string_value(json_object_get(v, "request_id")), "req-1") == 0, "id");
            CHECK(strcmp(json_string_value(json_object_get(v, "trace_id")),
                         "4bf92f3577b34da6a3ce929d0e0e4736") == 0,
                  "trace id");
            CHECK(json_integer_value(json_object_get(v, "status")) == 404, "status a number");
            CHECK(json_is_real(json_object_get(v, "duration_ms")), "duration a number");
            CHECK(json_is_string(json_object_get(v, "bogus_number")), "not a number: a string");
            CHECK(json_object_get(v, "absent") == NULL, "NULL values left out");
            const char *path = json_string_value(json_object_get(v, "path"));
            CHECK(path != NULL && strncmp(path, hostile, strlen(hostile) - 2) == 0 &&
                      strcmp(path + strlen(hostile) - 2, "\xef\xbf\xbd\xef\xbf\xbd") == 0,
                  "path: the input, invalid bytes as U+FFFD");
            const char *ts = json_string_value(json_object_get(v, "ts"));
            CHECK(ts != NULL && strlen(ts) == 24 && ts[23] == 'Z', "ts %s", ts ? ts : "");
        }
        if (v != NULL && n_lines == 1)
            CHECK(json_object_get(v, "request_id") == NULL, "no context on the second line");
        json_decref(v);
        n_lines++;
    }
    CHECK(n_lines == 2, "JSON: %zu lines", n_lines);
    free(text);

    /* A message longer than a line: cut, still one line of valid JSON. */
    log_set_format(LOG_FORMAT_JSON);
    text = capture(write_long);
    json_error_t e;
    json_t *v = json_loads(text, JSON_DISABLE_EOF_CHECK, &e);
    CHECK(v != NULL && strchr(text, '\n') == text + strlen(text) - 1, "long JSON line: %s", e.text);
    CHECK(v != NULL && json_string_value(json_object_get(v, "request_id")) != NULL &&
              strcmp(json_string_value(json_object_get(v, "request_id")), "req-long") == 0,
          "a long message and a long field leave the request id in");
    CHECK(strlen(text) <= 4096, "at most a line's bytes: %zu", strlen(text));
    json_decref(v);
    free(text);
    /* The same in text: cut, one line, the id still at its end. */
    log_set_format(LOG_FORMAT_TEXT);
    text = capture(write_long);
    CHECK(strchr(text, '\n') == text + strlen(text) - 1 && strlen(text) <= 4096 &&
              strstr(text, " route=/r request_id=req-long\n") != NULL,
          "long text line: %zu bytes: %.80s", strlen(text), text + strlen(text) - 60);
    free(text);
}

/* log_throttle: the first event logs, the rest of its interval are counted, the first event of
 * the next interval logs with that count and the time since the last line. */
static void
throttle(void)
{
    static struct log_throttle t = LOG_THROTTLE_INIT(60000);
    unsigned long unlogged = 99;
    int64_t since_ms = 99;

    CHECK(log_throttle_take(&t, 1000, &unlogged, &since_ms) && unlogged == 0 && since_ms == 0,
          "the first event logs");
    for (int i = 0; i < 5; i++)
        CHECK(!log_throttle_take(&t, 1000 + i * 1000, &unlogged, &since_ms), "event %d counted", i);
    CHECK(!log_throttle_take(&t, 60999, &unlogged, &since_ms), "59.999 s later: counted");
    CHECK(log_throttle_take(&t, 61000, &unlogged, &since_ms) && unlogged == 6 && since_ms == 60000,
          "60 s later: logs with 6 not logged (got %lu, %lld ms)", unlogged, (long long)since_ms);
    CHECK(log_throttle_take(&t, 200000, &unlogged, &since_ms) && unlogged == 0 &&
              since_ms == 139000,
          "a quiet interval: logs with none (got %lu)", unlogged);
}

int
main(void)
{
    char out[256];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t n = cases[i].n ? cases[i].n : strlen(cases[i].in);
        size_t len = log_escape(out, sizeof(out), cases[i].in, n);
        CHECK(strcmp(out, cases[i].want) == 0, "case %zu: got %s want %s", i, out, cases[i].want);
        CHECK(len == strlen(out), "case %zu: length %zu", i, len);
    }
    /* Every byte value: the output holds only printable ASCII. */
    for (int c = 0; c < 256; c++) {
        char in = (char)c;
        log_escape(out, sizeof(out), &in, 1);
        for (const char *p = out; *p; p++)
            CHECK(*p >= 0x20 && *p <= 0x7e, "byte 0x%02x escapes to a non-printable byte", c);
    }
    /* Truncation: the output fits cap with its NUL and never ends inside an escape. */
    CHECK(log_escape(out, 6, "ab\ncd", 5) == 2 && strcmp(out, "ab") == 0, "cut before \\x0a: %s",
          out);
    CHECK(log_escape(out, 7, "ab\ncd", 5) == 6 && strcmp(out, "ab\\x0a") == 0, "cut after: %s",
          out);
    CHECK(log_escape(out, 1, "abc", 3) == 0 && out[0] == '\0', "cap 1 gives an empty string");
    json_cases();
    json_every_byte();
    json_truncation();
    lines();
    throttle();
    printf("test_log: %s\n", fails ? "FAILED" : "ok");
    return fails != 0;
}
