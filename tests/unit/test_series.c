/* test_series.c -- the expansion of a series into original starts: wall-clock time kept across
 * DST in Berlin and New York (gap and overlap days), Pacific/Apia's skipped day (two wall-clock
 * times on one instant are one occurrence), exdates, rdates, UNTIL, COUNT, the start checks, the
 * ten-year look-ahead, and the reminder rows a window asks for with overrides applied. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "series.h"
#include "timefmt.h"

static int64_t
at(const char *s)
{
    int64_t ms = 0;

    if (timefmt_parse(s, strlen(s), &ms) != 0)
        printf("bad time in test: %s\n", s);
    return ms;
}

/* A series from start (UTC text) in zone with rule, one reminder of minutes before. */
static void
make(struct meeting *m, const char *zone, const char *start, const char *rule, int minutes)
{
    meeting_init(m);
    m->title = strdup("Weekly sync");
    m->time_zone = strdup(zone);
    m->starts_at_ms = at(start);
    m->has_ends_at = true;
    m->ends_at_ms = m->starts_at_ms + 30 * 60000;
    m->n_reminders = 1;
    m->reminders[0].minutes_before = minutes;
    m->reminders[0].channels = CHANNELS_DEFAULT;
    m->recurrence = calloc(1, sizeof *m->recurrence);
    m->recurrence->rrule = strdup(rule);
}

/* The first n original starts from from_ms as UTC text, compared with want[]. */
static void
expect(const struct meeting *m, int64_t from_ms, const char *const *want, size_t n)
{
    struct series_gen g;
    char got[TIMEFMT_BUF];
    int64_t t;

    CHECK(series_gen_init(&g, m, from_ms) == 0, "%s: init", m->recurrence->rrule);
    for (size_t i = 0; i < n; i++) {
        int rc = series_gen_next(&g, &t);
        if (want[i] == NULL) {
            CHECK(rc == 0, "%s: expected the end at %zu, got %s", m->recurrence->rrule, i,
                  timefmt_format(t, got));
            break;
        }
        CHECK(rc == 1, "%s: ended before %s", m->recurrence->rrule, want[i]);
        timefmt_format(t, got);
        CHECK(rc == 1 && strcmp(got, want[i]) == 0, "%s #%zu: got %s, want %s",
              m->recurrence->rrule, i, got, want[i]);
    }
    series_gen_fini(&g);
}

static void
check_dst(void)
{
    struct meeting m;

    /* Monday 09:00 in Berlin: 08:00Z in winter, 07:00Z from 30 March 2026 on. */
    make(&m, "Europe/Berlin", "2026-03-16T08:00:00Z", "FREQ=WEEKLY;BYDAY=MO", 5);
    const char *berlin[] = {"2026-03-16T08:00:00.000Z", "2026-03-23T08:00:00.000Z",
                            "2026-03-30T07:00:00.000Z", "2026-04-06T07:00:00.000Z"};
    expect(&m, m.starts_at_ms, berlin, 4);
    meeting_fini(&m);
    /* Daily 02:30 in New York: on 8 March 2026 02:30 does not exist and becomes 03:30 EDT. */
    make(&m, "America/New_York", "2026-03-07T07:30:00Z", "FREQ=DAILY", 5);
    const char *gap[] = {"2026-03-07T07:30:00.000Z", "2026-03-08T07:30:00.000Z",
                         "2026-03-09T06:30:00.000Z"};
    expect(&m, m.starts_at_ms, gap, 3);
    meeting_fini(&m);
    /* Daily 01:30 in New York: on 1 November 2026 01:30 happens twice; the first (EDT) wins. */
    make(&m, "America/New_York", "2026-10-31T05:30:00Z", "FREQ=DAILY;COUNT=3", 5);
    const char *overlap[] = {"2026-10-31T05:30:00.000Z", "2026-11-01T05:30:00.000Z",
                             "2026-11-02T06:30:00.000Z", NULL};
    expect(&m, m.starts_at_ms, overlap, 4);
    meeting_fini(&m);
    /* Lord Howe, daily 02:15: 4 October 2026 has no 02:15 (02:00 -> 02:30): 02:45 instead. */
    make(&m, "Australia/Lord_Howe", "2026-10-02T15:45:00Z", "FREQ=DAILY", 5);
    const char *howe[] = {"2026-10-02T15:45:00.000Z", "2026-10-03T15:45:00.000Z",
                          "2026-10-04T15:15:00.000Z"};
    expect(&m, m.starts_at_ms, howe, 3);
    meeting_fini(&m);
    /* Apia skipped 30 December 2011: its 09:00 moved onto the 31st's 09:00, one occurrence. */
    make(&m, "Pacific/Apia", "2011-12-28T19:00:00Z", "FREQ=DAILY", 5);
    const char *apia[] = {"2011-12-28T19:00:00.000Z", "2011-12-29T19:00:00.000Z",
                          "2011-12-30T19:00:00.000Z", "2011-12-31T19:00:00.000Z"};
    expect(&m, m.starts_at_ms, apia, 4);
    meeting_fini(&m);
}

