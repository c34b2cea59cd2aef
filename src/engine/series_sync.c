/* series_sync.c -- the two writers of series_sync.h. A window starts grace before now (an
 * occurrence that started less than the missed grace ago still fires its reminders, as a single
 * meeting created that late does; older ones never get rows, so a series whose first occurrence
 * is past never fires for it) and ends series_window_ms after now, or past the next occurrence
 * when that is further (a yearly series always shows its next one). */
#include "series_sync.h"

#include <stdlib.h>
#include <string.h>

#include "db_own.h"
#include "log.h"

#define EXPAND_RETRY_MS 3600000LL
#define MS_PER_SECOND 1000

struct series_sync_params
series_sync_params_of(const struct config *cfg)
{
    return (struct series_sync_params){cfg->series_window_ms, cfg->mirror_horizon_ms,
                                       cfg->missed_grace_ms};
}

void
series_sync_dropped_fini(struct series_sync_dropped *d)
{
    if (d == NULL)
        return;
    free(d->at);
    memset(d, 0, sizeof *d);
}

/* When the reconciler extends a window that ends at covered_to; never once the series is over. */
static int64_t
extend_after(const struct meeting *m, int64_t covered_to, int64_t window, int64_t now)
{
    int64_t next;

    if (series_first_from(m, now, &next) == 0)
        return INT64_MAX;
    return covered_to - window / 4 * 3;
}

/* The last original start, or INT64_MAX for a rule without end. A bound is enough (the calendar
 * read skips series over before its range): UNTIL itself for an UNTIL rule, its UNTIL equivalent
 * for a COUNT rule (fill_count_until: the last rule time, to the second, so the start's
 * milliseconds are added as a bound), the walk to its end when that is not known (at most
 * RECUR_COUNT_MAX times); the latest rdate when later. */
static int64_t
last_start(const struct meeting *m)
{
    struct recur_info info;
    char why[RECUR_WHY_MAX];
    struct series_gen g;
    int64_t last = INT64_MIN, t;
    const struct meeting_recurrence *rec = m->recurrence;

    if (recur_rule_check(rec->rrule, &info, why) != 0)
        return INT64_MAX;
    if (info.has_until)
        last = info.until_ms;
    else if (info.has_count && rec->has_count_until)
        last = rec->count_until_ms + MS_PER_SECOND - 1;
    else if (info.has_count) {
        if (series_gen_init(&g, m, m->starts_at_ms) == 0)
            while (series_gen_next(&g, &t) == 1)
                last = t;
        series_gen_fini(&g);
    } else
        return INT64_MAX;
    if (rec->n_rdates > 0 && rec->rdates[rec->n_rdates - 1] > last)
        last = rec->rdates[rec->n_rdates - 1];
    return last;
}

/* Computes the UNTIL equivalent of rec's COUNT rule (series_count_until) into rec when it has none,
 * so that every expansion after it, here and in every read of the stored series, moves to its
 * range instead of walking the rule from its start. -1 when the expansion fails. */
static int
fill_count_until(const struct meeting *m, struct meeting_recurrence *rec)
{
    int64_t until;
    int got;

    if (rec->has_count_until)
        return 0;
    if ((got = series_count_until(m, &until)) < 0)
        return -1;
    rec->has_count_until = got == 1;
    rec->count_until_ms = got == 1 ? until : 0;
    return 0;
}

/* Drops the overrides of m whose occurrence is gone; the kept ones stay in l (compacted). l is in
 * original start order (db_override_list), so one walk of the series from the first decides them
 * all: a test per override (series_occurs) walked a COUNT rule from its start each time, 11.7 s
 * for 1,000 overrides of a COUNT=10000 rule. A walk that fails keeps the rest: an expansion error
 * must not delete what a client wrote. */
static enum db_status
keep_overrides(struct db *db, const struct meeting *m, struct db_override_list *l,
               struct series_sync_dropped *dropped)
{
    int64_t *gone = calloc(l->n ? l->n : 1, sizeof *gone), t = INT64_MIN;
    size_t n_gone = 0, kept = 0;
    enum db_status st = DB_ONE_RESULT;
    struct series_gen g = {0}; /* finished whether or not it was started */

