/* test_timefmt.c -- RFC 3339 parsing and formatting: valid forms, every rejection rule, range
 * edges and a day-by-day round trip across the supported years. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "timefmt.h"

#define PARSE_FAIL (-2) /* expected value meaning "must be rejected" */

static const struct {
    const char *in;
    long long want; /* ms since the epoch, or PARSE_FAIL */
} cases[] = {
    {"1970-01-01T00:00:00Z", 0},
    {"1970-01-01T00:00:00.001Z", 1},
    {"2026-11-23T09:00:00+01:00", 1795420800000LL},
    {"2026-11-23T08:00:00Z", 1795420800000LL},
    {"2026-11-23t08:00:00z", 1795420800000LL},
    {"2026-11-23T03:30:00-04:30", 1795420800000LL},
    {"2026-11-23T08:00:00-00:00", 1795420800000LL},
    {"2026-11-23T08:00:00.5Z", 1795420800500LL},
    {"2026-11-23T08:00:00.12Z", 1795420800120LL},
    {"2026-11-23T08:00:00.123456789Z", 1795420800123LL}, /* truncated, not rounded */
    {"2026-11-23T08:00:00.999999999Z", 1795420800999LL},
    {"2024-02-29T12:00:00Z", 1709208000000LL}, /* leap year */
    {"2000-02-29T00:00:00Z", 951782400000LL},  /* 400-year leap */
    {"9999-12-31T23:59:59.999Z", 253402300799999LL},
    {"2026-11-23T23:59:59+23:59", 1795392059000LL},
    {"1970-01-01T01:00:00+01:00", 0},
    {"2026-11-23T09:00:00", PARSE_FAIL}, /* no offset */
    {"2026-11-23T09:00:00+01", PARSE_FAIL},
    {"2026-11-23T09:00:00+0100", PARSE_FAIL},
    {"2026-11-23 09:00:00Z", PARSE_FAIL},
    {"2026-11-23", PARSE_FAIL},
    {"2026-02-30T00:00:00Z", PARSE_FAIL},
    {"2025-02-29T00:00:00Z", PARSE_FAIL}, /* not a leap year */
    {"1900-02-29T00:00:00Z", PARSE_FAIL},
    {"2026-13-01T00:00:00Z", PARSE_FAIL},
    {"2026-00-01T00:00:00Z", PARSE_FAIL},
    {"2026-04-31T00:00:00Z", PARSE_FAIL},
    {"2026-04-00T00:00:00Z", PARSE_FAIL},
    {"2026-04-01T24:00:00Z", PARSE_FAIL},
    {"2026-04-01T23:60:00Z", PARSE_FAIL},
    {"2026-04-01T23:59:60Z", PARSE_FAIL}, /* leap second */
    {"2026-04-01T00:00:00+24:00", PARSE_FAIL},
    {"2026-04-01T00:00:00+23:60", PARSE_FAIL},
    {"2026-04-01T00:00:00.Z", PARSE_FAIL},
    {"2026-04-01T00:00:00.1234567890Z", PARSE_FAIL}, /* 10 fractional digits */
    {"2026-04-01T00:00:00ZZ", PARSE_FAIL},
    {"2026-04-01T00:00:00Z ", PARSE_FAIL},
    {" 2026-04-01T00:00:00Z", PARSE_FAIL},
    {"1969-12-31T23:59:59Z", PARSE_FAIL},
    {"1970-01-01T00:59:59+01:00", PARSE_FAIL}, /* before the epoch in UTC */
    {"9999-12-31T23:59:59-00:01", PARSE_FAIL}, /* past year 9999 in UTC */
    {"+2026-04-01T00:00:00Z", PARSE_FAIL},
    {"2026-4-01T00:00:00Z", PARSE_FAIL},
    {"2026-04-01T00:00:00+1:00", PARSE_FAIL},
    {"", PARSE_FAIL},
    {"2026-04-01T00:00:00.000000000000000000000000000000000000000000000000Z", PARSE_FAIL},
};

static const struct {
    long long ms;
    const char *want;
} formats[] = {
    {0, "1970-01-01T00:00:00.000Z"},
    {1795420800000LL, "2026-11-23T08:00:00.000Z"},
    {1795420800123LL, "2026-11-23T08:00:00.123Z"},
    {-1, "1969-12-31T23:59:59.999Z"},
    {-300000, "1969-12-31T23:55:00.000Z"},
    {253402300799999LL, "9999-12-31T23:59:59.999Z"},
    {253402300800000LL, "9999-12-31T23:59:59.999Z"}, /* clamped */
    {-62167219200000LL, "0000-01-01T00:00:00.000Z"},
    {-99999999999999999LL, "0000-01-01T00:00:00.000Z"}, /* clamped */
};

static void
check_parse(void)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int64_t got = PARSE_FAIL;
        int rc = timefmt_parse(cases[i].in, strlen(cases[i].in), &got);
        long long g = rc == 0 ? (long long)got : PARSE_FAIL;

        CHECK(g == cases[i].want, "parse %s: got %lld want %lld", cases[i].in, g, cases[i].want);
    }
}

static void
check_format(void)
{
    char buf[TIMEFMT_BUF];

    for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
        timefmt_format(formats[i].ms, buf);
        CHECK(strcmp(buf, formats[i].want) == 0, "format %lld: got %s want %s", formats[i].ms, buf,
              formats[i].want);
    }
}

/* Every day from 1970 to 9999 at a noon-ish instant: format then parse gives the same ms. */
static void
check_round_trip(void)
{
    const int64_t day = 86400000LL;
    char buf[TIMEFMT_BUF];
    int before = fails;

    for (int64_t ms = 43210987; ms <= 253402300799999LL && fails - before < 10; ms += day) {
        int64_t back = -1;

        timefmt_format(ms, buf);
        CHECK(timefmt_parse(buf, strlen(buf), &back) == 0 && back == ms,
              "round trip %lld -> %s -> %lld", (long long)ms, buf, (long long)back);
    }
}

/* A NUL inside the given length must not be taken as the end of the text. */
static void
check_embedded_nul(void)
{
    static const char s[] = "2026-04-01T00:00:00Z\0junk";
    int64_t got;

    CHECK(timefmt_parse(s, sizeof(s) - 1, &got) != 0, "embedded NUL accepted");
}

static void
check_now(void)
{
    int64_t now = timefmt_now_ms();

    /* 2024-01-01 .. 2100-01-01: a sanity window, not a clock test. */
    CHECK(now >= 1704067200000LL && now <= 4102444800000LL, "now %lld looks wrong", (long long)now);
}

int
main(void)
{
    check_parse();
    check_format();
    check_round_trip();
    check_embedded_nul();
    check_now();
    return check_summary("test_timefmt");
}