static void
check_dates(void)
{
    struct meeting m;

    make(&m, "Europe/Berlin", "2026-01-05T08:00:00.250Z",
         "FREQ=WEEKLY;BYDAY=MO;UNTIL=20260126T080000Z", 5);
    m.recurrence->n_exdates = 1;
    m.recurrence->exdates[0] = at("2026-01-12T08:00:00.250Z");
    m.recurrence->n_rdates = 2;
    m.recurrence->rdates[0] = at("2026-01-07T12:00:00Z");
    m.recurrence->rdates[1] = at("2026-03-01T12:00:00Z"); /* rdates ignore UNTIL */
    /* UNTIL names the 26th's 08:00:00, a whole second as iCalendar times are: the occurrence at
     * that second is in, whatever milliseconds the start carries (python-dateutil drops them). */
    const char *want[] = {"2026-01-05T08:00:00.250Z", "2026-01-07T12:00:00.000Z",
                          "2026-01-19T08:00:00.250Z", "2026-01-26T08:00:00.250Z",
                          "2026-03-01T12:00:00.000Z", NULL};
    expect(&m, m.starts_at_ms, want, 6);
    /* From the middle: */
    const char *later[] = {"2026-01-19T08:00:00.250Z", "2026-01-26T08:00:00.250Z",
                           "2026-03-01T12:00:00.000Z", NULL};
    expect(&m, at("2026-01-13T00:00:00Z"), later, 4);
    CHECK(series_occurs(&m, at("2026-01-19T08:00:00.250Z")), "occurs");
    CHECK(!series_occurs(&m, at("2026-01-12T08:00:00.250Z")), "an exdate does not occur");
    CHECK(!series_occurs(&m, at("2026-01-19T08:00:00Z")), "off by 250 ms does not occur");
    CHECK(series_occurs(&m, at("2026-03-01T12:00:00Z")), "an rdate occurs");
    meeting_fini(&m);
    /* From far after the start (the iterator skips) gives what walking gives. */
    make(&m, "America/New_York", "2000-01-03T14:00:00Z", "FREQ=WEEKLY;INTERVAL=3;BYDAY=MO,TH", 5);
    struct series_gen walk, skip;
    int64_t a = 0, b = 0, from = at("2026-05-01T00:00:00Z");
    CHECK(series_gen_init(&walk, &m, m.starts_at_ms) == 0 && series_gen_init(&skip, &m, from) == 0,
          "init");
    while (series_gen_next(&walk, &a) == 1 && a < from)
        ;
    for (int i = 0; i < 20; i++) {
        CHECK(series_gen_next(&skip, &b) == 1 && a == b, "skip #%d", i);
        series_gen_next(&walk, &a);
    }
    series_gen_fini(&walk);
    series_gen_fini(&skip);
    /* A range after the last year libical generates: no rule times, the rdates there still. */
    const char *none[] = {NULL};
    expect(&m, at("2583-01-10T00:00:00Z"), none, 1);
    m.recurrence->n_rdates = 1;
    m.recurrence->rdates[0] = at("2600-06-01T12:00:00Z");
    const char *rdate[] = {"2600-06-01T12:00:00.000Z", NULL};
    expect(&m, at("2583-01-10T00:00:00Z"), rdate, 2);
    meeting_fini(&m);
    /* A range before it whose next period in step with INTERVAL is after it: no rule times. */
    make(&m, "Europe/Berlin", "2027-01-04T08:00:00Z", "FREQ=YEARLY;INTERVAL=600", 5);
    expect(&m, at("2028-01-10T00:00:00Z"), none, 1);
    meeting_fini(&m);
    make(&m, "Europe/Berlin", "2027-01-04T08:00:00Z", "FREQ=YEARLY;INTERVAL=2", 5);
    const char *last[] = {"2581-01-04T08:00:00.000Z", NULL};
    expect(&m, at("2580-06-01T00:00:00Z"), last, 2);
    expect(&m, at("2582-06-01T00:00:00Z"), none, 1);
    meeting_fini(&m);
}

