/* meetings_expand.c -- GET /v1/meetings?expand=true&from=&to=: what a calendar shows in a range,
 * one page at a time: single meetings, and the occurrences of every series whose actual start lies
 * in it, merged in (starts_at, id, original start) order. The singles come from the database in
 * that order; each candidate series (db_meeting_list_range) contributes at most limit + 1 of its
 * occurrences after the cursor (series_page), so a page costs the series that overlap the range,
 * not their occurrences. The cursor is hex of "x1:<starts_at_ms>:<id>:<original_start_ms>". */
#include <microhttpd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_page.h"
#include "db_series.h"
#include "handler.h"
#include "hex.h"
#include "http_page.h"
#include "http_routes.h"
#include "meetings_expand.h"
#include "timefmt.h"

#define EXPAND_RANGE_MAX_MS (400LL * 86400000)
#define CURSOR_RAW_MAX 96
#define CURSOR_MAX HEX_ENCODED_LEN(CURSOR_RAW_MAX)

/* One item of the merged page: a single meeting (occ.original_start_ms = its start, single set)
 * or an occurrence of meeting m. */
struct item {
    const struct meeting *m;
    bool single;
    struct series_occurrence occ;
};

int
meetings_expand_cursor_decode(const char *s, struct db_list_query *q)
{
    char raw[CURSOR_RAW_MAX + 1];
    const char *p = handler_cursor_open(s, raw, CURSOR_RAW_MAX, "x1"), *id;
    int64_t starts, original;

    if (p == NULL || handler_cursor_ms(&p, ':', &starts) != 0)
        return -1;
    id = p;
    p += strcspn(p, ":");
    if (p - id != MEETING_ID_LEN || *p != ':')
        return -1;
    raw[p - raw] = '\0';
    p++;
    if (!meeting_id_valid(id) || handler_cursor_ms(&p, '\0', &original) != 0)
        return -1;
    q->has_after = true;
    q->after_starts_at_ms = starts;
    memcpy(q->after_id, id, MEETING_ID_LEN + 1);
    q->after_original_ms = original;
    return 0;
}

static void
cursor_encode(const struct item *last, char out[CURSOR_MAX + 1])
{
    char raw[CURSOR_RAW_MAX + 1];

    snprintf(raw, sizeof raw, "x1:%lld:%s:%lld", (long long)last->occ.starts_at_ms, last->m->id,
             (long long)last->occ.original_start_ms);
    hex_encode(raw, strlen(raw), out);
}

static int
item_cmp(const void *pa, const void *pb)
{
    const struct item *a = pa, *b = pb;
    int c;

    if (a->occ.starts_at_ms != b->occ.starts_at_ms)
        return a->occ.starts_at_ms < b->occ.starts_at_ms ? -1 : 1;
    if ((c = strcmp(a->m->id, b->m->id)) != 0)
        return c;
    return (a->occ.original_start_ms > b->occ.original_start_ms) -
           (a->occ.original_start_ms < b->occ.original_start_ms);
}

/* The overrides of id in l (sorted by meeting id), copied into the sorted array series.h takes;
 * titles borrowed. */
static size_t
overrides_of(const struct db_override_list *l, const char *id, struct series_override *out)
{
    size_t n = 0;

    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->o[i].meeting_id, id) == 0)
            out[n++] = l->o[i].ov;
    return n;
}

/* Appends each series' occurrences in range after the cursor, at most limit + 1 each. */
static int
add_occurrences(const struct db_list_query *q, const struct db_meeting_list *l, size_t first,
                const struct db_override_list *ol, struct item *items, size_t *n)
{
    struct series_occurrence *occ = calloc(q->limit + 1, sizeof *occ);
    struct series_override *ov = calloc(ol->n ? ol->n : 1, sizeof *ov);
    int rc = occ != NULL && ov != NULL ? 0 : -1;

    for (size_t s = first; rc == 0 && s < l->n; s++) {
        const struct meeting *m = &l->m[s];
        struct series_page_pos pos = {false, 0, 0};
        bool more;
        /* After the cursor (cs, cid, co) in (starts_at, id, original) order: a series whose id
         * sorts before cid continues after cs, one after it at cs, cid's own after co. */
        if (q->has_after) {
            int c = strcmp(m->id, q->after_id);
            pos = (struct series_page_pos){true, q->after_starts_at_ms,
                                           c < 0   ? INT64_MAX
                                           : c > 0 ? INT64_MIN
                                                   : q->after_original_ms};
        }
        long k = series_page(m, ov, overrides_of(ol, m->id, ov), q->from_ms, q->to_ms, &pos, occ,
                             q->limit + 1, &more);
        if (k < 0) {
            rc = -1;
            break;
        }
        for (long i = 0; i < k; i++)
            items[(*n)++] = (struct item){m, false, occ[i]};
        /* Only the first limit + 1 of everything can be on this page: keep the array small. */
        if (*n > 2 * (q->limit + 1)) {
            qsort(items, *n, sizeof *items, item_cmp);
            *n = q->limit + 1;
        }
    }
    free(occ);
    free(ov);
    return rc;
}

