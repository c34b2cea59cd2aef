/* series.c -- the expansion of series.h: libical's wall-clock times (recur.c), resolved to UTC by
 * tz_resolve, merged with rdates, filtered by exdates and UNTIL, and the reminder rows they ask
 * for. Rule times resolve in order (a series has one time of day: no BYHOUR in the subset, so
 * two rule times are a day apart at least, and no offset jump exceeds a day), which is what lets
 * UNTIL end the walk at its first time past it and repeats be dropped by looking one back. */
#include "series.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tz.h"

#define MS_PER_SECOND 1000
#define MS_PER_MINUTE 60000LL
#define MS_PER_DAY 86400000LL
/* A skip lands this far before the range: resolution moves a time by a day at most. */
#define SKIP_MARGIN_MS (2 * MS_PER_DAY)
#define ROWS_INITIAL 64

static int64_t
floor_div(int64_t a, int64_t b)
{
    return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

/* The wall-clock time of utc_ms in m's zone. */
static int
wall_of(const struct meeting *m, int64_t utc_ms, struct tz_wall *w)
{
    struct tz_local l;

    if (tz_local(m->time_zone, utc_ms, &l) != 0)
        return -1;
    *w = (struct tz_wall){l.year, l.month, l.day, l.hour, l.minute, l.second};
    return 0;
}

static bool
wall_equal(const struct tz_wall *a, const struct tz_wall *b)
{
    return a->year == b->year && a->month == b->month && a->day == b->day && a->hour == b->hour &&
           a->minute == b->minute && a->second == b->second;
}

static bool
is_exdate(const struct meeting_recurrence *rec, int64_t t)
{
    size_t lo = 0, hi = rec->n_exdates;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (rec->exdates[mid] == t)
            return true;
        if (rec->exdates[mid] < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

/* The rule's next instant into g->rule_next (INT64_MAX at its end, past UNTIL or once
 * SERIES_WALK_MAX rule times were walked). */
static int
rule_advance(struct series_gen *g)
{
    struct tz_wall w;
    int64_t utc_s;

    if (g->rule_next == INT64_MAX)
        return 0;
    if (g->walked++ >= SERIES_WALK_MAX || recur_iter_next(g->it, &w) != 1) {
        g->rule_next = INT64_MAX;
        return 0;
    }
    if (tz_resolve(g->m->time_zone, &w, &utc_s) != 0)
        return -1;
    g->rule_next = utc_s * MS_PER_SECOND + g->ms_part;
    /* UNTIL bounds the rule's own times, which are whole seconds (iCalendar has nothing finer;
     * python-dateutil drops a start's milliseconds too): a start's milliseconds must not push
     * the last occurrence past an UNTIL that names it. */
    if (g->info.has_until && utc_s * MS_PER_SECOND > g->info.until_ms)
        g->rule_next = INT64_MAX;
    return 0;
}

int
series_gen_init(struct series_gen *g, const struct meeting *m, int64_t from_ms)
{
    const struct meeting_recurrence *rec = m->recurrence;
    char why[RECUR_WHY_MAX];
    struct tz_wall start, skip;

    memset(g, 0, sizeof *g);
    g->m = m;
    g->last = INT64_MIN;
    if (rec == NULL || recur_rule_check(rec->rrule, &g->info, why) != 0 ||
        wall_of(m, m->starts_at_ms, &start) != 0)
        return -1;
    /* A COUNT rule with its UNTIL equivalent is expanded as that UNTIL rule. */
    if (g->info.has_count && rec->has_count_until) {
        g->info = (struct recur_info){.has_until = true, .until_ms = rec->count_until_ms};
        g->it = recur_iter_new_uncounted(rec->rrule, &start);
    } else
        g->it = recur_iter_new(rec->rrule, &start);
    if (g->it == NULL)
        return -1;
    g->ms_part = m->starts_at_ms - floor_div(m->starts_at_ms, MS_PER_SECOND) * MS_PER_SECOND;
    /* A COUNT rule without it must be walked from its start to be counted; others jump near the
     * range (a range past the rule's last year has no rule times, only rdates). */
    if (!g->info.has_count && from_ms > m->starts_at_ms + SKIP_MARGIN_MS) {
        int moved = wall_of(m, from_ms - SKIP_MARGIN_MS, &skip) == 0
                        ? recur_iter_skip_to(g->it, &skip)
                        : -1;
        if (moved < 0)
            return -1;
        if (moved == 1)
            g->rule_next = INT64_MAX;
    }
    do {
        if (rule_advance(g) != 0)
            return -1;
    } while (g->rule_next < from_ms);
    while (g->rdate_at < rec->n_rdates && rec->rdates[g->rdate_at] < from_ms)
        g->rdate_at++;
    return 0;
}

int
series_gen_next(struct series_gen *g, int64_t *out)
{
    const struct meeting_recurrence *rec = g->m->recurrence;

    for (;;) {
        int64_t rdate = g->rdate_at < rec->n_rdates ? rec->rdates[g->rdate_at] : INT64_MAX;
        int64_t t = rdate < g->rule_next ? rdate : g->rule_next;

        if (t == INT64_MAX)
            return 0;
        if (t == rdate)
            g->rdate_at++;
        if (t == g->rule_next && rule_advance(g) != 0)
            return -1;
        if (t <= g->last || is_exdate(rec, t))
            continue;
        g->last = t;
        *out = t;
        return 1;
    }
}

void
series_gen_fini(struct series_gen *g)
{
    recur_iter_free(g->it);
    g->it = NULL;
}

int
series_count_until(const struct meeting *m, int64_t *out)
{
    struct recur_info info;
    char why[RECUR_WHY_MAX];
    struct tz_wall start, w, last = {0};
    struct recur_iter *it;
    int64_t utc_s;
    int n = 0;

    if (m->recurrence == NULL || recur_rule_check(m->recurrence->rrule, &info, why) != 0 ||
        wall_of(m, m->starts_at_ms, &start) != 0)
        return -1;
    if (!info.has_count)
        return 0;
    if ((it = recur_iter_new(m->recurrence->rrule, &start)) == NULL)
        return -1;
    while (n <= RECUR_COUNT_MAX && recur_iter_next(it, &w) == 1) {
        last = w;
        n++;
    }
    recur_iter_free(it);
    if (n == 0 || n > RECUR_COUNT_MAX || tz_resolve(m->time_zone, &last, &utc_s) != 0)
        return -1;
    *out = utc_s * MS_PER_SECOND;
    return 1;
}

int
series_check_start(const struct meeting *m, char why[RECUR_WHY_MAX])
{
    struct tz_wall start, first;
    struct recur_iter *it;
    int64_t utc_s;
    int got;

    if (wall_of(m, m->starts_at_ms, &start) != 0 ||
        (it = recur_iter_new(m->recurrence->rrule, &start)) == NULL) {
        snprintf(why, RECUR_WHY_MAX, "cannot be expanded in time_zone");
        return -1;
    }
    got = recur_iter_next(it, &first);
    recur_iter_free(it);
    if (got != 1 || !wall_equal(&start, &first)) {
        snprintf(why, RECUR_WHY_MAX,
                 "starts_at (%04d-%02d-%02d %02d:%02d:%02d in time_zone) must be the rule's first "
                 "occurrence",
                 start.year, start.month, start.day, start.hour, start.minute, start.second);
        return -1;
    }
    if (tz_resolve(m->time_zone, &start, &utc_s) != 0 ||
        utc_s != floor_div(m->starts_at_ms, MS_PER_SECOND)) {
        snprintf(why, RECUR_WHY_MAX,
                 "starts_at is the second of two instants with its wall-clock time in time_zone "
                 "(a fall-back hour); a series starts at the first");
        return -1;
    }
    return 0;
}

int
series_first_from(const struct meeting *m, int64_t from_ms, int64_t *out)
{
    struct series_gen g;
    int rc = -1;

    if (series_gen_init(&g, m, from_ms) == 0)
        rc = series_gen_next(&g, out);
    series_gen_fini(&g);
    return rc;
}

bool
series_has_upcoming(const struct meeting *m, int64_t from_ms)
{
    int64_t t;

    return series_first_from(m, from_ms, &t) == 1 && t < from_ms + SERIES_UPCOMING_MS;
}

bool
series_occurs(const struct meeting *m, int64_t original_ms)
{
    int64_t t;

    return series_first_from(m, original_ms, &t) == 1 && t == original_ms;
}

void
series_occurrence_of(const struct meeting *m, int64_t original_ms, const struct series_override *ov,
                     struct series_occurrence *out)
{
    out->original_start_ms = original_ms;
    out->starts_at_ms = ov != NULL && ov->has_starts_at ? ov->starts_at_ms : original_ms;
    out->has_ends_at = m->has_ends_at || (ov != NULL && ov->has_ends_at);
    if (ov != NULL && ov->has_ends_at)
        out->ends_at_ms = ov->ends_at_ms;
    else
        out->ends_at_ms = out->starts_at_ms + (m->ends_at_ms - m->starts_at_ms);
    out->title = ov != NULL && ov->title != NULL ? ov->title : m->title;
    out->cancelled = ov != NULL && ov->cancelled;
    out->override = ov;
}

const struct series_override *
series_override_find(const struct series_override *ov, size_t n, int64_t original_ms)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ov[mid].original_start_ms == original_ms)
            return &ov[mid];
        if (ov[mid].original_start_ms < original_ms)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

void
series_override_fini(struct series_override *ov)
{
    if (ov == NULL)
        return;
    free(ov->title);
    memset(ov, 0, sizeof *ov);
}

void
series_rows_fini(struct series_rows *rows)
{
    free(rows->r);
    memset(rows, 0, sizeof *rows);
}

/* One row per reminder of m for occurrence o. */
static int
add_rows(const struct meeting *m, const struct series_occurrence *o, struct series_rows *out)
{
    if (out->n + m->n_reminders > out->cap) {
        size_t cap = out->cap ? out->cap * 2 : ROWS_INITIAL;
        while (cap < out->n + m->n_reminders)
            cap *= 2;
        struct series_row *r = realloc(out->r, cap * sizeof *r);
        if (r == NULL)
            return -1;
        out->r = r;
        out->cap = cap;
    }
    for (size_t i = 0; i < m->n_reminders; i++) {
        const struct reminder *d = &m->reminders[i];
        out->r[out->n++] = (struct series_row){o->original_start_ms,
                                               o->starts_at_ms,
                                               o->starts_at_ms - d->minutes_before * MS_PER_MINUTE,
                                               d->minutes_before,
                                               d->channels != 0 ? d->channels : CHANNELS_DEFAULT,
                                               o->cancelled};
    }
    return 0;
}

int
series_rows_build(const struct meeting *m, const struct series_override *ov, size_t n_ov,
                  int64_t lo, int64_t hi, bool ensure_next, int64_t now, struct series_rows *out,
                  int64_t *covered_to)
{
    struct series_gen g;
    struct series_occurrence o;
    int64_t t;
    int got;

    if (ensure_next && (got = series_first_from(m, now, &t)) != 0) {
        if (got < 0)
            return -1;
        if (t >= hi)
            hi = t + 1;
    }
    if (series_gen_init(&g, m, lo) != 0) {
        series_gen_fini(&g);
        return -1;
    }
    while ((got = series_gen_next(&g, &t)) == 1 && t < hi) {
        series_occurrence_of(m, t, series_override_find(ov, n_ov, t), &o);
        if (add_rows(m, &o, out) != 0) {
            got = -1;
            break;
        }
    }
    series_gen_fini(&g);
    if (got < 0)
        return -1;
    /* Occurrences moved into the range from outside it. */
    for (size_t i = 0; i < n_ov; i++) {
        int64_t orig = ov[i].original_start_ms;
        if (!ov[i].has_starts_at || ov[i].starts_at_ms < lo || ov[i].starts_at_ms >= hi ||
            (orig >= lo && orig < hi))
            continue;
        series_occurrence_of(m, orig, &ov[i], &o);
        if (add_rows(m, &o, out) != 0)
            return -1;
    }
    *covered_to = hi;
    return 0;
}

int64_t
series_window_ms(const struct meeting *m, int64_t window_ms, int64_t horizon_ms)
{
    int64_t longest = 0;

    for (size_t i = 0; i < m->n_reminders; i++)
        if (m->reminders[i].minutes_before * MS_PER_MINUTE > longest)
            longest = m->reminders[i].minutes_before * MS_PER_MINUTE;
    return window_ms > 2 * (longest + horizon_ms) ? window_ms : 2 * (longest + horizon_ms);
}

bool
series_needs_extending(int64_t covered_to, int64_t now, int64_t window_ms)
{
    return covered_to < now + window_ms / 4 * 3;
}

/* (a_starts, a_orig) after (b_starts, b_orig). */
static bool
after(int64_t a_starts, int64_t a_orig, int64_t b_starts, int64_t b_orig)
{
    return a_starts > b_starts || (a_starts == b_starts && a_orig > b_orig);
}

static bool
moved(const struct series_override *ov)
{
    return ov != NULL && ov->has_starts_at && ov->starts_at_ms != ov->original_start_ms;
}

static int
by_start(const void *a, const void *b)
{
    const struct series_override *x = *(const struct series_override *const *)a;
    const struct series_override *y = *(const struct series_override *const *)b;

    return after(x->starts_at_ms, x->original_start_ms, y->starts_at_ms, y->original_start_ms) ? 1
           : after(y->starts_at_ms, y->original_start_ms, x->starts_at_ms, x->original_start_ms)
               ? -1
               : 0;
}

/* Merges two streams in (starts_at, original_start) order: rule times whose occurrence was not
 * moved (actual start = original start), and the moved ones, taken from the overrides. */
long
series_page(const struct meeting *m, const struct series_override *ov, size_t n_ov, int64_t from_ms,
            int64_t to_ms, const struct series_page_pos *pos, struct series_occurrence *out,
            size_t max, bool *more)
{
    const struct series_override **mv = calloc(n_ov ? n_ov : 1, sizeof(struct series_override *));
    int64_t lo = pos->has_after && pos->after_starts_ms > from_ms ? pos->after_starts_ms : from_ms;
    size_t n_mv = 0, at_mv = 0, n = 0;
    struct series_gen g;
    int64_t t = 0;
    int got = 0;

    *more = false;
    if (mv == NULL)
        return -1;
    for (size_t i = 0; i < n_ov; i++)
        if (moved(&ov[i]) && ov[i].starts_at_ms >= lo && ov[i].starts_at_ms < to_ms)
            mv[n_mv++] = &ov[i];
    qsort(mv, n_mv, sizeof(struct series_override *), by_start);
    if (series_gen_init(&g, m, lo) != 0)
        got = -1;
    else
        while ((got = series_gen_next(&g, &t)) == 1 && moved(series_override_find(ov, n_ov, t)))
            ;
    while (got >= 0) {
        bool rule = got == 1 && t < to_ms;
        bool take_mv = at_mv < n_mv && (!rule || after(t, t, mv[at_mv]->starts_at_ms,
                                                       mv[at_mv]->original_start_ms));
        if (!rule && !take_mv)
            break;
        int64_t orig = take_mv ? mv[at_mv]->original_start_ms : t;
        const struct series_override *o = take_mv ? mv[at_mv++] : series_override_find(ov, n_ov, t);
        if (!take_mv)
            while ((got = series_gen_next(&g, &t)) == 1 && moved(series_override_find(ov, n_ov, t)))
                ;
        struct series_occurrence occ;
        series_occurrence_of(m, orig, o, &occ);
        if (pos->has_after &&
            !after(occ.starts_at_ms, orig, pos->after_starts_ms, pos->after_original_ms))
            continue;
        if (n == max) {
            *more = true;
            break;
        }
        out[n++] = occ;
    }
    series_gen_fini(&g);
    free(mv);
    return got < 0 ? -1 : (long)n;
}
