/* test_tz.c -- the wall-clock -> UTC resolver at real transitions (America/New_York,
 * Europe/Berlin, Australia/Lord_Howe's half-hour shift, Pacific/Apia's skipped day, Asia/Kolkata
 * without any), pinned by hand: a gap time moves forward by the gap, an overlap time is its first
 * instant; then the same rule on synthetic offset tables (two transitions a few hours apart), and
 * UTC -> wall clock and back. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "timefmt.h"
#include "tz.h"

struct resolve_case {
    const char *zone;
    struct tz_wall w;
    const char *want; /* UTC */
    const char *why;
};

static const struct resolve_case cases[] = {
    /* America/New_York: 2026-03-08 02:00 EST -> 03:00 EDT; 2026-11-01 02:00 EDT -> 01:00 EST. */
    {"America/New_York", {2026, 3, 8, 1, 59, 59}, "2026-03-08T06:59:59.000Z", "before the gap"},
    {"America/New_York", {2026, 3, 8, 2, 0, 0}, "2026-03-08T07:00:00.000Z", "gap start -> 03:00"},
    {"America/New_York", {2026, 3, 8, 2, 30, 0}, "2026-03-08T07:30:00.000Z", "gap -> 03:30 EDT"},
    {"America/New_York", {2026, 3, 8, 3, 0, 0}, "2026-03-08T07:00:00.000Z", "after the gap"},
    {"America/New_York", {2026, 11, 1, 0, 59, 0}, "2026-11-01T04:59:00.000Z", "before overlap"},
    {"America/New_York", {2026, 11, 1, 1, 0, 0}, "2026-11-01T05:00:00.000Z", "overlap: EDT"},
    {"America/New_York", {2026, 11, 1, 1, 30, 0}, "2026-11-01T05:30:00.000Z", "overlap: EDT"},
    {"America/New_York", {2026, 11, 1, 2, 0, 0}, "2026-11-01T07:00:00.000Z", "after: EST"},
    {"America/New_York", {2026, 7, 1, 9, 0, 0}, "2026-07-01T13:00:00.000Z", "summer"},
    {"America/New_York", {2026, 12, 1, 9, 0, 0}, "2026-12-01T14:00:00.000Z", "winter"},
    /* Europe/Berlin: 2026-03-29 02:00 CET -> 03:00 CEST; 2026-10-25 03:00 CEST -> 02:00 CET. */
    {"Europe/Berlin", {2026, 3, 29, 1, 59, 0}, "2026-03-29T00:59:00.000Z", "before the gap"},
    {"Europe/Berlin", {2026, 3, 29, 2, 30, 0}, "2026-03-29T01:30:00.000Z", "gap -> 03:30 CEST"},
    {"Europe/Berlin", {2026, 3, 29, 3, 0, 0}, "2026-03-29T01:00:00.000Z", "after the gap"},
    {"Europe/Berlin", {2026, 10, 25, 1, 59, 0}, "2026-10-24T23:59:00.000Z", "before overlap"},
    {"Europe/Berlin", {2026, 10, 25, 2, 0, 0}, "2026-10-25T00:00:00.000Z", "overlap: CEST"},
    {"Europe/Berlin", {2026, 10, 25, 2, 30, 0}, "2026-10-25T00:30:00.000Z", "overlap: CEST"},
    {"Europe/Berlin", {2026, 10, 25, 3, 0, 0}, "2026-10-25T02:00:00.000Z", "after: CET"},
    /* Australia/Lord_Howe shifts by 30 minutes: 2026-04-05 02:00 (+11) -> 01:30 (+10:30);
     * 2026-10-04 02:00 (+10:30) -> 02:30 (+11). */
    {"Australia/Lord_Howe", {2026, 4, 5, 1, 29, 0}, "2026-04-04T14:29:00.000Z", "before"},
    {"Australia/Lord_Howe", {2026, 4, 5, 1, 30, 0}, "2026-04-04T14:30:00.000Z", "overlap: +11"},
    {"Australia/Lord_Howe", {2026, 4, 5, 1, 45, 0}, "2026-04-04T14:45:00.000Z", "overlap: +11"},
    {"Australia/Lord_Howe", {2026, 4, 5, 2, 0, 0}, "2026-04-04T15:30:00.000Z", "after: +10:30"},
    {"Australia/Lord_Howe", {2026, 10, 4, 1, 59, 0}, "2026-10-03T15:29:00.000Z", "before"},
    {"Australia/Lord_Howe", {2026, 10, 4, 2, 0, 0}, "2026-10-03T15:30:00.000Z", "gap -> 02:30"},
    {"Australia/Lord_Howe", {2026, 10, 4, 2, 15, 0}, "2026-10-03T15:45:00.000Z", "gap -> 02:45"},
    {"Australia/Lord_Howe", {2026, 10, 4, 2, 30, 0}, "2026-10-03T15:30:00.000Z", "after the gap"},
    /* Pacific/Apia skipped 2011-12-30: 23:59:59 on the 29th (-10) was followed by 00:00 on the
     * 31st (+14). A time on the 30th moves forward by the whole day. */
    {"Pacific/Apia", {2011, 12, 29, 23, 59, 0}, "2011-12-30T09:59:00.000Z", "last minute"},
    {"Pacific/Apia", {2011, 12, 30, 0, 0, 0}, "2011-12-30T10:00:00.000Z", "skipped -> 31st"},
    {"Pacific/Apia", {2011, 12, 30, 9, 0, 0}, "2011-12-30T19:00:00.000Z", "skipped -> 31st"},
    {"Pacific/Apia", {2011, 12, 31, 0, 0, 0}, "2011-12-30T10:00:00.000Z", "first of the 31st"},
    {"Pacific/Apia", {2011, 12, 31, 9, 0, 0}, "2011-12-30T19:00:00.000Z", "the 31st, 09:00"},
    /* Asia/Kolkata has had no transition since 1945. */
    {"Asia/Kolkata", {2026, 3, 8, 9, 0, 0}, "2026-03-08T03:30:00.000Z", "+05:30"},
    {"Asia/Kolkata", {2026, 11, 1, 1, 30, 0}, "2026-10-31T20:00:00.000Z", "+05:30"},
};

