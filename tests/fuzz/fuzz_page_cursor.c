/* fuzz_page_cursor.c -- libFuzzer target for the list pages' cursors (handler.c): the input as a
 * cursor text is opened (hex of "<tag>:<fields>") and its fields read as times and as ids, each
 * held against a second, independent reading of the same rule (lower-case hex in pairs; a tag, then
 * ':'; decimal digits only for an id, at most INT64_MAX compared as text; a time at most
 * TIMEFMT_MS_MAX); and a cursor written for an id read back from the input reads back as that id.
 * Built by tests/fuzz/run.sh. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handler.h"
#include "hex.h"
#include "timefmt.h"

#define RAW_MAX 96
#define TEXT_MAX (2 * RAW_MAX + 8)

static void
check(bool ok)
{
    if (!ok)
        abort();
}

/* Digits only, no more than INT64_MAX: strip leading zeros and compare as text. */
static bool
id_valid(const char *s, size_t n)
{
    static const char max[] = "9223372036854775807";
    size_t z = 0;

    if (n < 1)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    while (z < n - 1 && s[z] == '0')
        z++;
    return n - z < sizeof max - 1 || (n - z == sizeof max - 1 && memcmp(s + z, max, n - z) <= 0);
}

static int
nibble(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1; /* lower case only: the cursors are written so */
}

/* The fields of text as handler_cursor_open should find them for tag "d1", into raw (as a C
 * text: a NUL byte ends them); NULL when text is not hex of "d1:" and what follows, within
 * RAW_MAX bytes. */
static const char *
fields_of(const char *text, char *raw)
{
    size_t n = strlen(text);

    if (n == 0 || n % 2 != 0 || n / 2 > RAW_MAX)
        return NULL;
    for (size_t i = 0; i < n; i += 2) {
        int hi = nibble(text[i]), lo = nibble(text[i + 1]);
        if (hi < 0 || lo < 0)
            return NULL;
        raw[i / 2] = (char)(hi * 16 + lo);
    }
    raw[n / 2] = '\0';
    if (n / 2 < 3 || memcmp(raw, "d1:", 3) != 0)
        return NULL;
    return raw + 3;
}

static void
open_and_read(const char *text)
{
    char raw[RAW_MAX + 1], mine[RAW_MAX + 1];
    const char *p = handler_cursor_open(text, raw, RAW_MAX, "d1");
    const char *want = fields_of(text, mine);
    int64_t v = -1, ms = -1;

    check((p == NULL) == (want == NULL));
    if (p == NULL)
        return;
    check(strcmp(p, want) == 0);
    const char *q = p;
    int rc = handler_cursor_id(&q, '\0', &v);
    check((rc == 0) == id_valid(p, strlen(p)));
    if (rc == 0) {
        char back[32];
        size_t z = 0;
        while (p[z] == '0' && p[z + 1] != '\0')
            z++;
        snprintf(back, sizeof back, "%" PRId64, v);
        check(strcmp(back, p + z) == 0 && *q == '\0');
    }
    q = p;
    if (handler_cursor_ms(&q, '\0', &ms) == 0)
        check(ms >= 0 && ms <= TIMEFMT_MS_MAX);
}

/* An id taken from the input's bytes, written as the deliveries list writes its cursor. */
static void
round_trip(const uint8_t *data, size_t size)
{
    char raw[RAW_MAX + 1], text[TEXT_MAX], back[RAW_MAX + 1];
    int64_t id = 0, got = -1;

    memcpy(&id, data, size < sizeof id ? size : sizeof id);
    if (id < 0)
        id = -(id + 1);
    snprintf(raw, sizeof raw, "d1:%" PRId64, id);
    hex_encode(raw, strlen(raw), text);
    const char *p = handler_cursor_open(text, back, RAW_MAX, "d1");
    check(p != NULL && handler_cursor_id(&p, '\0', &got) == 0 && got == id);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char text[TEXT_MAX];
    size_t n = size < sizeof text - 1 ? size : sizeof text - 1;

    memcpy(text, data, n);
    text[n] = '\0';
    open_and_read(text);
    round_trip(data, size);
    return 0;
}
