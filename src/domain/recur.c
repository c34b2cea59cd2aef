/* recur.c -- the rule subset of recur.h, checked by hand before libical sees it, and libical's
 * iterator on wall-clock (floating) times. The hand check gives each refusal a message a client
 * can act on and keeps out what Debian 12's libical 3.0.16 gets wrong: BYSETPOS outside MONTHLY
 * and YEARLY (ignored there), negative BYMONTHDAY (fixed only in 3.0.19), YEARLY BYMONTHDAY
 * without BYMONTH and week starts other than MO and SU (both read wrongly, found by the property
 * test against python-dateutil), EXRULE, and BYxxx parts that make libical search for seconds
 * for a day that never comes (February 30, a BYSETPOS past what a month holds: set_size_max).
 * libical generates nothing after its last year, RECUR_YEAR_LAST. */
#include "recur.h"

#include <libical/ical.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timefmt.h"

#define PART_NAME_MAX 16
#define VALUE_TEXT_MAX 24 /* bytes of one normalised list item */
#define UNTIL_LEN 16      /* YYYYMMDDTHHMMSSZ */
#define ORDINAL_MONTH_MAX 5
#define ORDINAL_YEAR_MAX 53
#define SETPOS_MONTH_MAX 31
#define SETPOS_YEAR_MAX 366
#define MONTHDAY_MAX 31
#define MONTHS 12
#define NORMAL_MAX (2 * RECUR_RULE_MAX) /* a rule's normalised text */

static pthread_mutex_t recur_mu = PTHREAD_MUTEX_INITIALIZER; /* guards every libical call */

enum part {
    P_FREQ,
    P_INTERVAL,
    P_COUNT,
    P_UNTIL,
    P_BYDAY,
    P_BYMONTHDAY,
    P_BYMONTH,
    P_BYSETPOS,
    P_WKST,
    PART_COUNT
};
static const char *const part_names[PART_COUNT] = {
    "FREQ", "INTERVAL", "COUNT", "UNTIL", "BYDAY", "BYMONTHDAY", "BYMONTH", "BYSETPOS", "WKST"};

enum freq { F_DAILY, F_WEEKLY, F_MONTHLY, F_YEARLY, FREQ_COUNT };
static const char *const freq_names[FREQ_COUNT] = {"DAILY", "WEEKLY", "MONTHLY", "YEARLY"};
static const char *const weekdays[] = {"MO", "TU", "WE", "TH", "FR", "SA", "SU"};
#define WEEKDAY_COUNT 7

/* One rule's parts: where each value starts in the text and how long it is (NULL: absent). */
struct parts {
    const char *v[PART_COUNT];
    size_t len[PART_COUNT];
    enum freq freq;
};

static int __attribute__((format(printf, 2, 3)))
refuse(char why[RECUR_WHY_MAX], const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, RECUR_WHY_MAX, fmt, ap);
    va_end(ap);
    return -1;
}

/* A decimal number with an optional sign and no leading zero, within -max..max, not 0. */
static int
number(const char *s, size_t len, bool sign_ok, int max, int *out)
{
    int sign = 1, v = 0;
    size_t i = 0;

    if (len > 0 && (s[0] == '+' || s[0] == '-')) {
        if (!sign_ok)
            return -1;
        sign = s[0] == '-' ? -1 : 1;
        i++;
    }
    if (i == len || s[i] == '0')
        return -1;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9' || v > max)
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (v > max)
        return -1;
    *out = sign * v;
    return 0;
}

static int
weekday(const char *s, size_t len)
{
    for (int d = 0; d < WEEKDAY_COUNT; d++)
        if (len == 2 && memcmp(s, weekdays[d], 2) == 0)
            return d;
    return -1;
}

