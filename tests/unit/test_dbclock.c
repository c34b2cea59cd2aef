/* test_dbclock.c -- the database clock estimate: "now" is never ahead of the database's clock
 * wherever inside a sample's round trip the database read its clock (an offer the fire statement
 * would refuse holds its claim and waits for the next sweep), the skew is the middle estimate, and
 * the sample with the shortest round trip of the window wins. */
#include <stdint.h>

#include "check.h"
#include "dbclock.h"
#include "timefmt.h"

/* The offset dbclock_now_ms() applies to the local clock now. */
static int64_t
applied_offset(int64_t *slack)
{
    int64_t a = timefmt_now_ms(), n = dbclock_now_ms(), b = timefmt_now_ms();

    *slack = b - a; /* the local clock ticked meanwhile */
    return n - a;
}

/* A database clock ahead by `ahead` ms, read `at` ms into a round trip of `rtt` ms: the applied
 * offset is at most the true one, and less by at most the round trip and the truncation. */
static void
test_never_ahead(void)
{
    static const struct {
        int64_t ahead, rtt, at;
    } cases[] = {
        {0, 0, 0},
        {0, 10, 0},
        {0, 10, 10},
        {0, 10, 5},
        {5000, 4, 0},
        {5000, 4, 4},
        {-5000, 6, 1},
        {-5000, 6, 6},
        {250, 1, 0},
        {250, 1, 1},
        {0, DBCLOCK_RTT_MAX_MS, DBCLOCK_RTT_MAX_MS},
    };

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t before = 1795420800000LL + (int64_t)i * 100000, slack;
        /* A fresh window each time: DBCLOCK_WINDOW samples of the same reading. */
        for (int k = 0; k < DBCLOCK_WINDOW; k++)
            dbclock_observe(before, before + cases[i].at + cases[i].ahead, before + cases[i].rtt);
        int64_t got = applied_offset(&slack);
        CHECK(got <= cases[i].ahead + slack, "case %zu: applied %lld, the database is %lld ahead",
              i, (long long)got, (long long)cases[i].ahead);
        CHECK(got >= cases[i].ahead - cases[i].rtt - 1,
              "case %zu: applied %lld, late by more than the round trip %lld", i, (long long)got,
              (long long)cases[i].rtt);
        int64_t skew = dbclock_skew_ms(), want = -(cases[i].ahead + cases[i].at - cases[i].rtt / 2);
        CHECK(skew == want, "case %zu: skew %lld, want %lld", i, (long long)skew, (long long)want);
    }
}

/* The shortest round trip of the window decides; a longer one later does not displace it, and a
 * sample past DBCLOCK_RTT_MAX_MS or with time going backwards is ignored. */
static void
test_best_round_trip(void)
{
    int64_t t = 1795420800000LL, slack;

    for (int k = 0; k < DBCLOCK_WINDOW; k++)
        dbclock_observe(t, t + 1000 + 2, t + 4); /* 1 s ahead, 4 ms trips */
    dbclock_observe(t, t + 1000 + 40, t + 80);   /* 80 ms trip, read late in it */
    dbclock_observe(t, t + 9000, t + DBCLOCK_RTT_MAX_MS + 1);
    dbclock_observe(t + 10, t + 9000, t);
    int64_t got = applied_offset(&slack);
    CHECK(got >= 1000 - 4 - 1 && got <= 1000 + slack, "applied %lld, want the 4 ms sample's",
          (long long)got);
}

/* A step of either clock (NTP, by hand): the samples from before it stop deciding at once, though
 * their round trips were shorter, so "now" is never ahead of the database after a step forward of
 * the local clock, nor far behind it after one back. */
static void
test_clock_step(void)
{
    int64_t t = 1795420800000LL, slack;

    for (int k = 0; k < DBCLOCK_WINDOW; k++)
        dbclock_observe(t, t + 1000 + 2, t + 4); /* the database 1 s ahead, 4 ms trips */
    t += 5000 + 60000; /* a minute on, this clock stepped 5 s forward: the database 4 s behind */
    dbclock_observe(t, t - 4000 + 10, t + 20);
    int64_t got = applied_offset(&slack);
    CHECK(got <= -4000 + slack && got >= -4000 - 20 - 1, "after a step forward: applied %lld",
          (long long)got);
    t += 60000 - 10000; /* and then 10 s back: the database 6 s ahead */
    dbclock_observe(t, t + 6000 + 5, t + 30);
    got = applied_offset(&slack);
    CHECK(got <= 6000 + slack && got >= 6000 - 30 - 1, "after a step back: applied %lld",
          (long long)got);
    /* Samples that agree with the new offset join the window again. */
    dbclock_observe(t + 100, t + 100 + 6000 + 1, t + 102);
    got = applied_offset(&slack);
    CHECK(got <= 6000 + slack && got >= 6000 - 2 - 1, "the shorter trip decides: applied %lld",
          (long long)got);
}

int
main(void)
{
    test_never_ahead();
    test_best_round_trip();
    test_clock_step();
    return fails == 0 ? 0 : 1;
}
