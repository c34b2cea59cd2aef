/* recur.h -- recurrence rules (RFC 5545 RRULE text without "RRULE:") in the subset tocsin accepts,
 * and their expansion on local wall-clock times by libical. libical lives only here (tz.c reads
 * zones itself); this module never deals with zones or UTC: series.c resolves what it generates
 * with tz_resolve. libical's recurrence code keeps no zone state, but it reports errors through a
 * library-wide errno, so every call into it is serialised by this module's mutex. */
#ifndef TOCSIN_RECUR_H
#define TOCSIN_RECUR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tz.h"

#define RECUR_RULE_MAX 256      /* bytes of rule text */
#define RECUR_INTERVAL_MAX 1000 /* INTERVAL=1..1000 */
#define RECUR_COUNT_MAX 10000   /* COUNT=1..10000 */
#define RECUR_LIST_MAX 32       /* values in one BYxxx list */
#define RECUR_WHY_MAX 160       /* a refusal's message */

/* What recur_rule_check learnt about a rule that the expansion needs. */
struct recur_info {
    bool has_count;
    bool has_until;
    int64_t until_ms; /* UTC; only with has_until (the caller filters by it on resolved times) */
};

/* Checks text against the accepted subset (docs/design.md section 9): FREQ DAILY, WEEKLY, MONTHLY
 * or YEARLY (required); INTERVAL; COUNT or UNTIL (a UTC date-time); BYDAY (ordinals only with
 * MONTHLY, 1..5, or YEARLY, 1..53, or 1..5 with BYMONTH); BYMONTHDAY (1..31, not with WEEKLY,
 * with YEARLY only next to BYMONTH); BYMONTH; BYSETPOS (with MONTHLY or YEARLY and another BYxxx
 * part); WKST (MO or SU). Upper case, no repeated part or value. Then parses it with libical,
 * serialises libical's reading back and compares the two part by part: libical reads some malformed
 * values as others (BYDAY=255SU as -1SU, INTERVAL=70000 as 4464), and a rule that does not survive
 * the round trip is refused. 0 with *info filled, or -1 with a message for the client in why
 * (RECUR_WHY_MAX bytes). */
int recur_rule_check(const char *text, struct recur_info *info, char why[RECUR_WHY_MAX]);

struct recur_iter;

/* Starts the expansion of a checked rule from dtstart (a wall-clock time; the zone is the
 * caller's). UNTIL is left out: the caller compares resolved UTC times with info.until_ms, which
 * libical cannot do on wall-clock times. COUNT stays in the iterator (it counts what the rule
 * generates, dtstart first when it matches). A DAILY rule with BYMONTHDAY goes to libical as the
 * MONTHLY rule generating the same days, which it walks month by month instead of day by day
 * (recur.c). NULL when out of memory or libical refuses the rule. Free with recur_iter_free. */
struct recur_iter *recur_iter_new(const char *text, const struct tz_wall *dtstart);
/* The same without the rule's COUNT: the rule's times go on past it, so recur_iter_skip_to can
 * move the iterator. For a caller that ends the expansion itself at the COUNT-th time (series.c,
 * with the instant series_count_until computed once and stored with the series). */
struct recur_iter *recur_iter_new_uncounted(const char *text, const struct tz_wall *dtstart);
/* libical generates nothing after this year (and refuses to start an iterator past it). */
#define RECUR_YEAR_LAST 2582
/* Moves a fresh iterator (no COUNT) so that it generates from `from` on, skipping what lies
 * before without walking it. 0 when moved; 1 when the rule has nothing from `from` on within
 * libical's years (`from`, or the first period in step with INTERVAL after it, is past
 * RECUR_YEAR_LAST), the iterator left as it was; -1 when the rule has a COUNT (it must be walked
 * to be counted). */
int recur_iter_skip_to(struct recur_iter *it, const struct tz_wall *from);
/* The next wall-clock time the rule generates, in order: 1 with *out set, 0 at the end (COUNT
 * reached, or the rule has no further time libical can compute). */
int recur_iter_next(struct recur_iter *it, struct tz_wall *out);
void recur_iter_free(struct recur_iter *it);

#endif
