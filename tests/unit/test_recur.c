/* test_recur.c -- the accepted rule subset (a table of rules and verdicts, at each bound and one
 * past it, and libical's lax readings that the round trip catches) and the wall-clock iterator
 * on RFC 5545's own examples, COUNT, and the skip that jumps near a range; DAILY rules with
 * BYMONTHDAY (expanded as MONTHLY: recur.c) against a day-by-day walk written here. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "recur.h"
#include "timefmt.h"

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

/* DAILY rules with BYMONTHDAY, random but the same each run, against their definition walked
 * here day by day: every INTERVAL-th day from the start that BYMONTH, BYMONTHDAY and BYDAY all
 * allow, the first COUNT of them. */
#define DAILY_RULES 300
#define DAILY_TIMES 40
#define DAILY_YEAR_LAST 2200
#define SPARSE_WALKS 5
#define SPARSE_CPU_MAX_S 1.0 /* five walks took 2.8 s day by day, 0.07 s month by month */

struct daily {
    int interval, count;
    bool month[13], mday[32], wday[7]; /* wday: 0 = Monday */
    bool any_month, any_wday;
};

static unsigned lcg = 20261128u;

static int
rnd(int n)
{
    lcg = lcg * 1103515245u + 12345u;
    return (int)((lcg >> 16) % (unsigned)n);
}

static int
add_list(char *out, int at, const char *name, bool *set, int lo, int n, int k)
{
    static const char *const wd[] = {"MO", "TU", "WE", "TH", "FR", "SA", "SU"};

    at += sprintf(out + at, ";%s=", name);
    for (int i = 0; i < k; i++) {
        int v;
        do
            v = lo + rnd(n);
        while (set[v]);
        set[v] = true;
        at += lo == 0 ? sprintf(out + at, "%s%s", i ? "," : "", wd[v])
                      : sprintf(out + at, "%s%d", i ? "," : "", v);
    }
    return at;
}

static void
daily_rule(struct daily *d, char *text)
{
    static const int intervals[] = {1, 1, 2, 3, 7, 12, 100};
    int at = sprintf(text, "FREQ=DAILY");

    memset(d, 0, sizeof *d);
    d->interval = intervals[rnd(7)];
    at = add_list(text, at, "BYMONTHDAY", d->mday, 1, 31, 1 + rnd(3));
    if (d->interval > 1)
        at += sprintf(text + at, ";INTERVAL=%d", d->interval);
    if ((d->any_month = rnd(3) == 0))
        at = add_list(text, at, "BYMONTH", d->month, 1, 12, 1 + rnd(4));
    if ((d->any_wday = rnd(2) == 0))
        at = add_list(text, at, "BYDAY", d->wday, 0, 7, 1 + rnd(4));
    if (rnd(3) == 0)
        sprintf(text + at, ";COUNT=%d", d->count = 1 + rnd(30));
}

static bool
daily_allows(const struct daily *d, int64_t day, int64_t start_day)
{
    int64_t y;
    int m, md;

    timefmt_civil_from_days(day, &y, &m, &md);
    return (day - start_day) % d->interval == 0 && d->mday[md] && (!d->any_month || d->month[m]) &&
           (!d->any_wday || d->wday[(day % 7 + 10) % 7]); /* 1970-01-01 was a Thursday */
}

/* The definition's times from start (which it must allow), up to max of them. */
static int
daily_walk(const struct daily *d, struct tz_wall start, struct tz_wall *out, int max)
{
    int64_t first = timefmt_days_from_civil(start.year, start.month, start.day);
    int64_t last = timefmt_days_from_civil(DAILY_YEAR_LAST, 12, 31), y;
    int n = 0, limit = d->count > 0 && d->count < max ? d->count : max;

    for (int64_t day = first; day <= last && n < limit; day++) {
        if (!daily_allows(d, day, first))
            continue;
        out[n] = start;
        timefmt_civil_from_days(day, &y, &out[n].month, &out[n].day);
        out[n++].year = (int)y;
    }
    return n;
}

