/* test_sse.c -- the resume cursor (every kind of garbage, INT64_MAX and one past it), frames
 * byte for byte, the same frames read back by a small parser written from the WHATWG event
 * stream interpretation rules (so line breaks inside data survive as the standard says), the
 * refusals, and the buffer bound: all or nothing at the limit, draining, storage given back. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "sse.h"

#define OUT_MAX 4096
#define FIELD_MAX 512

static void
test_cursor(void)
{
    static const struct {
        const char *text;
        int rc;
        int64_t seq;
    } cases[] = {
        {"0", 0, 0},
        {"1", 0, 1},
        {"007", 0, 7},
        {"1834", 0, 1834},
        {"9223372036854775807", 0, INT64_MAX},
        {"0000000000000000001", 0, 1}, /* 19 digits */
        {"9223372036854775808", -1, 0},
        {"9999999999999999999", -1, 0},
        {"00000000000000000001", -1, 0}, /* 20 digits, even if the value is small */
        {"18446744073709551616", -1, 0},
        {"", -1, 0},
        {"-1", -1, 0},
        {"+1", -1, 0},
        {" 1", -1, 0},
        {"1 ", -1, 0},
        {"1a", -1, 0},
        {"0x10", -1, 0},
        {"1.0", -1, 0},
        {"1e3", -1, 0},
        {"\xd9\xa1", -1, 0}, /* ARABIC-INDIC DIGIT ONE */
        {"null", -1, 0},
    };
    int64_t seq;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        seq = -42;
        int rc = sse_cursor_parse(cases[i].text, &seq);
        CHECK(rc == cases[i].rc, "\"%s\": rc %d", cases[i].text, rc);
        CHECK(rc == 0 ? seq == cases[i].seq : seq == -42, "\"%s\": seq %lld", cases[i].text,
              (long long)seq);
    }
    CHECK(sse_cursor_parse(NULL, &seq) == -1, "NULL accepted");
}

/* Everything pending in b, NUL-terminated, drained in pieces of 3 bytes to exercise take. */
static const char *
drain(struct sse_buf *b)
{
    static char out[OUT_MAX];
    size_t o = 0, n;

    while ((n = sse_buf_take(b, out + o, 3)) > 0)
        o += n;
    out[o] = '\0';
    return out;
}

static void
test_frames(void)
{
    static const struct {
        int64_t id;
        const char *event, *data, *want;
    } cases[] = {
        {5, "reminder", "{}", "id: 5\nevent: reminder\ndata: {}\n\n"},
        {0, "hello", "{\"seq\":0}", "id: 0\nevent: hello\ndata: {\"seq\":0}\n\n"},
        {INT64_MAX, NULL, NULL, "id: 9223372036854775807\n\n"},
        {-1, "reauth", "x", "event: reauth\ndata: x\n\n"},
        {-1, NULL, "a\nb", "data: a\ndata: b\n\n"},
        {-1, NULL, "a\r\nb", "data: a\ndata: b\n\n"},
        {-1, NULL, "a\rb", "data: a\ndata: b\n\n"},
        {-1, NULL, "a\n\rb", "data: a\ndata: \ndata: b\n\n"},
        {-1, NULL, "a\n", "data: a\ndata: \n\n"},
        {-1, NULL, "a\r", "data: a\ndata: \n\n"},
        {-1, NULL, "\n", "data: \ndata: \n\n"},
        {-1, NULL, "", "data: \n\n"},
        {-1, NULL, " lead", "data:  lead\n\n"},
        {-1, "a:b", "x: y", "event: a:b\ndata: x: y\n\n"},
    };
    struct sse_buf b;

    sse_buf_init(&b, OUT_MAX);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *d = cases[i].data;
        enum sse_status st = sse_write_event(&b, cases[i].id, cases[i].event, d, d ? strlen(d) : 0);
        const char *got = drain(&b);
        CHECK(st == SSE_OK && strcmp(got, cases[i].want) == 0, "case %zu: status %d, got \"%s\"", i,
              (int)st, got);
    }
    CHECK(sse_write_comment(&b, "hb") == SSE_OK && strcmp(drain(&b), ": hb\n\n") == 0, "comment");
    CHECK(sse_write_comment(&b, "") == SSE_OK && strcmp(drain(&b), ": \n\n") == 0, "empty comment");
    CHECK(sse_write_retry(&b, 3000) == SSE_OK && strcmp(drain(&b), "retry: 3000\n\n") == 0,
          "retry");
    /* Data length is honoured: "ab" of "abc". */
    CHECK(sse_write_event(&b, -1, NULL, "abc", 2) == SSE_OK &&
              strcmp(drain(&b), "data: ab\n\n") == 0,
          "data length");
    sse_buf_fini(&b);
}