static void
check_start(void)
{
    struct meeting m;
    char why[RECUR_WHY_MAX];

    make(&m, "Europe/Berlin", "2026-01-05T08:00:00Z", "FREQ=WEEKLY;BYDAY=MO", 5);
    CHECK(series_check_start(&m, why) == 0, "a Monday: %s", why);
    m.starts_at_ms = at("2026-01-06T08:00:00Z"); /* a Tuesday */
    CHECK(series_check_start(&m, why) == -1, "a Tuesday start accepted");
    meeting_fini(&m);
    /* 01:30 EST on 1 November 2026 is the second 01:30 of that night. */
    make(&m, "America/New_York", "2026-11-01T06:30:00Z", "FREQ=DAILY", 5);
    CHECK(series_check_start(&m, why) == -1, "second instant of an overlap accepted");
    m.starts_at_ms = at("2026-11-01T05:30:00Z");
    CHECK(series_check_start(&m, why) == 0, "first instant refused: %s", why);
    meeting_fini(&m);
    make(&m, "UTC", "2026-01-01T09:00:00Z", "FREQ=DAILY;COUNT=3", 5);
    CHECK(series_has_upcoming(&m, at("2026-01-02T00:00:00Z")), "two left");
    CHECK(!series_has_upcoming(&m, at("2026-01-04T00:00:00Z")), "ended");
    free(m.recurrence->rrule);
    m.recurrence->rrule = strdup("FREQ=YEARLY;INTERVAL=11");
    CHECK(!series_has_upcoming(&m, at("2026-06-01T00:00:00Z")), "next in 2037");
    CHECK(series_has_upcoming(&m, at("2028-01-01T00:00:00Z")), "2037 within ten years of 2028");
    meeting_fini(&m);
}