    if (gone == NULL) {
        db_note_error(db, "series %s: out of memory for its overrides", m->id);
        return DB_HARD_ERROR;
    }
    int rc = l->n > 0 ? series_gen_init(&g, m, l->o[0].ov.original_start_ms) : 0;
    for (size_t i = 0; i < l->n; i++) {
        int64_t at = l->o[i].ov.original_start_ms;
        while (rc == 0 && t < at) {
            int got = series_gen_next(&g, &t);
            rc = got == 1 ? 0 : got == 0 ? 1 : -1; /* 1: the series ended */
        }
        if (rc < 0 || (rc == 0 && t == at)) {
            l->o[kept++] = l->o[i];
            continue;
        }
        gone[n_gone++] = at;
        series_override_fini(&l->o[i].ov);
    }
    series_gen_fini(&g);
    l->n = kept;
    if (n_gone > 0)
        st = db_override_delete(db, m->id, gone, n_gone);
    if (st == DB_ONE_RESULT && dropped != NULL && n_gone > 0) {
        free(dropped->at);
        dropped->at = gone;
        dropped->n = n_gone;
        gone = NULL;
    }
    free(gone);
    return st;
}

/* The overrides of l as the sorted array series.h takes (borrowing titles). */
static struct series_override *
override_array(const struct db_override_list *l)
{
    struct series_override *ov = calloc(l->n ? l->n : 1, sizeof *ov);

    for (size_t i = 0; ov != NULL && i < l->n; i++)
        ov[i] = l->o[i].ov;
    return ov;
}

static enum db_status
sync_write(struct db *db, int64_t tenant_id, const struct meeting *written, bool was_series,
           const struct series_sync_params *p, int64_t now, struct db_series_keys *gone,
           struct db_series_keys *fresh, struct series_sync_dropped *dropped)
{
    struct series_rows rows = {0};
    struct db_override_list l = {0};
    const char *id = written->id;
    int64_t lo = now - p->grace_ms, covered_to = lo;
    enum db_status st;
    /* written as the series row will hold it: with its COUNT rule's UNTIL equivalent. */
    struct meeting copy = *written, *m = &copy;
    struct meeting_recurrence rec = {0};

    if (written->recurrence != NULL) {
        rec = *written->recurrence;
        rec.has_count_until = false; /* computed from the rule as written, never carried over */
        copy.recurrence = &rec;
        if (fill_count_until(m, &rec) != 0) {
            db_note_error(db, "series %s: cannot expand (out of memory, or its zone is gone)", id);
            return DB_HARD_ERROR;
        }
    }
    if (m->recurrence == NULL) {
        if (!was_series)
            return DB_ONE_RESULT;
        st = db_series_drop(db, id);
        return st != DB_ONE_RESULT
                   ? st
                   : db_series_sync(db, tenant_id, id, &rows, lo, true, gone, fresh);
    }
    if ((st = db_override_list(db, &id, 1, &l)) != DB_ONE_RESULT)
        return st;
    if ((st = keep_overrides(db, m, &l, dropped)) != DB_ONE_RESULT)
        goto done;
    int64_t window = series_window_ms(m, p->window_ms, p->horizon_ms);
    struct series_override *ov = override_array(&l);
    if (ov == NULL ||
        series_rows_build(m, ov, l.n, lo, now + window, true, now, &rows, &covered_to) != 0) {
        free(ov);
        db_note_error(db, "series %s: cannot expand (out of memory, or its zone is gone)", id);
        st = DB_HARD_ERROR;
        goto done;
    }
    free(ov);
    st = db_series_put(db, tenant_id, m, last_start(m), covered_to,
                       extend_after(m, covered_to, window, now));
    if (st == DB_ONE_RESULT)
        st = db_series_sync(db, tenant_id, id, &rows, lo, true, gone, fresh);
done:
    series_rows_fini(&rows);
    db_override_list_fini(&l);
    return st;
}

/* The occurrence rows, then the participants' own reminders of them (db_own.h). */
enum db_status
series_sync_write(struct db *db, int64_t tenant_id, const struct meeting *written, bool was_series,
                  const struct series_sync_params *p, int64_t now, struct db_series_keys *gone,
                  struct db_series_keys *fresh, struct series_sync_dropped *dropped)
{
    enum db_status st =
        sync_write(db, tenant_id, written, was_series, p, now, gone, fresh, dropped);