/* Splits "NAME=VALUE;..." into p. */
static int
split(const char *text, struct parts *p, char why[RECUR_WHY_MAX])
{
    const char *s = text;

    memset(p, 0, sizeof *p);
    for (;;) {
        size_t n = strcspn(s, ";"), name_len = strcspn(s, "=");
        int k;

        if (n == 0)
            return refuse(why, "has an empty part (a stray ';')");
        if (name_len >= n)
            return refuse(why, "each part must be NAME=VALUE");
        for (k = 0; k < PART_COUNT; k++)
            if (strlen(part_names[k]) == name_len && memcmp(s, part_names[k], name_len) == 0)
                break;
        if (k == PART_COUNT)
            return refuse(why,
                          "%.*s is not supported (accepted: FREQ, INTERVAL, COUNT, UNTIL, BYDAY, "
                          "BYMONTHDAY, BYMONTH, BYSETPOS, WKST; upper case)",
                          (int)(name_len < PART_NAME_MAX ? name_len : PART_NAME_MAX), s);
        if (p->v[k] != NULL)
            return refuse(why, "names %s twice", part_names[k]);
        p->v[k] = s + name_len + 1;
        p->len[k] = n - name_len - 1;
        if (p->len[k] == 0)
            return refuse(why, "%s has no value", part_names[k]);
        if (s[n] == '\0')
            return 0;
        s += n + 1;
    }
}

/* Checks one list item: 0 with *key set (equal keys are the same value), or -1. */
typedef int (*item_fn)(const struct parts *p, const char *s, size_t len, int *key);

/* Calls item(p, s, len, &key) for each comma-separated item of part k; refuses empty items, more
 * than RECUR_LIST_MAX and repeated values. */
static int
each_item(const struct parts *p, enum part k, item_fn item, char why[RECUR_WHY_MAX])
{
    int keys[RECUR_LIST_MAX];
    const char *s = p->v[k], *end = s + p->len[k];
    size_t n = 0;

    while (s <= end) {
        const char *comma = memchr(s, ',', (size_t)(end - s));
        size_t len = comma ? (size_t)(comma - s) : (size_t)(end - s);

        if (n == RECUR_LIST_MAX)
            return refuse(why, "%s has more than %d values", part_names[k], RECUR_LIST_MAX);
        if (len == 0 || item(p, s, len, &keys[n]) != 0)
            return refuse(why, "%s has a value out of the accepted range: %.*s", part_names[k],
                          (int)(len < VALUE_TEXT_MAX ? len : VALUE_TEXT_MAX), s);
        for (size_t i = 0; i < n; i++)
            if (keys[i] == keys[n])
                return refuse(why, "%s repeats a value", part_names[k]);
        n++;
        s += len + 1;
    }
    return 0;
}

/* BYDAY item: [+|-][n]DD. Ordinals only with MONTHLY (1..5) or YEARLY (1..53, 1..5 with
 * BYMONTH, where they count within the month). */
static int
byday_item(const struct parts *p, const char *s, size_t len, int *key)
{
    int wd, n = 0;

    if (len < 2 || (wd = weekday(s + len - 2, 2)) < 0)
        return -1;
    if (len > 2) {
        int max =
            p->freq == F_MONTHLY || p->v[P_BYMONTH] != NULL ? ORDINAL_MONTH_MAX : ORDINAL_YEAR_MAX;
        if (p->freq != F_MONTHLY && p->freq != F_YEARLY)
            return -1;
        if (number(s, len - 2, true, max, &n) != 0)
            return -1;
    }
    *key = n * WEEKDAY_COUNT + wd;
    return 0;
}

static int
monthday_item(const struct parts *p, const char *s, size_t len, int *key)
{
    return number(s, len, false, MONTHDAY_MAX, key);
}

static int
month_item(const struct parts *p, const char *s, size_t len, int *key)
{
    return number(s, len, false, MONTHS, key);
}

static int
setpos_item(const struct parts *p, const char *s, size_t len, int *key)
{
    return number(s, len, true, p->freq == F_MONTHLY ? SETPOS_MONTH_MAX : SETPOS_YEAR_MAX, key);
}

