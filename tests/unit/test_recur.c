/* test_recur.c -- the accepted rule subset (a table of rules and verdicts, at each bound and one
 * past it, and libical's lax readings that the round trip catches) and the wall-clock iterator
 * on RFC 5545's own examples, COUNT, and the skip that jumps near a range. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "recur.h"

static const struct {
    const char *rule;
    bool ok;
} rules[] = {
    {"FREQ=DAILY", true},
    {"FREQ=WEEKLY;BYDAY=MO", true},
    {"FREQ=WEEKLY;BYDAY=MO,WE,FR;WKST=SU;INTERVAL=2", true},
    {"FREQ=MONTHLY;BYDAY=1MO,-1FR", true},
    {"FREQ=MONTHLY;BYDAY=+2TU", true},
    {"FREQ=MONTHLY;BYDAY=5SU", true},
    {"FREQ=MONTHLY;BYDAY=6SU", false}, /* a month has five of a weekday at most */
    {"FREQ=MONTHLY;BYDAY=0SU", false}, /* libical reads it as SU */
    {"FREQ=MONTHLY;BYDAY=255SU", false},
    {"FREQ=MONTHLY;BYMONTHDAY=1,15,31", true},
    {"FREQ=MONTHLY;BYMONTHDAY=32", false},
    {"FREQ=MONTHLY;BYMONTHDAY=-1", false}, /* negative: wrong in libical 3.0.16 */
    {"FREQ=MONTHLY;BYMONTHDAY=01", false}, /* leading zero */
    {"FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1", true},
    {"FREQ=MONTHLY;BYDAY=MO;BYSETPOS=5", true},
    {"FREQ=MONTHLY;BYDAY=MO;BYSETPOS=6", false}, /* five Mondays a month at most */
    /* fuzz_recur: libical took seconds to find that these select nothing. */
    {"FREQ=MONTHLY;BYDAY=-1MO,TU,WE,TH,FR;BYSETPOS=21", false}, /* at most 20 */
    {"FREQ=MONTHLY;BYDAY=-1MO,TU,WE,TH,FR;BYSETPOS=-20", true},
    {"FREQ=MONTHLY;BYDAY=5MO;BYMONTHDAY=1,2,3", false}, /* a fifth Monday is the 29th at least */
    {"FREQ=MONTHLY;BYDAY=5MO;BYMONTHDAY=29,30,31", true},
    {"FREQ=YEARLY;BYMONTH=2;BYDAY=5MO", true}, /* February 2016 had five Mondays */
    /* Five Mondays in February (leap, from a Monday) leave four in March: nine at most. */
    {"FREQ=YEARLY;BYMONTH=2,3;BYDAY=MO;BYSETPOS=9", true},
    {"FREQ=YEARLY;BYMONTH=2,3;BYDAY=MO;BYSETPOS=10", false},
    {"FREQ=YEARLY;BYDAY=MO,TU;BYSETPOS=106", true}, /* a leap year from a Monday: 53 of each */
    {"FREQ=YEARLY;BYDAY=MO,TU;BYSETPOS=107", false},
    {"FREQ=MONTHLY;BYMONTHDAY=1,2;BYSETPOS=3", false},
    {"FREQ=YEARLY;BYMONTH=1,2;BYMONTHDAY=1;BYSETPOS=2", true},
    {"FREQ=YEARLY;BYMONTH=1,2;BYMONTHDAY=1;BYSETPOS=3", false},
    {"FREQ=MONTHLY;BYDAY=MO;BYSETPOS=32", false},
    {"FREQ=MONTHLY;BYSETPOS=1", false},            /* BYSETPOS alone */
    {"FREQ=WEEKLY;BYDAY=MO,FR;BYSETPOS=1", false}, /* ignored by libical 3.0.16 */
    {"FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29", true},
    {"FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30", false},     /* no such date */
    {"FREQ=YEARLY;BYMONTH=2,4;BYMONTHDAY=30,31", true}, /* 30 April exists */
    {"FREQ=YEARLY;BYMONTH=13", false},
    {"FREQ=YEARLY;BYDAY=53MO", true},
    {"FREQ=YEARLY;BYDAY=54MO", false},
    {"FREQ=YEARLY;BYDAY=20MO;BYMONTH=3", false}, /* within a month: 1..5 */
    {"FREQ=YEARLY;BYDAY=-2SU;BYMONTH=3", true},
    {"FREQ=YEARLY;BYSETPOS=53;BYDAY=MO", true},
    {"FREQ=YEARLY;BYDAY=53MO;BYSETPOS=1", true},
    {"FREQ=YEARLY;BYSETPOS=54;BYDAY=MO", false},
    {"FREQ=YEARLY;BYSETPOS=367;BYDAY=MO", false},
    {"FREQ=DAILY;BYDAY=1MO", false}, /* ordinals need MONTHLY or YEARLY */
    {"FREQ=WEEKLY;BYDAY=2MO", false},
    {"FREQ=WEEKLY;BYMONTHDAY=3", false},
    {"FREQ=DAILY;BYMONTH=1,2;BYDAY=MO,TU", true},
    {"FREQ=DAILY;INTERVAL=1000", true},
    {"FREQ=DAILY;INTERVAL=1001", false},
    {"FREQ=DAILY;INTERVAL=70000", false}, /* libical reads 4464 */
    {"FREQ=DAILY;INTERVAL=0", false},
    {"FREQ=DAILY;COUNT=10000", true},
    {"FREQ=DAILY;COUNT=10001", false},
    {"FREQ=DAILY;COUNT=0", false},
    {"FREQ=DAILY;UNTIL=20261231T235959Z", true},
    {"FREQ=DAILY;UNTIL=20261231T235959", false}, /* floating: must be UTC */
    {"FREQ=DAILY;UNTIL=20261231", false},
    {"FREQ=DAILY;UNTIL=20260230T000000Z", false},
    {"FREQ=DAILY;COUNT=3;UNTIL=20261231T235959Z", false},
    {"FREQ=HOURLY", false},
    {"FREQ=SECONDLY", false},
    {"FREQ=DAILY;BYHOUR=9", false},
    {"FREQ=YEARLY;BYWEEKNO=1", false},
    {"FREQ=YEARLY;BYYEARDAY=1", false},
    {"FREQ=DAILY;X-NAME=1", false},
    {"freq=daily", false},
    {"RRULE:FREQ=DAILY", false},
    {"FREQ=DAILY;", false},
    {"FREQ=DAILY;;INTERVAL=2", false},
    {"FREQ=DAILY;FREQ=WEEKLY", false},
    {"INTERVAL=2", false},
    {"FREQ=", false},
    {"FREQ=WEEKLY;BYDAY=MO,MO", false},
    {"FREQ=WEEKLY;BYDAY=MO,", false},
    {"FREQ=WEEKLY;BYDAY=XX", false},
    {"FREQ=WEEKLY;WKST=XX", false},
    {"FREQ=WEEKLY;INTERVAL=2;WKST=SA;BYDAY=MO,TU", false}, /* libical drops the first week */
    {"FREQ=YEARLY;BYMONTHDAY=8", false},                   /* libical: the first month only */
    {"FREQ=MONTHLY;BYDAY=1MO,+1MO", false},                /* the same value twice */
    {"FREQ=DAILY EXTRA", false},
    {"", false},
};

