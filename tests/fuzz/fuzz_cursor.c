/* fuzz_cursor.c -- libFuzzer target for the SSE side of a stream (sse.c): the resume cursor, held
 * against a second, independent reading of the same rule (digits only, 1..19 of them, at most
 * INT64_MAX compared as text), and the same input written as an event's data and as a comment,
 * with the frame's shape checked line by line: no CR anywhere, every line a known field, one
 * data line per line of the input. Built by tests/fuzz/run.sh. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sse.h"

#define TEXT_MAX 64
#define BUF_MAX (1 << 20)

static void
check(bool ok)
{
    if (!ok)
        abort();
}

/* The cursor rule read another way: strip leading zeros and compare with INT64_MAX as text. */
static bool
cursor_valid(const char *s, size_t n)
{
    static const char max[] = "9223372036854775807";
    size_t z = 0;

    if (n < 1 || n > SSE_CURSOR_DIGITS_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
    }
    while (z < n - 1 && s[z] == '0')
        z++;
    return n - z < sizeof max - 1 || (n - z == sizeof max - 1 && memcmp(s + z, max, n - z) <= 0);
}

static void
cursor(const uint8_t *data, size_t size)
{
    char text[TEXT_MAX], back[TEXT_MAX];
    size_t n = size < sizeof text - 1 ? size : sizeof text - 1;
    int64_t seq = -1;

    memcpy(text, data, n);
    text[n] = '\0';
    int rc = sse_cursor_parse(text, &seq);
    check((rc == 0) == cursor_valid(text, strlen(text)));
    if (rc == 0) {
        size_t z = 0;
        while (text[z] == '0' && text[z + 1] != '\0')
            z++;
        snprintf(back, sizeof back, "%" PRId64, seq);
        check(seq >= 0 && strcmp(back, text + z) == 0);
    }
}

/* Counts the lines of data as the frame writer splits them: CR LF, CR and LF each end one. */
static size_t
lines_of(const uint8_t *d, size_t n)
{
    size_t lines = 1;

    for (size_t i = 0; i < n; i++) {
        if (d[i] == '\r' && i + 1 < n && d[i + 1] == '\n')
            i++;
        if (d[i] == '\r' || d[i] == '\n')
            lines++;
    }
    return lines;
}

static void
frame(const uint8_t *data, size_t size)
{
    static char out[BUF_MAX];
    struct sse_buf b;
    size_t n, data_lines = 0, i = 0;
    bool has_nul = memchr(data, '\0', size) != NULL;

    sse_buf_init(&b, BUF_MAX);
    enum sse_status st = sse_write_event(&b, (int64_t)size, "reminder", (const char *)data, size);
    check(st == (has_nul ? SSE_E_INVALID : SSE_OK));
    n = sse_buf_take(&b, out, sizeof out);
    check(sse_buf_pending(&b) == 0);
    if (st == SSE_OK) {
        check(memchr(out, '\r', n) == NULL && n >= 2 && memcmp(out + n - 2, "\n\n", 2) == 0);
        while (i < n - 1) { /* every line but the final empty one */
            char *eol = memchr(out + i, '\n', n - i);
            size_t len = (size_t)(eol - (out + i));
            check(len > 0 &&
                  (strncmp(out + i, "id: ", 4) == 0 || strncmp(out + i, "event: ", 7) == 0 ||
                   strncmp(out + i, "data: ", 6) == 0));
            data_lines += strncmp(out + i, "data: ", 6) == 0;
            i += len + 1;
        }
        check(data_lines == lines_of(data, size));
    }
    char text[TEXT_MAX];
    size_t t = size < sizeof text - 1 ? size : sizeof text - 1;
    memcpy(text, data, t);
    text[t] = '\0';
    st = sse_write_comment(&b, text);
    check(st == (strpbrk(text, "\r\n") != NULL ? SSE_E_INVALID : SSE_OK));
    sse_buf_fini(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cursor(data, size);
    frame(data, size);
    return 0;
}
