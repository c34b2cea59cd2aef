/* tzfile.c -- the TZif reader and POSIX TZ rule of tzfile.h (RFC 8536). Everything read from the
 * bytes is bounded and checked before use: counts against the length, type indexes against the
 * type count, offsets against TZFILE_OFFSET_MAX, transitions strictly increasing. */
#include "tzfile.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "panic.h"
#include "timefmt.h"

#define HEADER_LEN 44
#define TTINFO_LEN 6
#define SECONDS_PER_DAY 86400
#define SECONDS_PER_HOUR 3600
#define RULE_HOURS_MAX 167       /* RFC 8536's extension of POSIX rule times */
#define DEFAULT_RULE_TIME_S 7200 /* 02:00, POSIX's default change time */
#define RULE_YEARS 3             /* the year of t and either side of it */

struct header {
    char version;
    uint32_t isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt;
};

static uint32_t
be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t
be64(const unsigned char *p)
{
    return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

static int
read_header(const unsigned char *b, size_t len, struct header *h)
{
    if (len < HEADER_LEN || memcmp(b, "TZif", 4) != 0)
        return -1;
    h->version = (char)b[4];
    if (h->version != '\0' && (h->version < '2' || h->version > '4'))
        return -1;
    h->isutcnt = be32(b + 20);
    h->isstdcnt = be32(b + 24);
    h->leapcnt = be32(b + 28);
    h->timecnt = be32(b + 32);
    h->typecnt = be32(b + 36);
    h->charcnt = be32(b + 40);
    if (h->typecnt == 0 || h->typecnt > TZFILE_TYPES_MAX || h->timecnt > TZFILE_TRANSITIONS_MAX ||
        h->leapcnt > TZFILE_TRANSITIONS_MAX || h->charcnt > TZFILE_BYTES_MAX ||
        (h->isstdcnt != 0 && h->isstdcnt != h->typecnt) ||
        (h->isutcnt != 0 && h->isutcnt != h->typecnt))
        return -1;
    return 0;
}

/* Bytes of the data block after a header, with time_size-byte times (4 in v1, 8 after). */
static size_t
block_len(const struct header *h, size_t time_size)
{
    return (size_t)h->timecnt * (time_size + 1) + (size_t)h->typecnt * TTINFO_LEN + h->charcnt +
           (size_t)h->leapcnt * (time_size + 4) + h->isstdcnt + h->isutcnt;
}

/* Reads the transitions and types of one data block into tz. */
static int
read_block(const unsigned char *b, const struct header *h, size_t time_size, struct tzfile *tz)
{
    const unsigned char *types = b + (size_t)h->timecnt * time_size;
    const unsigned char *info = types + h->timecnt;
    int offsets[TZFILE_TYPES_MAX] = {0};

    TOCSIN_ASSERT(h->typecnt >= 1); /* read_header refuses a file without types */
    for (uint32_t i = 0; i < h->typecnt; i++) {
        int32_t off = (int32_t)be32(info + (size_t)i * TTINFO_LEN);
        if (off < -TZFILE_OFFSET_MAX || off > TZFILE_OFFSET_MAX ||
            info[(size_t)i * TTINFO_LEN + 4] > 1 || info[(size_t)i * TTINFO_LEN + 5] >= h->charcnt)
            return -1;
        offsets[i] = off;
    }
    tz->n = h->timecnt;
    tz->first_offset_s = offsets[0];
    tz->at = malloc((tz->n ? tz->n : 1) * sizeof *tz->at);
    tz->offset_after = malloc((tz->n ? tz->n : 1) * sizeof *tz->offset_after);
    if (tz->at == NULL || tz->offset_after == NULL)
        return -1;
    for (size_t i = 0; i < tz->n; i++) {
        tz->at[i] = time_size == 8 ? be64(b + i * 8) : (int32_t)be32(b + i * 4);
        if (types[i] >= h->typecnt || (i > 0 && tz->at[i] <= tz->at[i - 1]))
            return -1;
        tz->offset_after[i] = offsets[types[i]];
    }
    return 0;
}

int
tzfile_parse(const unsigned char *buf, size_t len, struct tzfile *tz)
{
    struct header h;
    size_t at;

    memset(tz, 0, sizeof *tz);
    if (len > TZFILE_BYTES_MAX || read_header(buf, len, &h) != 0)
        return -1;
    at = HEADER_LEN + block_len(&h, 4);
    if (at > len)
        return -1;
    if (h.version == '\0') {
        if (read_block(buf + HEADER_LEN, &h, 4, tz) == 0)
            return 0;
        tzfile_fini(tz);
        return -1;
    }
    const unsigned char *second = buf + at;
    if (read_header(second, len - at, &h) != 0 || block_len(&h, 8) > len - at - HEADER_LEN ||
        read_block(second + HEADER_LEN, &h, 8, tz) != 0)
        goto fail;
    /* The footer: "\n<TZ string>\n"; an empty string means no rule. */
    const char *foot = (const char *)second + HEADER_LEN + block_len(&h, 8);
    size_t left = len - (size_t)(foot - (const char *)buf);
    const char *nl = left >= 2 && foot[0] == '\n' ? memchr(foot + 1, '\n', left - 1) : NULL;
    if (nl == NULL)
        goto fail;
    size_t rule_len = (size_t)(nl - foot - 1);
    if (rule_len > 0) {
        if (tzfile_rule_parse(foot + 1, rule_len, &tz->rule) != 0)
            goto fail;
        tz->has_rule = 1;
    }
    return 0;
fail:
    tzfile_fini(tz);
    return -1;
}

void
tzfile_fini(struct tzfile *tz)
{
    if (tz == NULL)
        return;
    free(tz->at);
    free(tz->offset_after);
    memset(tz, 0, sizeof *tz);
}

int
tzfile_offset(const struct tzfile *tz, int64_t t)
{
    size_t lo = 0, hi = tz->n;

    if (tz->n == 0)
        return tz->has_rule ? tzfile_rule_offset(&tz->rule, t) : tz->first_offset_s;
    if (t < tz->at[0])
        return tz->first_offset_s;
    while (hi - lo > 1) { /* the last transition at or before t */
        size_t mid = lo + (hi - lo) / 2;
        if (tz->at[mid] <= t)
            lo = mid;
        else
            hi = mid;
    }
    if (lo == tz->n - 1 && tz->has_rule)
        return tzfile_rule_offset(&tz->rule, t);
    return tz->offset_after[lo];
}

/* ---- POSIX TZ strings ----------------------------------------------------------------------- */

struct scan {
    const char *s, *end;
};

static bool
more(const struct scan *sc)
{
    return sc->s < sc->end;
}

static int
digits(struct scan *sc, int max, int *out)
{
    int v = 0, n = 0;

    while (more(sc) && *sc->s >= '0' && *sc->s <= '9' && n < 4) {
        v = v * 10 + (*sc->s++ - '0');
        n++;
    }
    if (n == 0 || v > max)
        return -1;
    *out = v;
    return 0;
}

/* [+|-]hh[:mm[:ss]] in seconds. */
static int
hms(struct scan *sc, int hours_max, int *out)
{
    int sign = 1, h, m = 0, s = 0;

    if (more(sc) && (*sc->s == '+' || *sc->s == '-'))
        sign = *sc->s++ == '-' ? -1 : 1;
    if (digits(sc, hours_max, &h) != 0)
        return -1;
    if (more(sc) && *sc->s == ':') {
        sc->s++;
        if (digits(sc, 59, &m) != 0)
            return -1;
        if (more(sc) && *sc->s == ':') {
            sc->s++;
            if (digits(sc, 59, &s) != 0)
                return -1;
        }
    }
    *out = sign * ((h * 60 + m) * 60 + s);
    return 0;
}

/* A zone abbreviation: <...> or three or more letters. */
static int
abbreviation(struct scan *sc)
{
    const char *start = sc->s;

    if (more(sc) && *sc->s == '<') {
        while (more(sc) && *sc->s != '>')
            sc->s++;
        if (!more(sc))
            return -1;
        sc->s++;
        return sc->s - start >= 5 ? 0 : -1; /* <...> holds three characters at least */
    }
    while (more(sc) && ((*sc->s >= 'A' && *sc->s <= 'Z') || (*sc->s >= 'a' && *sc->s <= 'z')))
        sc->s++;
    return sc->s - start >= 3 ? 0 : -1;
}

static int
day_rule(struct scan *sc, struct tzfile_day *d)
{
    d->week = d->weekday = 0;
    d->time_s = DEFAULT_RULE_TIME_S;
    if (!more(sc))
        return -1;
    if (*sc->s == 'J') {
        sc->s++;
        d->kind = 'J';
        if (digits(sc, 365, &d->n) != 0 || d->n < 1)
            return -1;
    } else if (*sc->s == 'M') {
        sc->s++;
        d->kind = 'M';
        if (digits(sc, 12, &d->n) != 0 || d->n < 1 || !more(sc) || *sc->s++ != '.' ||
            digits(sc, 5, &d->week) != 0 || d->week < 1 || !more(sc) || *sc->s++ != '.' ||
            digits(sc, 6, &d->weekday) != 0)
            return -1;
    } else {
        d->kind = 'n';
        if (digits(sc, 365, &d->n) != 0)
            return -1;
    }
    if (more(sc) && *sc->s == '/') {
        sc->s++;
        return hms(sc, RULE_HOURS_MAX, &d->time_s);
    }
    return 0;
}

int
tzfile_rule_parse(const char *s, size_t len, struct tzfile_rule *r)
{
    struct scan sc = {s, s + len};
    int off;

    memset(r, 0, sizeof *r);
    if (len > TZFILE_RULE_MAX || abbreviation(&sc) != 0 || hms(&sc, 24, &off) != 0)
        return -1;
    r->std_offset_s = -off; /* POSIX counts west of Greenwich as positive */
    if (!more(&sc))
        return 0;
    if (abbreviation(&sc) != 0)
        return -1;
    r->has_dst = 1;
    r->dst_offset_s = r->std_offset_s + SECONDS_PER_HOUR;
    if (more(&sc) && *sc.s != ',') {
        if (hms(&sc, 24, &off) != 0)
            return -1;
        r->dst_offset_s = -off;
    }
    if (!more(&sc) || *sc.s++ != ',' || day_rule(&sc, &r->start) != 0 || !more(&sc) ||
        *sc.s++ != ',' || day_rule(&sc, &r->end) != 0 || more(&sc))
        return -1;
    if (r->dst_offset_s < -TZFILE_OFFSET_MAX || r->dst_offset_s > TZFILE_OFFSET_MAX ||
        r->std_offset_s < -TZFILE_OFFSET_MAX || r->std_offset_s > TZFILE_OFFSET_MAX)
        return -1;
    return 0;
}

/* Local midnight (counted as UTC) of the day d names in year y. */
static int64_t
rule_day(const struct tzfile_day *d, int64_t y)
{
    int64_t jan1 = timefmt_days_from_civil(y, 1, 1), days;
    bool leap = timefmt_days_in_month(y, 2) == 29;

    if (d->kind == 'J')
        days = jan1 + d->n - 1 + (leap && d->n >= 60);
    else if (d->kind == 'n')
        days = jan1 + d->n;
    else {
        int64_t first = timefmt_days_from_civil(y, d->n, 1);
        int wd_first = (int)(((first + 4) % 7 + 7) % 7); /* 1970-01-01 was a Thursday (4) */
        int day = (d->weekday - wd_first + 7) % 7 + 1 + (d->week - 1) * 7;
        while (day > timefmt_days_in_month(y, d->n))
            day -= 7;
        days = first + day - 1;
    }
    return days * SECONDS_PER_DAY;
}

/* Summer starts at its local standard time and ends at its local summer time. Of the transitions
 * of the year of t and the years either side (in no particular order: a southern summer ends
 * before it starts), the latest at or before t gives the offset. */
int
tzfile_rule_offset(const struct tzfile_rule *r, int64_t t)
{
    int64_t at[2 * RULE_YEARS], y;
    int after[2 * RULE_YEARS], m, d, best = r->std_offset_s;
    int64_t best_at = INT64_MIN;

    if (!r->has_dst)
        return r->std_offset_s;
    timefmt_civil_from_days(t / SECONDS_PER_DAY - (t % SECONDS_PER_DAY < 0), &y, &m, &d);
    for (int i = 0; i < RULE_YEARS; i++) {
        at[2 * i] = rule_day(&r->start, y - 1 + i) + r->start.time_s - r->std_offset_s;
        after[2 * i] = r->dst_offset_s;
        at[2 * i + 1] = rule_day(&r->end, y - 1 + i) + r->end.time_s - r->dst_offset_s;
        after[2 * i + 1] = r->std_offset_s;
    }
    for (int i = 0; i < 2 * RULE_YEARS; i++)
        if (at[i] <= t && at[i] > best_at) {
            best_at = at[i];
            best = after[i];
        }
    return best;
}
