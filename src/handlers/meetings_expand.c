/* meetings_expand.c -- GET /v1/meetings?expand=true&from=&to=: what a calendar shows in a range,
 * one page at a time: single meetings, and the occurrences of every series whose actual start lies
 * in it, merged in (starts_at, id, original start) order. The singles come from the database in
 * that order; each candidate series (db_meeting_list_range) contributes at most limit + 1 of its
 * occurrences after the cursor (series_page), so a page costs the series that overlap the range,
 * not their occurrences. The cursor is hex of "x1:<starts_at_ms>:<id>:<original_start_ms>". */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_series.h"
#include "handler.h"
#include "hex.h"
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

/* The item as JSON: the meeting, as the occurrence shows it for an occurrence (its start, end,
 * title and reminder rows), with "occurrence". */
static json_t *
item_json(struct db *db, const struct item *it)
{
    struct meeting view = *it->m; /* borrows every pointer of it->m: never finalised */
    json_t *v, *occ = json_null();

    if (!it->single) {
        struct db_occurrence_reminders rows = {0};
        if (db_occurrence_reminders(db, it->m->id, &it->occ.original_start_ms, 1, &rows) !=
            DB_ONE_RESULT)
            return NULL;
        view.n_reminders = 0;
        for (size_t i = 0; i < rows.n && view.n_reminders < MEETING_REMINDERS_MAX; i++)
            view.reminders[view.n_reminders++] = rows.r[i].r;
        db_occurrence_reminders_fini(&rows);
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
reply_page(struct request *rq, struct db *db, struct item *items, size_t n, size_t limit)
{
    json_t *list = json_array();
    char cursor[CURSOR_MAX + 1] = "";
    bool more = n > limit;

    qsort(items, n, sizeof *items, item_cmp);
    for (size_t i = 0; list != NULL && i < n && i < limit; i++)
        if (json_array_append_new(list, item_json(db, &items[i])) != 0) {
            json_decref(list);
            return http_reply_problem(rq, API_E_DB_UNAVAILABLE, NULL);
        }
    if (list == NULL)
        return http_reply_problem(rq, API_E_INTERNAL, NULL);
    if (more)
        cursor_encode(&items[limit - 1], cursor);
    json_t *page = json_pack("{s:o, s:o}", "items", list, "next_cursor",
                             cursor[0] ? json_string(cursor) : json_null());
    return http_reply_json(rq, MHD_HTTP_OK, page, NULL);
}

int
meetings_expand(struct request *rq, struct db *db, struct db_list_query *q)
{
    struct db_meeting_list l = {0};
    struct db_override_list ol = {0};
    struct item *items = NULL;
    size_t singles = 0, n = 0;
    int ret;

    if (q->from_ms == INT64_MIN || q->to_ms == INT64_MAX ||
        q->to_ms - q->from_ms > EXPAND_RANGE_MAX_MS)
        return http_reply_query(rq, q->from_ms == INT64_MIN ? "from" : "to",
                                "is needed with expand=true, with at most 400 days between them");
    switch (db_meeting_list_range(db, rq->tenant_id, q, &l, &singles)) {
    case DB_HARD_ERROR:
    case DB_SOFT_ERROR:
        return http_reply_problem(rq, API_E_DB_UNAVAILABLE, NULL);
    case DB_NO_RESULTS:
        return http_reply_query(
            rq, "to", "must narrow the range: more than 1000 recurring meetings overlap it");
    case DB_ONE_RESULT:
        break;
    }
    const char **ids = calloc(l.n - singles + 1, sizeof *ids);
    items = calloc(singles + 3 * (q->limit + 1), sizeof *items);
    for (size_t i = singles; ids != NULL && i < l.n; i++)
        ids[i - singles] = l.m[i].id;
    if (ids == NULL || items == NULL ||
        db_override_list(db, ids, l.n - singles, &ol) != DB_ONE_RESULT) {
        ret = http_reply_problem(rq, API_E_DB_UNAVAILABLE, NULL);
        goto done;
    }
    for (size_t i = 0; i < singles; i++) {
        struct item it = {&l.m[i], true, {0}};
        it.occ.starts_at_ms = it.occ.original_start_ms = l.m[i].starts_at_ms;
        items[n++] = it;
    }
    if (add_occurrences(q, &l, singles, &ol, items, &n) != 0)
        ret = http_reply_problem(rq, API_E_INTERNAL, NULL);
    else
        ret = reply_page(rq, db, items, n, q->limit);
done:
    free(ids);
    free(items);
    db_override_list_fini(&ol);
    db_meeting_list_fini(&l);
    return ret;
}