static void
test_refused(void)
{
    struct sse_buf b;

    sse_buf_init(&b, OUT_MAX);
    CHECK(sse_write_event(&b, 1, "", "x", 1) == SSE_E_INVALID, "empty event name");
    CHECK(sse_write_event(&b, 1, "a\nb", "x", 1) == SSE_E_INVALID, "LF in event name");
    CHECK(sse_write_event(&b, 1, "a\rb", "x", 1) == SSE_E_INVALID, "CR in event name");
    CHECK(sse_write_event(&b, 1, "a", "x\0y", 3) == SSE_E_INVALID, "NUL in data");
    CHECK(sse_write_comment(&b, "a\nevent: x") == SSE_E_INVALID, "LF in a comment");
    CHECK(sse_write_comment(&b, "a\r") == SSE_E_INVALID, "CR in a comment");
    CHECK(sse_write_retry(&b, -1) == SSE_E_INVALID, "negative retry");
    CHECK(sse_buf_pending(&b) == 0, "a refused frame left %zu bytes", sse_buf_pending(&b));
    sse_buf_fini(&b);
}

/* The WHATWG "interpret an event stream" rules, enough for the fields written here: lines end at
 * CR LF, LF or CR; a colon splits name and value and one space after it is dropped; a line
 * starting with a colon is a comment; a blank line dispatches (unless data is empty). */
struct event {
    char type[FIELD_MAX], data[FIELD_MAX], last_id[FIELD_MAX];
    bool dispatched;
};

static void
field(struct event *ev, char *data, size_t *data_len, const char *line, size_t n)
{
    const char *colon = memchr(line, ':', n);
    size_t name_len = colon ? (size_t)(colon - line) : n;
    const char *value = colon ? colon + 1 : line + n;
    size_t value_len = n - name_len - (colon ? 1 : 0);

    if (value_len > 0 && value[0] == ' ') {
        value++;
        value_len--;
    }
    if (name_len == 5 && memcmp(line, "event", 5) == 0) {
        memcpy(ev->type, value, value_len);
        ev->type[value_len] = '\0';
    } else if (name_len == 4 && memcmp(line, "data", 4) == 0) {
        memcpy(data + *data_len, value, value_len);
        *data_len += value_len;
        data[(*data_len)++] = '\n';
    } else if (name_len == 2 && memcmp(line, "id", 2) == 0) {
        memcpy(ev->last_id, value, value_len);
        ev->last_id[value_len] = '\0';
    }
}

/* Reads the first event of stream into *ev. */
static void
parse_one(const char *stream, struct event *ev)
{
    char data[FIELD_MAX];
    size_t data_len = 0, i = 0, len = strlen(stream);

    memset(ev, 0, sizeof *ev);
    while (i < len) {
        size_t start = i;
        while (i < len && stream[i] != '\r' && stream[i] != '\n')
            i++;
        size_t n = i - start;
        i += stream[i] == '\r' && stream[i + 1] == '\n' ? 2 : 1;
        if (n == 0) { /* dispatch */
            if (data_len == 0)
                return;
            memcpy(ev->data, data, data_len - 1); /* the last LF is removed */
            ev->data[data_len - 1] = '\0';
            if (ev->type[0] == '\0')
                strcpy(ev->type, "message");
            ev->dispatched = true;
            return;
        }
        if (stream[start] != ':')
            field(ev, data, &data_len, stream + start, n);
    }
}

static void
test_read_back(void)
{
    static const struct {
        const char *data, *want; /* data NULL: no data lines; want NULL: not dispatched */
    } cases[] = {
        {"{\"a\":1}", "{\"a\":1}"}, {"a\nb", "a\nb"}, {"a\r\nb", "a\nb"}, {"a\rb", "a\nb"},
        {"a\r\n\r\nb", "a\n\nb"},   {"a\n", "a\n"},   {" x ", " x "},     {":x", ":x"},
        {"data: x", "data: x"},     {"\n\n", "\n\n"}, {"", ""},           {NULL, NULL},
    };
    struct sse_buf b;
    struct event ev;

    sse_buf_init(&b, OUT_MAX);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *d = cases[i].data;
        CHECK(sse_write_event(&b, (int64_t)i, "reminder", d, d ? strlen(d) : 0) == SSE_OK,
              "case %zu refused", i);
        parse_one(drain(&b), &ev);
        CHECK(cases[i].want == NULL ? !ev.dispatched
                                    : ev.dispatched && strcmp(ev.data, cases[i].want) == 0 &&
                                          strcmp(ev.type, "reminder") == 0,
              "case %zu: dispatched %d, data \"%s\"", i, ev.dispatched, ev.data);
        CHECK(strtoll(ev.last_id, NULL, 10) == (long long)i, "case %zu: id %s", i, ev.last_id);
    }
    /* A comment dispatches nothing. */
    CHECK(sse_write_comment(&b, "hb") == SSE_OK, "comment");
    parse_one(drain(&b), &ev);
    CHECK(!ev.dispatched, "a comment dispatched an event");
    sse_buf_fini(&b);
}

