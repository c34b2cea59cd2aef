/* test_log.c -- log_escape: no input byte can end a log line, start a forged one or reach a
 * terminal as an escape sequence; printable ASCII passes unchanged; truncation never cuts an
 * escape in half. */
#include <string.h>

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
    printf("test_log: %s\n", fails ? "FAILED" : "ok");
    return fails != 0;
}