/* UNTIL as a UTC date-time YYYYMMDDTHHMMSSZ (RFC 5545 wants UTC when DTSTART has a zone). */
static int
until_ms(const char *s, size_t len, int64_t *out)
{
    int f[6] = {0};
    static const int width[6] = {4, 2, 2, 2, 2, 2};
    size_t at = 0;

    if (len != UNTIL_LEN || s[8] != 'T' || s[15] != 'Z')
        return -1;
    for (int i = 0; i < 6; i++) {
        for (int d = 0; d < width[i]; d++, at++) {
            if (at == 8)
                at++;
            if (s[at] < '0' || s[at] > '9')
                return -1;
            f[i] = f[i] * 10 + (s[at] - '0');
        }
    }
    if (f[0] < 1970 || f[1] < 1 || f[1] > 12 || f[2] < 1 ||
        f[2] > timefmt_days_in_month(f[0], f[1]) || f[3] > 23 || f[4] > 59 || f[5] > 59)
        return -1;
    *out = ((timefmt_days_from_civil(f[0], f[1], f[2]) * 24 + f[3]) * 60 + f[4]) * 60000LL +
           f[5] * 1000LL;
    return 0;
}

/* A number inside a part that recur_rule_check already accepted (a short signed decimal). */
static int
part_int(const char *s)
{
    return (int)strtol(s, NULL, 10);
}

/* With both BYMONTH and BYMONTHDAY, some named day must exist in some named month (29 February
 * counts): otherwise libical searches until its last year for a date that never comes. */
static bool
some_date_exists(const struct parts *p)
{
    const char *m = p->v[P_BYMONTH], *m_end = m + p->len[P_BYMONTH];

    while (m < m_end) {
        int month = part_int(m), dim = month == 2 ? 29 : timefmt_days_in_month(2001, month);
        const char *d = p->v[P_BYMONTHDAY], *d_end = d + p->len[P_BYMONTHDAY];
        while (d < d_end) {
            if (part_int(d) <= dim)
                return true;
            d += strcspn(d, ",;") + 1;
        }
        m += strcspn(m, ",;") + 1;
    }
    return false;
}

/* The BYxxx parts parsed, for set_size_max. Weekdays count from MO = 0. */
struct by {
    size_t n_days;
    int ordinal[RECUR_LIST_MAX], weekday[RECUR_LIST_MAX];
    bool has_monthday, has_month;
    bool monthday[MONTHDAY_MAX + 1], month[MONTHS + 1];
};

static void
parse_by(const struct parts *p, struct by *b)
{
    const char *s, *end;

    memset(b, 0, sizeof *b);
    for (s = p->v[P_BYDAY], end = s ? s + p->len[P_BYDAY] : NULL; s && s < end;) {
        size_t len = strcspn(s, ",;");
        b->weekday[b->n_days] = weekday(s + len - 2, 2);
        b->ordinal[b->n_days++] = len > 2 ? part_int(s) : 0;
        s += len + 1;
    }
    for (s = p->v[P_BYMONTHDAY], end = s ? s + p->len[P_BYMONTHDAY] : NULL; s && s < end;) {
        b->has_monthday = true;
        b->monthday[part_int(s)] = true;
        s += strcspn(s, ",;") + 1;
    }
    for (s = p->v[P_BYMONTH], end = s ? s + p->len[P_BYMONTH] : NULL; s && s < end;) {
        b->has_month = true;
        b->month[part_int(s)] = true;
        s += strcspn(s, ",;") + 1;
    }
}

/* Whether day (0-based index) of a span of len days whose first is weekday first matches BYDAY,
 * ordinals counting within the span. */
static bool
day_matches(const struct by *b, int day, int len, int first)
{
    int wd = (first + day) % WEEKDAY_COUNT;

    if (b->n_days == 0)
        return true;
    for (size_t i = 0; i < b->n_days; i++) {
        int n = b->ordinal[i];
        if (b->weekday[i] == wd &&
            (n == 0 || (n > 0 && day / 7 + 1 == n) || (n < 0 && (len - 1 - day) / 7 + 1 == -n)))
            return true;
    }
    return false;
}