static void
test_bound(void)
{
    static const char frame[] = "id: 1\nevent: e\ndata: 0123456789\n\n"; /* 33 bytes */
    struct sse_buf b;
    char out[OUT_MAX];
    int written = 0;

    /* A bound of two frames less one byte: the second still goes in (fewer than max bytes
     * wait), the third is refused whole and nothing of it is kept; so is a heartbeat. */
    sse_buf_init(&b, 2 * (sizeof frame - 1) - 1);
    while (sse_write_event(&b, 1, "e", "0123456789", 10) == SSE_OK)
        written++;
    CHECK(written == 2 && sse_buf_pending(&b) == 2 * (sizeof frame - 1), "wrote %d frames, %zu B",
          written, sse_buf_pending(&b));
    CHECK(sse_write_event(&b, 1, "e", "0123456789", 10) == SSE_E_FULL, "third frame accepted");
    CHECK(sse_write_comment(&b, "hb") == SSE_E_FULL, "a comment went in past the bound");
    CHECK(sse_buf_pending(&b) == 2 * (sizeof frame - 1), "a refused write left %zu B",
          sse_buf_pending(&b));
    /* Draining one frame makes room again; what is taken comes out in order. */
    CHECK(sse_buf_take(&b, out, sizeof frame - 1) == sizeof frame - 1 &&
              memcmp(out, frame, sizeof frame - 1) == 0,
          "first frame");
    CHECK(sse_write_comment(&b, "hb") == SSE_OK, "no room after draining");
    CHECK(sse_write_event(&b, 1, "e", "0123456789", 10) == SSE_OK, "no room behind 39 B");
    CHECK(sse_write_comment(&b, "hb") == SSE_E_FULL, "past the bound again");
    size_t n = sse_buf_take(&b, out, sizeof out);
    out[n] = '\0';
    CHECK(n == 2 * (sizeof frame - 1) + 6 && memcmp(out, frame, sizeof frame - 1) == 0 &&
              memcmp(out + sizeof frame - 1, ": hb\n\n", 6) == 0 &&
              strcmp(out + sizeof frame - 1 + 6, frame) == 0,
          "order after compaction: %s", out);
    sse_buf_fini(&b);

    /* A frame larger than the bound goes into an empty buffer whole (a reader that keeps up is
     * never cut for one large reminder); nothing follows it until it is taken. */
    static char large[300];
    memset(large, 'y', sizeof large - 1);
    sse_buf_init(&b, 100);
    CHECK(sse_write_comment(&b, "hb") == SSE_OK, "hb");
    CHECK(sse_write_event(&b, 9, "reminder", large, sizeof large - 1) == SSE_OK,
          "a frame larger than the bound refused behind 6 B");
    CHECK(b.cap >= sse_buf_pending(&b) && sse_buf_pending(&b) > 300, "pending %zu, cap %zu",
          sse_buf_pending(&b), b.cap);
    CHECK(sse_write_comment(&b, "hb") == SSE_E_FULL, "a comment behind the large frame");
    while (sse_buf_take(&b, out, 64) > 0)
        ;
    CHECK(sse_buf_pending(&b) == 0 && sse_buf_take(&b, out, 1) == 0, "not empty");
    CHECK(sse_write_event(&b, 10, "reminder", large, sizeof large - 1) == SSE_OK,
          "the next large frame after draining");
    sse_buf_fini(&b);

    /* A drained buffer gives its storage back, however large it grew. */
    static char big[SSE_BUF_FIRST * 8];
    memset(big, 'x', sizeof big - 1);
    sse_buf_init(&b, sizeof big * 2);
    CHECK(sse_write_event(&b, -1, NULL, big, sizeof big - 1) == SSE_OK, "big frame refused");
    CHECK(b.cap > SSE_BUF_FIRST, "capacity %zu", b.cap);
    while (sse_buf_take(&b, out, sizeof out) > 0)
        ;
    CHECK(b.data == NULL && b.cap == 0, "drained big buffer kept %zu bytes", b.cap);
    CHECK(sse_write_comment(&b, "hb") == SSE_OK && b.cap == SSE_BUF_FIRST, "reuse after freeing");
    sse_buf_fini(&b);

    /* max 0 takes nothing; fini accepts a zeroed buffer. */
    sse_buf_init(&b, 0);
    CHECK(sse_write_comment(&b, "") == SSE_E_FULL, "a buffer of 0 bytes took a frame");
    sse_buf_fini(&b);
    struct sse_buf zero = {0};
    sse_buf_fini(&zero);
}

int
main(void)
{
    test_cursor();
    test_frames();
    test_refused();
    test_read_back();
    test_bound();
    return check_summary("test_sse");
}