static void
check_rules(void)
{
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        struct recur_info info;
        char why[RECUR_WHY_MAX] = "";
        int rc = recur_rule_check(rules[i].rule, &info, why);

        CHECK((rc == 0) == rules[i].ok, "%s: got %d (%s)", rules[i].rule, rc, why);
        CHECK(rc == 0 || why[0] != '\0', "%s: refused without a message", rules[i].rule);
    }
    char longest[RECUR_RULE_MAX + 2];
    struct recur_info info;
    char why[RECUR_WHY_MAX];
    memset(longest, 'A', sizeof longest - 1);
    longest[sizeof longest - 1] = '\0';
    CHECK(recur_rule_check(longest, &info, why) == -1, "over-long rule accepted");
    CHECK(recur_rule_check("FREQ=DAILY;UNTIL=20261231T235959Z", &info, why) == 0 &&
              info.has_until && info.until_ms == 1798761599000LL && !info.has_count,
          "UNTIL as UTC milliseconds");
}

static int
walk(const char *rule, struct tz_wall start, struct tz_wall *out, int max)
{
    struct recur_iter *it = recur_iter_new(rule, &start);
    int n = 0;

    if (it == NULL)
        return -1;
    while (n < max && recur_iter_next(it, &out[n]) == 1)
        n++;
    recur_iter_free(it);
    return n;
}

