/* timefmt.c -- RFC 3339 time stamps <-> milliseconds since the Unix epoch (UTC).
 * Pure arithmetic on the proleptic Gregorian calendar: the process time zone (TZ, mktime,
 * timegm) is never consulted, so results do not depend on the environment. */
#include "timefmt.h"

#include <time.h>

#define MS_PER_DAY 86400000LL
/* Instants accepted by timefmt_parse: 1970-01-01T00:00:00.000Z .. 9999-12-31T23:59:59.999Z. */
#define PARSE_MIN_MS 0LL
#define PARSE_MAX_MS TIMEFMT_MS_MAX
/* timefmt_format clamps to 0000-01-01T00:00:00.000Z .. PARSE_MAX_MS so the year always has four
 * digits and the text fits TIMEFMT_BUF (fire times may precede 1970 by up to four weeks). */
#define FORMAT_MIN_MS (-62167219200000LL)
#define FRACTION_DIGITS_MAX 9
/* "YYYY-MM-DDTHH:MM:SSZ", the shortest valid input. */
#define SHORTEST_INPUT 20

/* March-based years make leap days fall last. */
int64_t
timefmt_days_from_civil(int64_t y, int m, int d)
{
    int64_t era, yoe, doy, doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;
    doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

void
timefmt_civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    int64_t era, doe, yoe, doy, mp;

    z += 719468;
    era = (z >= 0 ? z : z - 146096) / 146097;
    doe = z - era * 146097;
    yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

int
timefmt_days_in_month(int64_t y, int m)
{
    static const int dim[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

    return m == 2 ? 28 + leap : dim[m - 1];
}

/* Reads exactly n ASCII digits. Returns 0 or -1. */
static int
num(const char *s, int n, int *out)
{
    int v = 0;

    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

/* Parses the offset at s (exactly len bytes): "Z", "z" or "+hh:mm"/"-hh:mm". */
static int
offset(const char *s, size_t len, int64_t *off_ms)
{
    int hh, mm;

    if (len == 1 && (s[0] == 'Z' || s[0] == 'z')) {
        *off_ms = 0;
        return 0;
    }
    if (len != 6 || (s[0] != '+' && s[0] != '-') || s[3] != ':')
        return -1;
    if (num(s + 1, 2, &hh) != 0 || num(s + 4, 2, &mm) != 0 || hh > 23 || mm > 59)
        return -1;
    *off_ms = (hh * 60LL + mm) * 60000LL * (s[0] == '-' ? -1 : 1);
    return 0;
}

int
timefmt_parse(const char *s, size_t len, int64_t *ms_out)
{
    int y, mo, d, h, mi, sec, ms = 0, scale = 100;
    size_t i = 19;
    int64_t off, t;

    if (len < SHORTEST_INPUT || len > TIMEFMT_INPUT_MAX)
        return -1;
    if (num(s, 4, &y) || s[4] != '-' || num(s + 5, 2, &mo) || s[7] != '-' || num(s + 8, 2, &d) ||
        (s[10] != 'T' && s[10] != 't') || num(s + 11, 2, &h) || s[13] != ':' ||
        num(s + 14, 2, &mi) || s[16] != ':' || num(s + 17, 2, &sec))
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > timefmt_days_in_month(y, mo) || h > 23 || mi > 59 ||
        sec > 59)
        return -1;
    if (s[i] == '.') {
        size_t first = ++i;
        while (i < len && s[i] >= '0' && s[i] <= '9') {
            ms += (s[i] - '0') * scale; /* digits past the third add 0: truncation */
            scale /= 10;
            i++;
        }
        if (i == first || i - first > FRACTION_DIGITS_MAX)
            return -1;
    }
    if (offset(s + i, len - i, &off) != 0)
        return -1;
    t = timefmt_days_from_civil(y, mo, d) * MS_PER_DAY + ((h * 60LL + mi) * 60 + sec) * 1000 + ms -
        off;
    if (t < PARSE_MIN_MS || t > PARSE_MAX_MS)
        return -1;
    *ms_out = t;
    return 0;
}

static void
put(char *p, int64_t v, int n)
{
    for (int i = n - 1; i >= 0; i--) {
        p[i] = (char)('0' + v % 10);
        v /= 10;
    }
}

char *
timefmt_format(int64_t ms, char buf[TIMEFMT_BUF])
{
    int64_t days, rem, y;
    int m, d;

    if (ms < FORMAT_MIN_MS)
        ms = FORMAT_MIN_MS;
    if (ms > PARSE_MAX_MS)
        ms = PARSE_MAX_MS;
    /* Floor division, so instants before 1970 land on the right day. */
    days = ms / MS_PER_DAY;
    rem = ms % MS_PER_DAY;
    if (rem < 0) {
        rem += MS_PER_DAY;
        days--;
    }
    timefmt_civil_from_days(days, &y, &m, &d);
    put(buf, y, 4);
    buf[4] = '-';
    put(buf + 5, m, 2);
    buf[7] = '-';
    put(buf + 8, d, 2);
    buf[10] = 'T';
    put(buf + 11, rem / 3600000, 2);
    buf[13] = ':';
    put(buf + 14, rem / 60000 % 60, 2);
    buf[16] = ':';
    put(buf + 17, rem / 1000 % 60, 2);
    buf[19] = '.';
    put(buf + 20, rem % 1000, 3);
    buf[23] = 'Z';
    buf[24] = '\0';
    return buf;
}

int64_t
timefmt_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
timefmt_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
timefmt_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void
timefmt_sleep_ms(int64_t ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

    while (ms > 0 && nanosleep(&ts, &ts) != 0)
        ;
}