static void
check_real_zones(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct resolve_case *c = &cases[i];
        char got[TIMEFMT_BUF];
        int64_t utc_s = 0;

        CHECK(tz_resolve(c->zone, &c->w, &utc_s) == 0, "%s: resolve failed", c->zone);
        timefmt_format(utc_s * 1000, got);
        CHECK(strcmp(got, c->want) == 0, "%s %04d-%02d-%02d %02d:%02d (%s): got %s, want %s",
              c->zone, c->w.year, c->w.month, c->w.day, c->w.hour, c->w.minute, c->why, got,
              c->want);
    }
    struct tz_wall w = {2026, 1, 1, 0, 0, 0};
    int64_t utc_s;
    CHECK(tz_resolve("Nowhere/Atlantis", &w, &utc_s) == -1, "unknown zone resolved");
}

/* A synthetic zone: offset +1 h until T1, +3 h until T2 (four days later), then +2 h: a two-hour
 * gap and a one-hour overlap. (The resolver assumes one transition within TZ_RESOLVE_REACH_S of a
 * time, which every zone's rules keep.) */
#define T1 1000000000LL
#define T2 (T1 + 4 * 86400)

static int
table_offset(void *arg, int64_t utc_s, int *offset_s)
{
    (void)arg;
    *offset_s = utc_s < T1 ? 3600 : utc_s < T2 ? 3 * 3600 : 2 * 3600;
    return 0;
}

static void
check_table(void)
{
    static const struct {
        int64_t local_s, want_utc_s;
    } t[] = {
        {T1 + 3600 - 1, T1 - 1},             /* last time before the jump */
        {T1 + 3600, T1},                     /* gap: +1 h applies, forward by two hours */
        {T1 + 2 * 3600, T1 + 3600},          /* gap */
        {T1 + 3 * 3600, T1},                 /* the first time after the gap */
        {T2 + 2 * 3600 - 1, T2 - 3600 - 1},  /* just before the overlap: +3 h */
        {T2 + 2 * 3600, T2 - 3600},          /* overlap: the +3 h instant first */
        {T2 + 3 * 3600 - 1, T2 - 1},         /* last second of the overlap */
        {T2 + 3 * 3600, T2 + 3600},          /* after the overlap: +2 h */
        {T1 - 86400, T1 - 86400 - 3600},     /* a day before: plain */
        {T2 + 86400, T2 + 86400 - 2 * 3600}, /* a day after: plain */
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        int64_t got = 0;
        CHECK(tz_resolve_with(table_offset, NULL, t[i].local_s, &got) == 0, "resolve failed");
        CHECK(got == t[i].want_utc_s, "local %lld: got %lld, want %lld", (long long)t[i].local_s,
              (long long)got, (long long)t[i].want_utc_s);
    }
}

static void
check_walls(void)
{
    struct tz_wall w = {2024, 2, 29, 23, 59, 58}, back;
    tz_wall_from_seconds(tz_wall_seconds(&w), &back);
    CHECK(memcmp(&w, &back, sizeof w) == 0, "leap day round trip");
    struct tz_wall epoch = {1970, 1, 1, 0, 0, 0};
    CHECK(tz_wall_seconds(&epoch) == 0, "epoch");
    tz_wall_from_seconds(-1, &back);
    CHECK(back.year == 1969 && back.month == 12 && back.day == 31 && back.hour == 23 &&
              back.second == 59,
          "one second before the epoch");
    /* UTC -> wall clock -> UTC is the identity away from overlaps. */
    for (int64_t s = 1767225600; s < 1798761600; s += 7 * 3600 + 17) {
        struct tz_local l;
        int64_t utc_s;
        CHECK(tz_local("Europe/Berlin", s * 1000, &l) == 0, "tz_local");
        struct tz_wall lw = {l.year, l.month, l.day, l.hour, l.minute, l.second};
        CHECK(tz_resolve("Europe/Berlin", &lw, &utc_s) == 0, "resolve");
        bool overlap = l.month == 10 && l.day == 25 && l.hour == 2;
        CHECK(utc_s == s || (overlap && utc_s == s - 3600), "round trip of %lld gave %lld",
              (long long)s, (long long)utc_s);
    }
}

int
main(void)
{
    check_real_zones();
    check_table();
    check_walls();
    if (fails == 0)
        printf("test_tz: ok\n");
    return fails != 0;
}