/* The page in flight: its items in order, the meetings they show (the others are finalised), the
 * overrides (occurrence titles borrow from them) and, per meeting, the reminder rows of its
 * occurrences on the page, all read before the first byte. */
struct expand_page {
    struct db_meeting_list l;
    struct db_override_list ol;
    struct db_occurrence_reminders *rows; /* l.n of them */
    struct item *items;
    size_t n;
    bool more;
};

static void
expand_page_free(void *arg)
{
    struct expand_page *p = arg;

    for (size_t i = 0; p->rows != NULL && i < p->l.n; i++)
        db_occurrence_reminders_fini(&p->rows[i]);
    free(p->rows);
    free(p->items);
    db_override_list_fini(&p->ol);
    db_meeting_list_fini(&p->l);
    free(p);
}

/* Item i as JSON, a shell (codec_page.h) of the meeting: as the occurrence shows it for an
 * occurrence (its start, end, title and reminder rows), with "occurrence". */
static json_t *
item_json(const struct expand_page *p, const struct item *it)
{
    struct meeting view = codec_meeting_shell(it->m); /* borrows it->m's texts: never finalised */
    json_t *v, *occ = json_null();

    if (!it->single) {
        const struct db_occurrence_reminders *rows = &p->rows[it->m - p->l.m];
        view.n_reminders = 0;
        for (size_t i = 0; i < rows->n && view.n_reminders < MEETING_REMINDERS_MAX; i++)
            if (rows->r[i].original_start_ms == it->occ.original_start_ms)
                view.reminders[view.n_reminders++] = rows->r[i].r;
        view.starts_at_ms = it->occ.starts_at_ms;
        view.has_ends_at = it->occ.has_ends_at;
        view.ends_at_ms = it->occ.ends_at_ms;
        view.title = (char *)it->occ.title;
        view.recurrence = NULL; /* encoded below from the series */
        occ = json_pack("{s:o, s:b}", "original_start", codec_time(it->occ.original_start_ms),
                        "cancelled", it->occ.cancelled);
    }
    if ((v = codec_meeting_encode(&view)) == NULL ||
        json_object_set_new(v, "recurrence", codec_series_recurrence_encode(it->m->recurrence)) !=
            0 ||
        json_object_set_new(v, "occurrence", occ) != 0) {
        json_decref(v);
        return NULL;
    }
    return v;
}

static int
expand_item(void *arg, size_t i, struct strbuf *out)
{
    struct expand_page *p = arg;
    json_t *v = item_json(p, &p->items[i]);
    int rc = v != NULL ? codec_meeting_shell_append(v, p->items[i].m, out) : -1;

    json_decref(v);
    return rc;
}

static json_t *
expand_tail(void *arg, size_t sent)
{
    struct expand_page *p = arg;
    char cursor[CURSOR_MAX + 1] = "";

    if (sent > 0 && (sent < p->n || p->more))
        cursor_encode(&p->items[sent - 1], cursor);
    return handler_page_tail(cursor);
}

/* Cuts the sorted items to what the page may hold. When more singles follow the ones read, no item
 * after the last of those (the next page starts after the page's last item, and they come before
 * what follows): unless add_occurrences dropped it, which only items before it survive. Then limit,
 * then texts within bytes_max as db_meeting_list counts them (at least one item). */
static void
page_cut(struct expand_page *p, size_t singles, size_t limit, size_t bytes_max)
{
    size_t before = 0, k = 0, last = SIZE_MAX, present = 0;

    for (size_t i = 0; i < p->n; i++)
        if (p->items[i].single) {
            present++;
            last = i;
        }
    p->more = p->l.more;
    if (p->l.more && present == singles && last != SIZE_MAX)
        p->n = last + 1;
    p->more |= p->n > limit;
    if (p->n > limit)
        p->n = limit;
    while (k < p->n && (k == 0 || before < bytes_max))
        before += meeting_text_bytes(p->items[k++].m);
    p->more |= k < p->n;
    p->n = k;
}