    return st != DB_ONE_RESULT ? st : db_own_plan_meeting(db, written->id, gone, fresh);
}

/* The overrides of meeting id among l (sorted by meeting id): a borrowed sub-array. */
static struct series_override *
overrides_of(const struct db_override_list *l, const char *id, struct series_override *all,
             size_t *n)
{
    size_t first = l->n;

    *n = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (strcmp(l->o[i].meeting_id, id) != 0)
            continue;
        if (first == l->n)
            first = i;
        (*n)++;
    }
    return *n ? &all[first] : NULL;
}

/* Builds the extension of one due series. */
static void
build_extension(const struct db_series_due *d, const struct meeting *m,
                const struct series_override *ov, size_t n_ov, const struct series_sync_params *p,
                int64_t now, struct db_series_extension *e)
{
    int64_t window = series_window_ms(m, p->window_ms, p->horizon_ms);
    int64_t lo = d->covered_to > now - p->grace_ms ? d->covered_to : now - p->grace_ms;

    memset(e, 0, sizeof *e);
    e->m = m;
    e->tenant_id = d->tenant_id;
    if (series_rows_build(m, ov, n_ov, lo, now + window, true, now, &e->rows, &e->covered_to) !=
        0) {
        /* Tried again in an hour, not at every tick: it would hold the head of every batch. */
        LOG_WARN("series %s: cannot expand (its zone file?); retried in an hour", m->id);
        series_rows_fini(&e->rows);
        e->covered_to = d->covered_to;
        e->extend_after = now + EXPAND_RETRY_MS;
        return;
    }
    e->extend_after = extend_after(m, e->covered_to, window, now);
}

static const struct meeting *
find_meeting(const struct db_meeting_list *l, const char *id)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->m[i].id, id) == 0)
            return &l->m[i];
    return NULL;
}

enum db_status
series_sync_extend(struct db *db, const struct shard_set *shards,
                   const struct series_sync_params *p, int64_t now, size_t *seen, size_t *rows)
{
    struct db_series_due due[DB_SERIES_BATCH_MAX];
    struct db_series_extension ext[DB_SERIES_BATCH_MAX];
    const char *ids[DB_SERIES_BATCH_MAX];
    struct db_meeting_list ms = {0};
    struct db_override_list ol = {0};
    struct series_override *all = NULL;
    size_t n = 0, n_ext = 0, skipped = 0;
    enum db_status st;

    *seen = *rows = 0;
    if ((st = db_series_due(db, shards, DB_SERIES_BATCH_MAX, due, &n)) != DB_ONE_RESULT || n == 0)
        return st;
    *seen = n;
    for (size_t i = 0; i < n; i++)
        ids[i] = due[i].id;
    if ((st = db_series_load(db, ids, n, &ms)) != DB_ONE_RESULT ||
        (st = db_override_list(db, ids, n, &ol)) != DB_ONE_RESULT)
        goto done;
    if ((all = override_array(&ol)) == NULL) {
        db_note_error(db, "series extension: out of memory for %zu overrides", ol.n);
        st = DB_HARD_ERROR;
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        const struct meeting *m = find_meeting(&ms, due[i].id);
        /* A series stored before its COUNT rule's UNTIL equivalent was: computed now, written
         * with the window (db_series_extend), then never walked from its start again. A failure
         * is build_extension's to report (the same expansion fails there). */
        if (m != NULL && m->recurrence != NULL)
            (void)fill_count_until(m, m->recurrence);
        size_t n_ov;
        struct series_override *ov = overrides_of(&ol, due[i].id, all, &n_ov);
        if (m != NULL && m->recurrence != NULL)
            build_extension(&due[i], m, ov, n_ov, p, now, &ext[n_ext++]);
    }
    st = db_series_extend(db, ext, n_ext, rows, &skipped);
    /* The own reminders of the new occurrences: their keys are armed as the horizon reaches
     * them, like the occurrences' (a failure here is made good by the series' next plan). */
    if (st == DB_ONE_RESULT && *rows > 0)
        st = db_own_plan_meetings(db, ids, n, NULL, NULL);
    for (size_t i = 0; i < n_ext; i++)
        series_rows_fini(&ext[i].rows);
done:
    free(all);
    db_override_list_fini(&ol);
    db_meeting_list_fini(&ms);
    return st;
}