static void
check_rows(void)
{
    struct meeting m;
    struct series_rows rows = {0};
    struct series_override ov[2] = {0};
    int64_t covered = 0;

    make(&m, "UTC", "2026-01-01T09:00:00Z", "FREQ=DAILY", 10);
    m.n_reminders = 2;
    m.reminders[1].minutes_before = 0;
    m.reminders[1].channels = CHANNEL_WEBHOOK;
    /* The 3rd is moved to 18:00 and retitled; the 20th is moved into the range; 4th cancelled. */
    ov[0] = (struct series_override){
        at("2026-01-03T09:00:00Z"), true, false, at("2026-01-03T18:00:00Z"), 0, NULL, false};
    ov[1] = (struct series_override){
        at("2026-01-20T09:00:00Z"), true, false, at("2026-01-04T12:00:00Z"), 0, NULL, false};
    struct series_override cancelled = {at("2026-01-04T09:00:00Z"), false, false, 0, 0, NULL, true};
    struct series_override all[3] = {ov[0], cancelled, ov[1]};
    CHECK(series_rows_build(&m, all, 3, at("2026-01-02T00:00:00Z"), at("2026-01-05T00:00:00Z"),
                            false, 0, &rows, &covered) == 0,
          "build");
    CHECK(rows.n == 8, "4 occurrences x 2 reminders, got %zu", rows.n);
    CHECK(covered == at("2026-01-05T00:00:00Z"), "covered");
    for (size_t i = 0; i < rows.n; i++) {
        const struct series_row *r = &rows.r[i];
        if (r->original_start_ms == at("2026-01-03T09:00:00Z"))
            CHECK(r->starts_at_ms == at("2026-01-03T18:00:00Z") &&
                      r->fire_at_ms == r->starts_at_ms - r->minutes_before * 60000LL,
                  "moved occurrence fires from its new start");
        if (r->original_start_ms == at("2026-01-04T09:00:00Z"))
            CHECK(r->cancelled, "cancelled occurrence");
        if (r->original_start_ms == at("2026-01-20T09:00:00Z"))
            CHECK(r->starts_at_ms == at("2026-01-04T12:00:00Z"), "moved in");
        if (r->minutes_before == 0)
            CHECK(r->channels == CHANNEL_WEBHOOK, "channels per reminder");
    }
    series_rows_fini(&rows);
    meeting_fini(&m);
    /* A yearly series: the window alone holds nothing, ensure_next adds the next one. */
    make(&m, "Asia/Kolkata", "2026-02-01T03:30:00Z", "FREQ=YEARLY", 5);
    int64_t now = at("2026-03-01T00:00:00Z");
    CHECK(series_rows_build(&m, NULL, 0, now, now + 14 * 86400000LL, true, now, &rows, &covered) ==
              0,
          "build yearly");
    CHECK(rows.n == 1 && rows.r[0].original_start_ms == at("2027-02-01T03:30:00Z"),
          "next yearly occurrence, got %zu rows", rows.n);
    CHECK(covered == at("2027-02-01T03:30:00Z") + 1, "covered past it");
    series_rows_fini(&rows);
    CHECK(series_window_ms(&m, 14 * 86400000LL, 86400000LL) == 14 * 86400000LL, "window");
    m.reminders[0].minutes_before = 40320;
    CHECK(series_window_ms(&m, 14 * 86400000LL, 86400000LL) == 2 * (28 + 1) * 86400000LL,
          "window grows with the longest offset");
    CHECK(series_needs_extending(now + 10 * 86400000LL, now, 14 * 86400000LL), "due");
    CHECK(!series_needs_extending(now + 11 * 86400000LL, now, 14 * 86400000LL), "not due");
    meeting_fini(&m);
}

/* All original starts of m from its start (at most max), walked. */
static size_t
walk_all(const struct meeting *m, int64_t *out, size_t max)
{
    struct series_gen g;
    size_t n = 0;

    CHECK(series_gen_init(&g, m, m->starts_at_ms) == 0, "%s: init", m->recurrence->rrule);
    while (n < max && series_gen_next(&g, &out[n]) == 1)
        n++;
    series_gen_fini(&g);
    return n;
}

#define COUNT_CASE_MAX 400

/* A COUNT rule with its UNTIL equivalent (what series_sync stores) gives, from every point, the
 * original starts walking it from its start gives; and from far ahead it walks a few rule times
 * (issue 35, N4: it walked every one before them). */
