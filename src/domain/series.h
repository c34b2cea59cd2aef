/* series.h -- recurring meetings (docs/design.md section 9) as the domain sees them: a meeting
 * whose recurrence generates occurrences, each named by its original start (the UTC instant the
 * rule gives it, before any override moves it). Expansion runs on wall-clock times in the meeting's
 * zone (recur.h) and resolves each by tz_resolve (gap: forward by the gap; overlap: the first
 * instant); two wall-clock times that resolve to one instant (a day a zone skipped, as
 * Pacific/Apia's 30 December 2011, moved onto the next) are one occurrence. Pure computation: no
 * database; series_sync.c writes what this computes. */
#ifndef TOCSIN_SERIES_H
#define TOCSIN_SERIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "meeting.h"
#include "recur.h"

/* Years ahead of now within which a new or changed series must have an occurrence. */
#define SERIES_UPCOMING_YEARS 10
#define SERIES_UPCOMING_MS (SERIES_UPCOMING_YEARS * 366LL * 86400000)
/* Rule times one expansion may walk before giving up: a COUNT rule without its stored UNTIL
 * equivalent (meeting_recurrence.count_until_ms) is walked from its start (at most
 * RECUR_COUNT_MAX), others are moved near the range first. */
#define SERIES_WALK_MAX 40000
#define SERIES_OVERRIDES_MAX 1000 /* overridden occurrences per series */

/* One occurrence's own values (PATCH /v1/meetings/{id}/occurrences/{original_start}). */
struct series_override {
    int64_t original_start_ms;
    bool has_starts_at, has_ends_at;
    int64_t starts_at_ms, ends_at_ms;
    char *title; /* NULL: the series' title */
    bool cancelled;
};

/* An occurrence with its override applied. */
struct series_occurrence {
    int64_t original_start_ms;
    int64_t starts_at_ms;
    bool has_ends_at;
    int64_t ends_at_ms;
    const char *title; /* borrowed from the meeting or the override */
    bool cancelled;
    const struct series_override *override; /* NULL when it has none */
};

/* The original starts of a series in order: rule times resolved to UTC, merged with rdates,
 * without exdates, times past UNTIL or repeats. */
struct series_gen {
    const struct meeting *m;
    struct recur_iter *it;
    struct recur_info info;
    int64_t ms_part;   /* starts_at's milliseconds, kept by every rule time */
    int64_t last;      /* the last instant returned (INT64_MIN before the first) */
    int64_t rule_next; /* the rule's next instant not yet returned; INT64_MAX at its end */
    size_t rdate_at;   /* next rdate to merge */
    size_t walked;
};

/* Starts the original starts of m (a series) at from_ms: those before it are skipped. 0, or -1
 * when the rule or zone is unusable or out of memory (m was validated: a bug or a zone removed
 * from the system). */
int series_gen_init(struct series_gen *g, const struct meeting *m, int64_t from_ms);
/* 1 with the next original start in *out, 0 at the end (or past SERIES_WALK_MAX), -1 on error. */
int series_gen_next(struct series_gen *g, int64_t *out);
void series_gen_fini(struct series_gen *g);

/* The UNTIL equivalent of m's COUNT rule: the instant, in whole seconds as UNTIL has it, that the
 * rule's last (COUNT-th) time resolves to. Rule times resolve in order, so the rule's times up to
 * it are exactly its first COUNT, repeats of that instant dropped as they are anyway. Walks the
 * rule from its start once (at most RECUR_COUNT_MAX times): series_sync computes it when a
 * series is written and stores it, and series_gen_init then moves a COUNT rule to its range as it
 * moves an UNTIL rule. 1 with *out, 0 when the rule has no COUNT, -1 on error. */
int series_count_until(const struct meeting *m, int64_t *out);

/* Checks what needs the rule and the zone together: starts_at must be the first time the rule
 * generates (the series' first occurrence; RFC 5545 leaves a DTSTART outside its rule undefined)
 * and the earlier of two instants with its wall-clock time. 0, or -1 with a message in why. */
int series_check_start(const struct meeting *m, char why[RECUR_WHY_MAX]);
/* The first original start of m at or after from_ms: 1 with *out, 0 when there is none (the
 * series is over), -1 on error. */
int series_first_from(const struct meeting *m, int64_t from_ms, int64_t *out);
/* Whether m has an occurrence in [from_ms, from_ms + SERIES_UPCOMING_MS). */
bool series_has_upcoming(const struct meeting *m, int64_t from_ms);
/* Whether original_ms is an original start of m. */
bool series_occurs(const struct meeting *m, int64_t original_ms);

/* The occurrence of original_ms with override ov (or none) applied. */
void series_occurrence_of(const struct meeting *m, int64_t original_ms,
                          const struct series_override *ov, struct series_occurrence *out);
/* The override of original_ms among ov[0..n) (sorted by original start), or NULL. */
const struct series_override *series_override_find(const struct series_override *ov, size_t n,
                                                   int64_t original_ms);
void series_override_fini(struct series_override *ov);

/* A page of occurrences in time order, as the occurrences endpoints list them: those of m (with
 * overrides ov[0..n_ov), sorted) whose actual start lies in [from_ms, to_ms) and that come after
 * the position (after_starts_ms, after_original_ms) in (starts_at, original_start) order when
 * has_after. At most max into out; *more when another one follows. The count, or -1. */
struct series_page_pos {
    bool has_after;
    int64_t after_starts_ms, after_original_ms;
};
long series_page(const struct meeting *m, const struct series_override *ov, size_t n_ov,
                 int64_t from_ms, int64_t to_ms, const struct series_page_pos *pos,
                 struct series_occurrence *out, size_t max, bool *more);

/* The reminder rows a series wants for its occurrences, and what materialising them covers. */
struct series_row {
    int64_t original_start_ms;
    int64_t starts_at_ms; /* the occurrence's start (moved or not): the missed rule's */
    int64_t fire_at_ms;
    int minutes_before;
    unsigned channels;
    bool cancelled;
};
struct series_rows {
    size_t n, cap;
    struct series_row *r; /* malloc'ed; series_rows_fini */
};
void series_rows_fini(struct series_rows *rows);

/* Appends the rows of every occurrence of m whose original or actual start lies in [lo, hi),
 * overrides ov[0..n_ov) (sorted) applied, one per reminder of m. With ensure_next, hi first
 * grows past the first original start at or after now (so that a series always shows its next
 * occurrence, even a yearly one beyond the window). *covered_to is where the range ended (hi).
 * 0, or -1 (out of memory, or the expansion failed). */
int series_rows_build(const struct meeting *m, const struct series_override *ov, size_t n_ov,
                      int64_t lo, int64_t hi, bool ensure_next, int64_t now,
                      struct series_rows *out, int64_t *covered_to);

/* How far ahead of now the occurrences of m are materialised: the configured window, or twice the
 * sum of m's longest reminder offset and the mirror horizon when that is more. The reconciler
 * extends a series once less than three quarters of its window is left (series_needs_extending),
 * so a row is written at least three quarters of a window before its occurrence starts, which is
 * more than its offset plus the horizon: the row exists before the mirror's horizon reaches its
 * fire time. */
int64_t series_window_ms(const struct meeting *m, int64_t window_ms, int64_t horizon_ms);
/* Whether a series materialised up to covered_to, with window window_ms, is due for extension. */
bool series_needs_extending(int64_t covered_to, int64_t now, int64_t window_ms);

#endif