/* A start the rule allows: the first allowed day from a random one, within ten years. */
static bool
daily_start(const struct daily *d, struct tz_wall *start)
{
    int64_t day = timefmt_days_from_civil(2000 + rnd(36), 1 + rnd(12), 1 + rnd(28)), y;

    for (int i = 0; i < 3653; i++, day++) {
        if (daily_allows(d, day, day)) {
            *start = (struct tz_wall){0, 0, 0, rnd(24), 15 * rnd(4), 0};
            timefmt_civil_from_days(day, &y, &start->month, &start->day);
            start->year = (int)y;
            return true;
        }
    }
    return false;
}

static bool
wall_same(const struct tz_wall *a, const struct tz_wall *b)
{
    return memcmp(a, b, sizeof *a) == 0;
}

static void
check_daily_monthday(void)
{
    struct tz_wall want[DAILY_TIMES], got[DAILY_TIMES], start, w;
    struct recur_info info;
    char text[RECUR_RULE_MAX], why[RECUR_WHY_MAX];
    int compared = 0, skipped = 0;

    for (int r = 0; r < DAILY_RULES; r++) {
        struct daily d;
        daily_rule(&d, text);
        if (recur_rule_check(text, &info, why) != 0 || !daily_start(&d, &start))
            continue; /* a BYMONTH and BYMONTHDAY with no date in common; no day within ten years */
        int nw = daily_walk(&d, start, want, DAILY_TIMES);
        int ng = walk(text, start, got, DAILY_TIMES);
        while (ng > 0 && got[ng - 1].year > DAILY_YEAR_LAST)
            ng--;
        bool same = ng == nw;
        for (int i = 0; same && i < ng; i++)
            same = wall_same(&got[i], &want[i]);
        CHECK(same, "%s from %04d-%02d-%02d: %d times, the definition's %d", text, start.year,
              start.month, start.day, ng, nw);
        compared++;
        if (d.count > 0 || nw < 3)
            continue;
        /* A skip to the day of a middle time generates it and what follows. */
        struct tz_wall from = want[nw / 2];
        from.hour = from.minute = 0;
        struct recur_iter *it = recur_iter_new(text, &start);
        CHECK(it != NULL && recur_iter_skip_to(it, &from) == 0, "%s: skip", text);
        for (int i = nw / 2; it != NULL && i < nw; i++)
            CHECK(recur_iter_next(it, &w) == 1 && wall_same(&w, &want[i]),
                  "%s: after the skip to %04d-%02d-%02d, time %d", text, from.year, from.month,
                  from.day, i);
        recur_iter_free(it);
        skipped++;
    }
    CHECK(compared > DAILY_RULES / 2 && skipped > DAILY_RULES / 4, "compared %d, skipped %d",
          compared, skipped);
}

/* February 29th on a Tuesday comes every 28 years: day by day, libical took 28 ms of its lock
 * for each. The bound is generous; the walks it keeps out took 2.8 s. */
static void
check_sparse_daily_cost(void)
{
    struct tz_wall got[DAILY_TIMES];
    clock_t t0 = clock();
    int n = 0;

    for (int i = 0; i < SPARSE_WALKS; i++)
        n += walk("FREQ=DAILY;BYMONTH=2;BYMONTHDAY=29;BYDAY=TU",
                  (struct tz_wall){2028, 2, 29, 9, 0, 0}, got, DAILY_TIMES);
    double s = (double)(clock() - t0) / CLOCKS_PER_SEC;
    CHECK(n == SPARSE_WALKS * 19 && got[18].year == 2580, "%d times, the last in %d", n,
          got[18].year);
    CHECK(s < SPARSE_CPU_MAX_S, "%d walks to %d took %.2f s of CPU", SPARSE_WALKS, RECUR_YEAR_LAST,
          s);
}

int
main(void)
{
    check_rules();
    check_iteration();
    check_daily_monthday();
    check_sparse_daily_cost();
    if (fails == 0)
        printf("test_recur: ok\n");
    return fails != 0;
}
