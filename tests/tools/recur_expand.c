/* recur_expand.c -- the C side of the recurrence property test (tests/property/recur_property.py):
 * for each input line "zone<TAB>YYYYMMDDTHHMMSS<TAB>rule<TAB>n" (the first occurrence's
 * wall-clock time in zone), prints one line: "ERR <reason>" when tocsin refuses the series, else
 * "OK <walls>|<instants>|<from> <instants>": the first n wall-clock times libical generates
 * (YYYYMMDDTHHMMSS, space separated), then the original starts series.c makes of them (UTC
 * milliseconds) up to the last of those walls' instants, then those it makes from a point in the
 * middle (the instant of the middle wall, or a millisecond after it), as a read of a window far
 * from the start does: a COUNT rule with the UNTIL equivalent series_sync stores, every rule
 * moved there by libical rather than walked. The series goes through the production path:
 * recur_rule_check, series_check_start, series_count_until, series_gen. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "series.h"
#include "tz.h"

#define LINE_MAX_LEN 1024
#define WALLS_MAX 400

static int
parse_wall(const char *s, struct tz_wall *w)
{
    return sscanf(s, "%4d%2d%2dT%2d%2d%2d", &w->year, &w->month, &w->day, &w->hour, &w->minute,
                  &w->second) == 6
               ? 0
               : -1;
}

/* The original starts of m from from_ms on, up to bound_ms, space separated. */
static void
print_from(const struct meeting *m, int64_t from_ms, int64_t bound_ms)
{
    struct series_gen g;
    int64_t t;

    if (series_gen_init(&g, m, from_ms) == 0)
        while (series_gen_next(&g, &t) == 1 && t <= bound_ms)
            printf(" %lld", (long long)t);
    series_gen_fini(&g);
}

static void
expand(char *zone, const char *start, char *rule, int n)
{
    struct meeting m;
    struct tz_wall w, walls[WALLS_MAX];
    struct recur_info info;
    char why[RECUR_WHY_MAX];
    int64_t utc_s, bound_s;
    int got = 0;

    if (parse_wall(start, &w) != 0 || n < 1 || n > WALLS_MAX || tz_resolve(zone, &w, &utc_s)) {
        printf("ERR bad input line\n");
        return;
    }
    if (recur_rule_check(rule, &info, why) != 0) {
        printf("ERR rule: %s\n", why);
        return;
    }
    meeting_init(&m);
    m.time_zone = zone;
    m.starts_at_ms = utc_s * 1000;
    struct meeting_recurrence rec = {.rrule = rule};
    m.recurrence = &rec;
    if (series_check_start(&m, why) != 0) {
        printf("ERR start: %s\n", why);
        return;
    }
    struct recur_iter *it = recur_iter_new(rule, &w);
    while (it != NULL && got < n && recur_iter_next(it, &walls[got]) == 1)
        got++;
    recur_iter_free(it);
    printf("OK");
    for (int i = 0; i < got; i++)
        printf(" %04d%02d%02dT%02d%02d%02d", walls[i].year, walls[i].month, walls[i].day,
               walls[i].hour, walls[i].minute, walls[i].second);
    printf("|");
    if (got > 0 && tz_resolve(zone, &walls[got - 1], &bound_s) == 0) {
        print_from(&m, m.starts_at_ms, bound_s * 1000);
        int64_t until = 0, mid_s;
        int counted = series_count_until(&m, &until);
        rec.has_count_until = counted == 1;
        rec.count_until_ms = until;
        if (counted >= 0 && tz_resolve(zone, &walls[got / 2], &mid_s) == 0) {
            int64_t from = mid_s * 1000 + m.starts_at_ms % 1000 + got % 2;
            printf("|%lld", (long long)from);
            print_from(&m, from, bound_s * 1000);
        }
    }
    printf("\n");
}

int
main(void)
{
    char line[LINE_MAX_LEN];

    while (fgets(line, sizeof line, stdin) != NULL) {
        char *zone = strtok(line, "\t"), *start = strtok(NULL, "\t"), *rule = strtok(NULL, "\t");
        char *count = strtok(NULL, "\t\n");
        if (zone == NULL || start == NULL || rule == NULL || count == NULL)
            printf("ERR bad input line\n");
        else
            expand(zone, start, rule, atoi(count));
        fflush(stdout);
    }
    return 0;
}