/* Days a month of len days, starting on weekday first, puts in the rule's set. */
static int
month_count(const struct by *b, int len, int first)
{
    int n = 0;

    if (b->n_days == 0 && !b->has_monthday)
        return 1; /* the first occurrence's day of the month */
    for (int d = 0; d < len; d++)
        n += (!b->has_monthday || b->monthday[d + 1]) && day_matches(b, d, len, first);
    return n;
}

/* The most times one period (a month for MONTHLY, a year for YEARLY) puts in the rule's set,
 * exactly: over every length and first weekday a month has, over every kind of year (leap or
 * not, from each weekday), which between them cover the whole Gregorian cycle. 0 means no period
 * ever holds a time, and a BYSETPOS past it never selects one: libical would search for
 * seconds (fuzz_recur found a MONTHLY BYSETPOS=21 taking 3.5 s), so both are refused. */
static int
set_size_max(const struct parts *p)
{
    struct by b;
    int best = 0;

    parse_by(p, &b);
    for (int leap = 0; leap <= 1; leap++)
        for (int jan1 = 0; jan1 < WEEKDAY_COUNT; jan1++) {
            int year = leap ? 2000 : 2001, n = 0, first = jan1;
            for (int m = 1; m <= MONTHS; m++) {
                int len = timefmt_days_in_month(year, m), c = 0;
                if (!b.has_month || b.month[m])
                    c = p->freq == F_MONTHLY || b.has_month ? month_count(&b, len, first) : 0;
                best = p->freq == F_MONTHLY && c > best ? c : best;
                n += c;
                first = (first + len) % WEEKDAY_COUNT;
            }
            if (p->freq == F_YEARLY && !b.has_month) { /* BYDAY within the whole year */
                n = b.n_days == 0 ? 1 : 0;
                for (int d = 0; b.n_days > 0 && d < 365 + leap; d++)
                    n += day_matches(&b, d, 365 + leap, jan1);
            }
            best = p->freq == F_YEARLY && n > best ? n : best;
        }
    return best;
}

static bool
setpos_reachable(const struct parts *p, int max)
{
    const char *s = p->v[P_BYSETPOS], *end = s + p->len[P_BYSETPOS];

    while (s < end) {
        int v = part_int(s);
        if (v > max || -v > max)
            return false;
        s += strcspn(s, ",;") + 1;
    }
    return true;
}

