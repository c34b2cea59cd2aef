/* test_tzfile.c -- the TZif reader and the POSIX TZ rules of zone footers: rule texts accepted
 * and refused, the offsets rules give on either side of their changes (negative summer time in
 * Dublin, a change at -1:00 in Nuuk, half an hour in Lord Howe), real zone files past 2037 where
 * only the footer speaks (libical gets these wrong), and truncated or corrupted files refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "timefmt.h"
#include "tz.h"
#include "tzfile.h"

static int64_t
at(const char *s)
{
    int64_t ms = 0;
    timefmt_parse(s, strlen(s), &ms);
    return ms / 1000;
}

static void
check_rules(void)
{
    static const struct {
        const char *text;
        int ok;
    } texts[] = {
        {"EST5EDT,M3.2.0,M11.1.0", 1},
        {"<+0330>-3:30", 1},
        {"IST-1GMT0,M10.5.0,M3.5.0/1", 1},
        {"<-02>2<-01>,M3.5.0/-1,M10.5.0/0", 1},
        {"<+1030>-10:30<+11>-11,M10.1.0,M4.1.0", 1},
        {"NST3:30NDT,M3.2.0,M11.1.0", 1},
        {"XXX3YYY,J60/2,300/167", 1},
        {"UTC0", 1},
        {"EST5EDT", 0},        /* summer time without its rules */
        {"EST5EDT,M3.2.0", 0}, /* one rule */
        {"EST5EDT,M13.2.0,M11.1.0", 0},
        {"EST5EDT,M3.6.0,M11.1.0", 0},
        {"EST5EDT,M3.2.7,M11.1.0", 0},
        {"EST5EDT,M3.2.0/168,M11.1.0", 0},
        {"EST", 0},    /* no offset */
        {"ES5", 0},    /* abbreviation too short */
        {"<+03-3", 0}, /* unterminated */
        {"EST5EDT,M3.2.0,M11.1.0x", 0},
        {"", 0},
    };
    struct tzfile_rule r;

    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        CHECK((tzfile_rule_parse(texts[i].text, strlen(texts[i].text), &r) == 0) == texts[i].ok,
              "%s", texts[i].text);
    static const struct {
        const char *rule, *utc;
        int want;
    } offsets[] = {
        {"EST5EDT,M3.2.0,M11.1.0", "2040-03-11T06:59:59Z", -5 * 3600},
        {"EST5EDT,M3.2.0,M11.1.0", "2040-03-11T07:00:00Z", -4 * 3600},
        {"EST5EDT,M3.2.0,M11.1.0", "2040-11-04T05:59:59Z", -4 * 3600},
        {"EST5EDT,M3.2.0,M11.1.0", "2040-11-04T06:00:00Z", -5 * 3600},
        {"IST-1GMT0,M10.5.0,M3.5.0/1", "2040-07-01T00:00:00Z", 3600},
        {"IST-1GMT0,M10.5.0,M3.5.0/1", "2040-12-01T00:00:00Z", 0},
        {"IST-1GMT0,M10.5.0,M3.5.0/1", "2040-03-25T00:59:59Z", 0},
        {"IST-1GMT0,M10.5.0,M3.5.0/1", "2040-03-25T01:00:00Z", 3600},
        {"<-02>2<-01>,M3.5.0/-1,M10.5.0/0", "2040-03-25T00:59:59Z", -2 * 3600},
        {"<-02>2<-01>,M3.5.0/-1,M10.5.0/0", "2040-03-25T01:00:00Z", -1 * 3600},
        {"<+1030>-10:30<+11>-11,M10.1.0,M4.1.0", "2040-10-06T15:29:59Z", 37800},
        {"<+1030>-10:30<+11>-11,M10.1.0,M4.1.0", "2040-10-06T15:30:00Z", 39600},
        {"<+1030>-10:30<+11>-11,M10.1.0,M4.1.0", "2041-04-06T14:59:59Z", 39600},
        {"<+1030>-10:30<+11>-11,M10.1.0,M4.1.0", "2041-04-06T15:00:00Z", 37800},
        {"<+0330>-3:30", "2040-06-01T00:00:00Z", 12600},
    };
    for (size_t i = 0; i < sizeof offsets / sizeof offsets[0]; i++) {
        CHECK(tzfile_rule_parse(offsets[i].rule, strlen(offsets[i].rule), &r) == 0, "parse");
        int got = tzfile_rule_offset(&r, at(offsets[i].utc));
        CHECK(got == offsets[i].want, "%s at %s: got %d, want %d", offsets[i].rule, offsets[i].utc,
              got, offsets[i].want);
    }
}

/* Offsets from the system's files past their last transition, where libical 3.0.16 errs. */
static void
check_files(void)
{
    static const struct {
        const char *zone, *utc;
        int want;
    } t[] = {
        {"Australia/Lord_Howe", "2038-10-02T16:30:00Z", 39600},
        {"America/St_Johns", "2038-03-14T04:30:00Z", -12600},
        {"America/St_Johns", "2038-03-14T06:30:00Z", -9000},
        {"Atlantic/Azores", "2038-10-31T02:00:00Z", -3600},
        {"Pacific/Chatham", "2038-09-25T15:00:00Z", 49500},
        {"Asia/Tehran", "2019-03-21T21:00:00Z", 16200},
        {"Pacific/Apia", "2011-12-30T09:59:59Z", -36000},
        {"Pacific/Apia", "2011-12-30T10:00:00Z", 50400},
        {"America/New_York", "2100-07-01T00:00:00Z", -4 * 3600},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        int got = 0;
        CHECK(tz_offset(t[i].zone, at(t[i].utc), &got) == 0, "%s: unreadable", t[i].zone);
        CHECK(got == t[i].want, "%s at %s: got %d, want %d", t[i].zone, t[i].utc, got, t[i].want);
    }
    int got;
    CHECK(tz_offset("../etc/passwd", 0, &got) == -1, "path outside the zone directory");
    CHECK(tz_offset("right/UTC", 0, &got) == -1, "leap-second zones refused");
}

static void
check_corrupt(void)
{
    FILE *f = fopen("/usr/share/zoneinfo/Europe/Berlin", "rb");
    unsigned char buf[TZFILE_BYTES_MAX];
    size_t len = f ? fread(buf, 1, sizeof buf, f) : 0;
    struct tzfile tz;

    if (f != NULL)
        fclose(f);
    CHECK(len > 100, "Europe/Berlin unreadable");
    CHECK(tzfile_parse(buf, len, &tz) == 0, "Europe/Berlin refused");
    tzfile_fini(&tz);
    /* Every truncation is refused, never read past. */
    for (size_t cut = 0; cut < len; cut += 7)
        if (tzfile_parse(buf, cut, &tz) == 0) {
            CHECK(0, "truncated at %zu accepted", cut);
            tzfile_fini(&tz);
        }
    buf[4] = '9'; /* an unknown version */
    CHECK(tzfile_parse(buf, len, &tz) == -1, "version 9 accepted");
}

int
main(void)
{
    check_rules();
    check_files();
    check_corrupt();
    if (fails == 0)
        printf("test_tzfile: ok\n");
    return fails != 0;
}