static void
check_iteration(void)
{
    struct tz_wall got[16];

    /* RFC 5545's WKST example: every other week on Tuesday and Sunday, weeks from Sunday. */
    int n = walk("FREQ=WEEKLY;INTERVAL=2;COUNT=4;BYDAY=TU,SU;WKST=SU",
                 (struct tz_wall){1997, 8, 5, 9, 0, 0}, got, 16);
    static const int days[] = {5, 17, 19, 31};
    CHECK(n == 4, "COUNT=4 gave %d", n);
    for (int i = 0; i < n && i < 4; i++)
        CHECK(got[i].month == 8 && got[i].day == days[i] && got[i].hour == 9, "RFC example %d", i);
    /* UNTIL is the caller's: the iterator goes on. */
    n = walk("FREQ=DAILY;UNTIL=19970102T000000Z", (struct tz_wall){1997, 1, 1, 9, 0, 0}, got, 5);
    CHECK(n == 5, "UNTIL left to the caller, got %d", n);
    /* Last weekday of the month. */
    n = walk("FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1",
             (struct tz_wall){2026, 1, 30, 17, 0, 0}, got, 3);
    CHECK(n == 3 && got[0].day == 30 && got[1].month == 2 && got[1].day == 27 &&
              got[2].month == 3 && got[2].day == 31,
          "last weekday");
    /* The skip lands on the same times as walking, and refuses a COUNT rule. */
    struct tz_wall start = {2020, 1, 6, 9, 30, 0}, from = {2026, 6, 1, 0, 0, 0}, a, b;
    struct recur_iter *walked = recur_iter_new("FREQ=WEEKLY;INTERVAL=3;BYDAY=MO,TH", &start);
    struct recur_iter *skipped = recur_iter_new("FREQ=WEEKLY;INTERVAL=3;BYDAY=MO,TH", &start);
    CHECK(recur_iter_skip_to(skipped, &from) == 0, "skip");
    do
        CHECK(recur_iter_next(walked, &a) == 1, "walk");
    while (a.year < 2026 || (a.year == 2026 && a.month < 6));
    for (int i = 0; i < 10; i++) {
        CHECK(recur_iter_next(skipped, &b) == 1, "skipped next");
        CHECK(memcmp(&a, &b, sizeof a) == 0, "skip %d: %04d-%02d-%02d vs %04d-%02d-%02d", i, a.year,
              a.month, a.day, b.year, b.month, b.day);
        recur_iter_next(walked, &a);
    }
    recur_iter_free(walked);
    recur_iter_free(skipped);
    struct recur_iter *counted = recur_iter_new("FREQ=DAILY;COUNT=5", &start);
    CHECK(recur_iter_skip_to(counted, &from) == -1, "a COUNT rule cannot skip");
    recur_iter_free(counted);
}

int
main(void)
{
    check_rules();
    check_iteration();
    if (fails == 0)
        printf("test_recur: ok\n");
    return fails != 0;
}