/* Frees the meetings no item of the page shows (most of a wide range's series), then reads the
 * reminder rows of each series' occurrences on the page: one statement per series. */
static enum db_status
page_rows(struct db *db, struct expand_page *p)
{
    bool *used = calloc(p->l.n ? p->l.n : 1, sizeof *used);
    int64_t *originals = calloc(p->n ? p->n : 1, sizeof *originals);
    enum db_status st = DB_ONE_RESULT;

    p->rows = calloc(p->l.n ? p->l.n : 1, sizeof *p->rows);
    if (used == NULL || originals == NULL || p->rows == NULL) {
        db_note_error(db, "expand: out of memory");
        st = DB_HARD_ERROR;
    }
    for (size_t i = 0; st == DB_ONE_RESULT && i < p->n; i++)
        used[p->items[i].m - p->l.m] = true;
    for (size_t s = 0; st == DB_ONE_RESULT && s < p->l.n; s++) {
        size_t k = 0;
        for (size_t i = 0; used[s] && i < p->n; i++)
            if (p->items[i].m == &p->l.m[s] && !p->items[i].single)
                originals[k++] = p->items[i].occ.original_start_ms;
        if (!used[s])
            meeting_fini(&p->l.m[s]);
        else if (k > 0)
            st = db_occurrence_reminders(db, p->l.m[s].id, originals, k, &p->rows[s]);
    }
    free(originals);
    free(used);
    return st;
}

int
meetings_expand(struct request *rq, struct db *db, struct db_list_query *q)
{
    struct expand_page *p;
    size_t singles = 0;

    if (q->from_ms == INT64_MIN || q->to_ms == INT64_MAX ||
        q->to_ms - q->from_ms > EXPAND_RANGE_MAX_MS)
        return http_reply_query(rq, q->from_ms == INT64_MIN ? "from" : "to",
                                "is needed with expand=true, with at most 400 days between them");
    if ((p = calloc(1, sizeof *p)) == NULL)
        return http_reply_problem(rq, API_E_INTERNAL, NULL);
    switch (db_meeting_list_range(db, rq->tenant_id, q, &p->l, &singles)) {
    case DB_HARD_ERROR:
    case DB_SOFT_ERROR:
        expand_page_free(p);
        return http_reply_problem(rq, API_E_DB_UNAVAILABLE, NULL);
    case DB_NO_RESULTS:
        expand_page_free(p);
        return http_reply_query(
            rq, "to", "must narrow the range: more than 1000 recurring meetings overlap it");
    case DB_ONE_RESULT:
        break;
    }
    const char **ids = calloc(p->l.n - singles + 1, sizeof *ids);
    p->items = calloc(singles + 3 * (q->limit + 1), sizeof *p->items);
    for (size_t i = singles; ids != NULL && i < p->l.n; i++)
        ids[i - singles] = p->l.m[i].id;
    enum db_status st = ids != NULL && p->items != NULL
                            ? db_override_list(db, ids, p->l.n - singles, &p->ol)
                            : DB_HARD_ERROR;
    free(ids);
    if (st != DB_ONE_RESULT) {
        expand_page_free(p);
        return http_reply_problem(rq, API_E_DB_UNAVAILABLE, NULL);
    }
    for (size_t i = 0; i < singles; i++) {
        struct item it = {&p->l.m[i], true, {0}};
        it.occ.starts_at_ms = it.occ.original_start_ms = p->l.m[i].starts_at_ms;
        p->items[p->n++] = it;
    }
    if (add_occurrences(q, &p->l, singles, &p->ol, p->items, &p->n) != 0) {
        expand_page_free(p);
        return http_reply_problem(rq, API_E_INTERNAL, NULL);
    }
    qsort(p->items, p->n, sizeof *p->items, item_cmp);
    page_cut(p, singles, q->limit, q->bytes_max);
    if (page_rows(db, p) != DB_ONE_RESULT) {
        expand_page_free(p);
        return http_reply_problem(rq, API_E_DB_UNAVAILABLE, NULL);
    }
    return http_page_reply(
        rq, &(struct http_page_source){p, p->n, expand_item, expand_tail, expand_page_free});
}