static int
check_parts(struct parts *p, struct recur_info *info, char why[RECUR_WHY_MAX])
{
    int v, f;

    if (p->v[P_FREQ] == NULL)
        return refuse(why, "needs FREQ");
    for (f = 0; f < FREQ_COUNT; f++)
        if (strlen(freq_names[f]) == p->len[P_FREQ] &&
            memcmp(p->v[P_FREQ], freq_names[f], p->len[P_FREQ]) == 0)
            break;
    if (f == FREQ_COUNT)
        return refuse(why, "FREQ must be DAILY, WEEKLY, MONTHLY or YEARLY");
    p->freq = (enum freq)f;
    if (p->v[P_INTERVAL] != NULL &&
        number(p->v[P_INTERVAL], p->len[P_INTERVAL], false, RECUR_INTERVAL_MAX, &v) != 0)
        return refuse(why, "INTERVAL must be 1 to %d", RECUR_INTERVAL_MAX);
    if (p->v[P_COUNT] != NULL && p->v[P_UNTIL] != NULL)
        return refuse(why, "may have COUNT or UNTIL, not both");
    if (p->v[P_COUNT] != NULL &&
        number(p->v[P_COUNT], p->len[P_COUNT], false, RECUR_COUNT_MAX, &v) != 0)
        return refuse(why, "COUNT must be 1 to %d", RECUR_COUNT_MAX);
    info->has_count = p->v[P_COUNT] != NULL;
    info->has_until = p->v[P_UNTIL] != NULL;
    if (info->has_until && until_ms(p->v[P_UNTIL], p->len[P_UNTIL], &info->until_ms) != 0)
        return refuse(why, "UNTIL must be a UTC date-time like 20261231T235959Z");
    /* With another week start, libical 3.0.16 drops the first week of a WEEKLY rule with an
     * INTERVAL (found by the property test against python-dateutil). */
    if (p->v[P_WKST] != NULL && weekday(p->v[P_WKST], p->len[P_WKST]) != 0 &&
        weekday(p->v[P_WKST], p->len[P_WKST]) != WEEKDAY_COUNT - 1)
        return refuse(why, "WKST must be MO or SU");
    if (p->v[P_BYMONTHDAY] != NULL && p->freq == F_WEEKLY)
        return refuse(why, "BYMONTHDAY does not go with FREQ=WEEKLY");
    /* RFC 5545 expands it to every month; libical 3.0.16 to the first occurrence's month only. */
    if (p->v[P_BYMONTHDAY] != NULL && p->freq == F_YEARLY && p->v[P_BYMONTH] == NULL)
        return refuse(why, "with FREQ=YEARLY, BYMONTHDAY needs BYMONTH (or use FREQ=MONTHLY)");
    if (p->v[P_BYSETPOS] != NULL && p->freq != F_MONTHLY && p->freq != F_YEARLY)
        return refuse(why, "BYSETPOS is accepted with FREQ=MONTHLY or YEARLY only");
    if (p->v[P_BYSETPOS] != NULL && p->v[P_BYDAY] == NULL && p->v[P_BYMONTHDAY] == NULL &&
        p->v[P_BYMONTH] == NULL)
        return refuse(why, "BYSETPOS needs BYDAY, BYMONTHDAY or BYMONTH next to it");
    if ((p->v[P_BYDAY] && each_item(p, P_BYDAY, byday_item, why) != 0) ||
        (p->v[P_BYMONTHDAY] && each_item(p, P_BYMONTHDAY, monthday_item, why) != 0) ||
        (p->v[P_BYMONTH] && each_item(p, P_BYMONTH, month_item, why) != 0) ||
        (p->v[P_BYSETPOS] && each_item(p, P_BYSETPOS, setpos_item, why) != 0))
        return -1;
    if (p->v[P_BYMONTH] != NULL && p->v[P_BYMONTHDAY] != NULL && !some_date_exists(p))
        return refuse(why, "BYMONTHDAY and BYMONTH name no date that exists");
    if (p->freq == F_MONTHLY || p->freq == F_YEARLY) {
        const char *period = p->freq == F_MONTHLY ? "month" : "year";
        int max = set_size_max(p);
        if (max == 0)
            return refuse(why, "BYDAY and BYMONTHDAY select no day in any %s", period);
        if (p->v[P_BYSETPOS] != NULL && !setpos_reachable(p, max))
            return refuse(why, "BYSETPOS is past the most times a %s can hold (%d)", period, max);
    }
    return 0;
}