static void
check_count_until(void)
{
    static const char *const cases[][3] = {
        {"UTC", "2026-12-04T05:00:00.125Z", "FREQ=DAILY;COUNT=300"},
        {"America/New_York", "2026-10-25T05:30:00Z", "FREQ=DAILY;COUNT=200"},
        {"Pacific/Apia", "2011-12-20T19:00:00Z", "FREQ=DAILY;COUNT=20"},
        {"Pacific/Apia", "2011-12-27T19:00:00Z", "FREQ=DAILY;COUNT=4"}, /* last on the lost day */
        {"Europe/Berlin", "2026-01-31T08:00:00Z", "FREQ=DAILY;INTERVAL=3;BYMONTHDAY=31,1;COUNT=40"},
        {"Europe/Berlin", "2026-01-05T08:00:00Z", "FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,TH;COUNT=150"},
        {"Australia/Lord_Howe", "2026-01-30T23:00:00Z", "FREQ=MONTHLY;BYDAY=-1SA;COUNT=120"},
        {"America/Santiago", "2028-02-29T15:00:00Z", "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29;COUNT=8"},
    };
    static int64_t all[COUNT_CASE_MAX], got[COUNT_CASE_MAX];
    struct meeting m;
    int64_t until = 0, t;

    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        make(&m, cases[c][0], cases[c][1], cases[c][2], 5);
        m.recurrence->n_exdates = 1;
        m.recurrence->exdates[0] = m.starts_at_ms; /* the first is excluded, still counted */
        size_t n = walk_all(&m, all, COUNT_CASE_MAX);
        CHECK(n > 1, "%s: %zu occurrences", cases[c][2], n);
        CHECK(series_count_until(&m, &until) == 1 && until / 1000 == all[n - 1] / 1000,
              "%s: UNTIL equivalent", cases[c][2]);
        m.recurrence->has_count_until = true;
        m.recurrence->count_until_ms = until;
        CHECK(walk_all(&m, got, COUNT_CASE_MAX) == n && memcmp(all, got, n * sizeof *got) == 0,
              "%s: the same from the start", cases[c][2]);
        for (size_t i = 0; i < n; i += 1 + n / 16) { /* from each, and from just after it */
            for (int64_t d = 0; d <= 1; d++) {
                struct series_gen g;
                size_t k = i + (size_t)d;
                CHECK(series_gen_init(&g, &m, all[i] + d) == 0, "%s: init", cases[c][2]);
                while (k < n && series_gen_next(&g, &t) == 1 && t == all[k])
                    k++;
                CHECK(k == n && series_gen_next(&g, &t) == 0, "%s: from #%zu%s: stopped at %zu",
                      cases[c][2], i, d ? " + 1 ms" : "", k);
                series_gen_fini(&g);
            }
        }
        meeting_fini(&m);
    }
    CHECK(series_count_until(&m, &until) == -1, "no recurrence");
    make(&m, "UTC", "2026-12-04T05:00:00Z", "FREQ=DAILY", 5);
    CHECK(series_count_until(&m, &until) == 0, "no COUNT");
    meeting_fini(&m);

    /* The adversary's series, read 24 years on. */
    make(&m, "UTC", "2026-12-04T05:00:00Z", "FREQ=DAILY;COUNT=10000", 5);
    struct series_gen g;
    CHECK(series_count_until(&m, &until) == 1 && until == at("2054-04-20T05:00:00Z"),
          "the 10,000th day");
    m.recurrence->has_count_until = true;
    m.recurrence->count_until_ms = until;
    CHECK(series_gen_init(&g, &m, at("2050-06-01T00:00:00Z")) == 0 &&
              series_gen_next(&g, &t) == 1 && t == at("2050-06-01T05:00:00Z"),
          "the first in the window");
    CHECK(g.walked < 10, "walked %zu rule times to the window", g.walked);
    series_gen_fini(&g);
    CHECK(series_gen_init(&g, &m, at("2054-04-20T06:00:00Z")) == 0 &&
              series_gen_next(&g, &t) == 0 && g.walked < 10,
          "after the last: none, walked %zu", g.walked);
    series_gen_fini(&g);
    meeting_fini(&m);
}

int
main(void)
{
    check_dst();
    check_dates();
    check_start();
    check_rows();
    check_count_until();
    if (fails == 0)
        printf("test_series: ok\n");
    return fails != 0;
}