static int
cmp_text(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

/* "NAME=a,b;..." with the parts in part_names order, each list sorted, '+' signs dropped and the
 * defaults INTERVAL=1 and WKST=MO left out (libical writes neither): two readings of one rule
 * give the same text. -1 when the text does not split. */
static int
normalise(const char *text, char out[NORMAL_MAX])
{
    struct parts p;
    char why[RECUR_WHY_MAX], items[RECUR_LIST_MAX][VALUE_TEXT_MAX];
    size_t len = 0;

    if (split(text, &p, why) != 0)
        return -1;
    out[0] = '\0';
    for (int k = 0; k < PART_COUNT; k++) {
        const char *s = p.v[k], *end;
        size_t n = 0;

        if (s == NULL || (k == P_INTERVAL && p.len[k] == 1 && s[0] == '1') ||
            (k == P_WKST && p.len[k] == 2 && memcmp(s, "MO", 2) == 0))
            continue;
        end = s + p.len[k];
        while (s <= end && n < RECUR_LIST_MAX) {
            size_t l = strcspn(s, ",;");
            if (l > (size_t)(end - s))
                l = (size_t)(end - s);
            snprintf(items[n++], VALUE_TEXT_MAX, "%.*s", (int)(l - (s[0] == '+')),
                     s + (s[0] == '+'));
            s += l + 1;
        }
        qsort(items, n, sizeof items[0], cmp_text);
        len +=
            (size_t)snprintf(out + len, NORMAL_MAX - len, "%s%s=", len ? ";" : "", part_names[k]);
        for (size_t i = 0; i < n && len < NORMAL_MAX; i++)
            len += (size_t)snprintf(out + len, NORMAL_MAX - len, "%s%s", i ? "," : "", items[i]);
        if (len >= NORMAL_MAX)
            return -1;
    }
    return 0;
}

/* libical's reading of text, serialised back and normalised. -1 when it refuses the text. */
static int
libical_reading(const char *text, char out[NORMAL_MAX])
{
    int rc = -1;

    pthread_mutex_lock(&recur_mu);
    icalerror_clear_errno();
    struct icalrecurrencetype r = icalrecurrencetype_from_string(text);
    char *back = r.freq == ICAL_NO_RECURRENCE || icalerrno != ICAL_NO_ERROR
                     ? NULL
                     : icalrecurrencetype_as_string_r(&r);
    icalerror_clear_errno();
    pthread_mutex_unlock(&recur_mu);
    if (back != NULL && strlen(back) < RECUR_RULE_MAX * 2)
        rc = normalise(back, out);
    free(back);
    return rc;
}

int
recur_rule_check(const char *text, struct recur_info *info, char why[RECUR_WHY_MAX])
{
    char mine[NORMAL_MAX], theirs[NORMAL_MAX];
    struct parts p;
    size_t len = strlen(text);

    memset(info, 0, sizeof *info);
    if (len == 0 || len > RECUR_RULE_MAX)
        return refuse(why, "must be 1 to %d characters", RECUR_RULE_MAX);
    if (strncmp(text, "RRULE:", 6) == 0)
        return refuse(why, "is the rule's text without \"RRULE:\"");
    for (size_t i = 0; i < len; i++)
        if (!((text[i] >= 'A' && text[i] <= 'Z') || (text[i] >= '0' && text[i] <= '9') ||
              strchr("=;,+-", text[i]) != NULL))
            return refuse(why, "may hold only upper-case letters, digits and = ; , + -");
    if (split(text, &p, why) != 0 || check_parts(&p, info, why) != 0)
        return -1;
    if (normalise(text, mine) != 0 || libical_reading(text, theirs) != 0 ||
        strcmp(mine, theirs) != 0)
        return refuse(why, "is not read back the same by the expansion library");
    return 0;
}

/* ---- expansion ---------------------------------------------------------------------------- */

/* A DAILY rule with BYMONTHDAY is expanded as MONTHLY (see monthly_for_daily), which libical
 * walks month by month; this iterator then keeps the DAILY rule's INTERVAL and COUNT itself. */
struct recur_iter {
    icalrecur_iterator *it;
    bool has_count;
    int every_days;    /* > 0: a DAILY rule expanded as MONTHLY, its INTERVAL */
    int64_t start_day; /* then: dtstart's day (days since 1970-01-01), which INTERVAL counts from */
    int count_left;    /* then, with has_count: times still to generate */
};

static struct icaltimetype
floating(const struct tz_wall *w)
{
    struct icaltimetype t = icaltime_null_time();

    t.year = w->year;
    t.month = w->month;
    t.day = w->day;
    t.hour = w->hour;
    t.minute = w->minute;
    t.second = w->second;
    t.is_date = 0;
    t.zone = NULL;
    return t;
}

/* libical walks a DAILY rule day by day, testing each day against BYMONTH, BYMONTHDAY and BYDAY:
 * FREQ=DAILY;BYMONTH=2;BYMONTHDAY=29;BYDAY=TU spent 28 ms (under recur_mu, which every series in
 * the process waits for) on each of its next times, 28 years apart, and 560 ms on its list to
 * RECUR_YEAR_LAST. With BYMONTHDAY the days a DAILY rule can generate are those of the MONTHLY
 * rule with the same BY parts (RFC 5545: for MONTHLY, BYMONTH and BYDAY limit what BYMONTHDAY
 * expands to, as they limit a DAILY rule's days; the subset has no BYDAY ordinals and no BYSETPOS
 * with DAILY), which libical walks month by month (0.6 ms for that gap): the DAILY rule's times
 * are those, every INTERVAL-th day from dtstart's, the first COUNT of them. So the rule goes to
 * libical as MONTHLY without INTERVAL and COUNT, and recur_iter_next keeps the two. */
static void
monthly_for_daily(struct recur_iter *ri, struct icalrecurrencetype *r,
                  const struct tz_wall *dtstart)
{
    if (r->freq != ICAL_DAILY_RECURRENCE || r->by_month_day[0] == ICAL_RECURRENCE_ARRAY_MAX)
        return;
    ri->every_days = r->interval > 0 ? r->interval : 1;
    ri->start_day = timefmt_days_from_civil(dtstart->year, dtstart->month, dtstart->day);
    ri->count_left = r->count;
    r->freq = ICAL_MONTHLY_RECURRENCE;
    r->interval = 1;
    r->count = 0;
}

static struct recur_iter *
iter_new(const char *text, const struct tz_wall *dtstart, bool counted)
{
    struct recur_iter *ri = calloc(1, sizeof *ri);

    if (ri == NULL)
        return NULL;
    pthread_mutex_lock(&recur_mu);
    struct icalrecurrencetype r = icalrecurrencetype_from_string(text);
    if (r.freq != ICAL_NO_RECURRENCE) {
        r.until = icaltime_null_time();
        if (!counted)
            r.count = 0;
        ri->has_count = r.count != 0;
        monthly_for_daily(ri, &r, dtstart);
        ri->it = icalrecur_iterator_new(r, floating(dtstart));
    }
    icalerror_clear_errno();
    pthread_mutex_unlock(&recur_mu);
    if (ri->it == NULL) {
        free(ri);
        return NULL;
    }
    return ri;
}

struct recur_iter *
recur_iter_new(const char *text, const struct tz_wall *dtstart)
{
    return iter_new(text, dtstart, true);
}

struct recur_iter *
recur_iter_new_uncounted(const char *text, const struct tz_wall *dtstart)
{
    return iter_new(text, dtstart, false);
}

int
recur_iter_skip_to(struct recur_iter *ri, const struct tz_wall *from)
{
    int ok;

    if (ri->has_count)
        return -1;
    if (from->year > RECUR_YEAR_LAST)
        return 1;
    pthread_mutex_lock(&recur_mu);
    ok = icalrecur_iterator_set_start(ri->it, floating(from));
    icalerror_clear_errno();
    pthread_mutex_unlock(&recur_mu);
    /* Without a COUNT libical refuses only a start it moved (to the next period in step with
     * INTERVAL) past RECUR_YEAR_LAST: the rule has nothing from `from` on there either. */
    return ok ? 0 : 1;
}

int
recur_iter_next(struct recur_iter *ri, struct tz_wall *out)
{
    struct icaltimetype t;

    if (ri->every_days > 0 && ri->has_count && ri->count_left == 0)
        return 0;
    pthread_mutex_lock(&recur_mu);
    do
        t = icalrecur_iterator_next(ri->it);
    while (ri->every_days > 1 && !icaltime_is_null_time(t) &&
           (timefmt_days_from_civil(t.year, t.month, t.day) - ri->start_day) % ri->every_days != 0);
    icalerror_clear_errno();
    pthread_mutex_unlock(&recur_mu);
    if (icaltime_is_null_time(t))
        return 0;
    if (ri->every_days > 0 && ri->has_count)
        ri->count_left--;
    *out = (struct tz_wall){t.year, t.month, t.day, t.hour, t.minute, t.second};
    return 1;
}

void
recur_iter_free(struct recur_iter *ri)
{
    if (ri == NULL)
        return;
    pthread_mutex_lock(&recur_mu);
    icalrecur_iterator_free(ri->it);
    pthread_mutex_unlock(&recur_mu);
    free(ri);
}
