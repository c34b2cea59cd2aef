/* occurrences.c -- the occurrences of a recurring meeting (docs/design.md section 9):
 * GET /v1/meetings/{id}/occurrences?from=&to=&limit=&cursor= lists them in time order with
 * overrides applied (series_page), keyset-paginated like the list and within
 * TOCSIN_PAGE_BYTES_MAX (http_page.h; the cursor is hex of "o1:<starts_at_ms>:<original_start_ms>"
 * of the last item); PATCH
 * /v1/meetings/{id}/occurrences/{original_start} moves, retitles or cancels one with a merge patch
 * on its override, then brings the series' rows in line (series_sync_write) and bumps the
 * meeting's version, so a reconciler batch read before it is skipped. */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_page.h"
#include "db_series.h"
#include "handler.h"
#include "hex.h"
#include "http_auth.h"
#include "http_page.h"
#include "http_routes.h"
#include "log.h"
#include "series_sync.h"
#include "timefmt.h"

#define PAGE_DEFAULT 50
#define CURSOR_RAW_MAX 64
#define CURSOR_MAX HEX_ENCODED_LEN(CURSOR_RAW_MAX)

static int
cursor_decode(const char *s, struct series_page_pos *pos)
{
    char raw[CURSOR_RAW_MAX + 1];
    const char *p = handler_cursor_open(s, raw, CURSOR_RAW_MAX, "o1");
    int64_t starts, original;

    if (p == NULL || handler_cursor_ms(&p, ':', &starts) != 0 ||
        handler_cursor_ms(&p, '\0', &original) != 0)
        return -1;
    *pos = (struct series_page_pos){true, starts, original};
    return 0;
}

static void
cursor_encode(const struct series_occurrence *last, char out[CURSOR_MAX + 1])
{
    char raw[CURSOR_RAW_MAX + 1];

    snprintf(raw, sizeof raw, "o1:%lld:%lld", (long long)last->starts_at_ms,
             (long long)last->original_start_ms);
    hex_encode(raw, strlen(raw), out);
}

/* The page in flight (http_page.h): the series, its overrides (occurrence titles borrow from
 * them), the occurrences and their reminder rows, all read before the first byte. */
struct occ_page {
    struct meeting m;
    struct db_override_list ol;
    struct series_override *ov;
    struct series_occurrence *occ;
    size_t n;
    bool more;
    struct db_occurrence_reminders rows;
};

static void
occ_page_free(void *arg)
{
    struct occ_page *p = arg;

    db_occurrence_reminders_fini(&p->rows);
    free(p->occ);
    free(p->ov);
    db_override_list_fini(&p->ol);
    meeting_fini(&p->m);
    free(p);
}

/* Occurrence i with its own reminder rows (those of rows with its original start). */
static int
occ_item(void *arg, size_t i, struct strbuf *out)
{
    struct occ_page *p = arg;
    struct reminder mine[MEETING_REMINDERS_MAX];
    size_t k = 0;

    for (size_t r = 0; r < p->rows.n && k < MEETING_REMINDERS_MAX; r++)
        if (p->rows.r[r].original_start_ms == p->occ[i].original_start_ms)
            mine[k++] = p->rows.r[r].r;
    json_t *v = codec_series_occurrence_encode(&p->m, &p->occ[i], mine, k);
    int rc = codec_dump_append(v, out);
    json_decref(v);
    return rc;
}

static json_t *
occ_tail(void *arg, size_t sent)
{
    struct occ_page *p = arg;
    char cursor[CURSOR_MAX + 1] = "";

    if (sent > 0 && (sent < p->n || p->more))
        cursor_encode(&p->occ[sent - 1], cursor);
    return handler_page_tail(cursor);
}

/* Loads the live series of the path for a reader (a browser token sees only its own). 0, or -1
 * after replying. */
static int
load_series(struct request *rq, struct db *db, const char *id, struct meeting *m, bool lock,
            int *ret)
{
    enum db_status st = db_meeting_get(db, rq->tenant_id, id, m, lock);

    if (st != DB_ONE_RESULT) {
        *ret = handler_db_problem(rq, st);
        return -1;
    }
    if (handler_meeting_visible(rq, m, ret) != 0)
        return -1;
    if (m->recurrence == NULL) {
        *ret = http_reply_problem(rq, API_E_NOT_RECURRING, NULL);
        return -1;
    }
    return 0;
}

/* Reads the page's occurrences and their reminder rows into p, then replies. */
static int
list(struct request *rq, struct db *db, struct occ_page *p, const struct handler_page *a,
     const struct series_page_pos *pos)
{
    size_t limit = a->limit; /* an occurrence shows none of the series' big texts: small items */
    int64_t *originals = calloc(limit, sizeof *originals);
    const char *id = p->m.id;
    long n = -1;
    enum db_status st = DB_ONE_RESULT; /* the last database call's: a failure there is a 503 */

    p->occ = calloc(limit, sizeof *p->occ);
    if (p->occ != NULL && originals != NULL &&
        (st = db_override_list(db, &id, 1, &p->ol)) == DB_ONE_RESULT &&
        (p->ov = calloc(p->ol.n ? p->ol.n : 1, sizeof *p->ov)) != NULL) {
        for (size_t i = 0; i < p->ol.n; i++)
            p->ov[i] = p->ol.o[i].ov;
        n = series_page(&p->m, p->ov, p->ol.n, a->from_ms, a->to_ms, pos, p->occ, limit, &p->more);
    }
    for (long i = 0; i < n; i++)
        originals[i] = p->occ[i].original_start_ms;
    if (n >= 0)
        st = db_occurrence_reminders(db, p->m.id, originals, (size_t)n, &p->rows);
    free(originals);
    if (n < 0 || st != DB_ONE_RESULT) {
        occ_page_free(p);
        return http_reply_problem(rq, st != DB_ONE_RESULT ? API_E_DB_UNAVAILABLE : API_E_INTERNAL,
                                  NULL);
    }
    p->n = (size_t)n;
    return http_page_reply(rq,
                           &(struct http_page_source){p, p->n, occ_item, occ_tail, occ_page_free});
}

int
handle_occurrences_list(struct request *rq)
{
    struct handler_page a = {
        .from_ms = INT64_MIN,
        .to_ms = INT64_MAX,
        .limit = PAGE_DEFAULT,
        .allowed = "is not taken: the parameters are from, to, limit and cursor",
    };
    struct series_page_pos pos = {0};
    struct occ_page *p;
    struct db *db;
    const char *id;
    int ret;

    if ((id = handler_meeting_id(rq, &ret)) == NULL || handler_page_query(rq, &a, &ret) != 0)
        return ret;
    if (a.cursor != NULL && cursor_decode(a.cursor, &pos) != 0)
        return http_reply_query(rq, "cursor", HANDLER_CURSOR_FORM);
    if ((db = http_request_db(rq)) == NULL)
        return http_reply_problem(rq, API_E_DB_UNAVAILABLE, NULL);
    if ((p = calloc(1, sizeof *p)) == NULL)
        return http_reply_problem(rq, API_E_INTERNAL, NULL);
    meeting_init(&p->m);
    if (load_series(rq, db, id, &p->m, false, &ret) != 0) {
        occ_page_free(p);
        return ret;
    }
    return list(rq, db, p, &a, &pos);
}

/* ---- PATCH one occurrence ------------------------------------------------------------------ */

/* PATCH_REFUSED answers t->refusal (404s, 403 not_organizer, 409 series_override_limit). */
enum patch_outcome { PATCH_OK, PATCH_REFUSED, PATCH_INVALID };

struct patch_tx {
    struct request *rq;
    const char *id;
    int64_t original;
    const json_t *doc;
    struct meeting m;
    struct series_override ov;
    struct codec_errors errs;
    enum api_error refusal; /* the problem for PATCH_REFUSED */
    enum patch_outcome outcome;
    bool changed; /* the override differs from the stored one: only then is anything written */
    struct series_sync_params series;
    struct db_series_keys gone, fresh;
    json_t *body;
};

static void
patch_reset(struct patch_tx *t)
{
    meeting_fini(&t->m);
    series_override_fini(&t->ov);
    json_decref(t->body);
    t->body = NULL;
    t->gone.n = t->fresh.n = 0;
    t->errs.n = 0;
}

/* The override as the patch leaves it: t->ov. */
static enum db_status
patched_override(struct db *db, struct patch_tx *t)
{
    struct db_override_list ol = {0};
    const char *id = t->m.id;
    enum db_status st = db_override_list(db, &id, 1, &ol);

    if (st != DB_ONE_RESULT)
        return st;
    const struct series_override *cur = NULL;
    for (size_t i = 0; i < ol.n; i++)
        if (ol.o[i].ov.original_start_ms == t->original)
            cur = &ol.o[i].ov;
    json_t *base = codec_series_override_doc(cur),
           *input = base ? codec_merge_patch(base, t->doc) : NULL;
    enum api_error e =
        input ? codec_series_override_decode(input, t->original, &t->ov, &t->errs) : API_E_INTERNAL;
    json_t *after = e == API_E_NONE ? codec_series_override_doc(&t->ov) : NULL;
    t->changed = after == NULL || !json_equal(base, after);
    json_decref(after);
    json_decref(base);
    json_decref(input);
    bool full = cur == NULL && ol.n >= SERIES_OVERRIDES_MAX;
    db_override_list_fini(&ol);
    if (e == API_E_NONE && t->changed && full) {
        t->outcome = PATCH_REFUSED;
        t->refusal = API_E_SERIES_OVERRIDE_LIMIT;
        return DB_ONE_RESULT;
    }
    if (e == API_E_INTERNAL) {
        db_note_error(db, "meeting %s: cannot merge the override patch (out of memory)", t->m.id);
        return DB_HARD_ERROR;
    }
    if (e != API_E_NONE)
        t->outcome = PATCH_INVALID;
    return DB_ONE_RESULT;
}

static enum db_status
patch_tx_run(struct db *db, void *arg)
{
    struct patch_tx *t = arg;
    struct request *rq = t->rq;
    int64_t now = timefmt_now_ms();
    enum db_status st;

    patch_reset(t);
    t->outcome = PATCH_REFUSED;
    t->refusal = API_E_MEETING_NOT_FOUND;
    if ((st = db_meeting_get(db, rq->tenant_id, t->id, &t->m, true)) != DB_ONE_RESULT)
        return st;
    if (rq->who.browser &&
        (!http_auth_meeting_allowed(rq, t->m.id) || !codec_people_in_meeting(&t->m, rq->who.sub)))
        return DB_NO_RESULTS;
    if (rq->who.browser &&
        (t->m.organizer_id == NULL || strcmp(t->m.organizer_id, rq->who.sub) != 0)) {
        t->refusal = API_E_NOT_ORGANIZER;
        return DB_NO_RESULTS;
    }
    t->refusal = t->m.recurrence == NULL ? API_E_NOT_RECURRING : API_E_OCCURRENCE_NOT_FOUND;
    if (t->m.recurrence == NULL || !series_occurs(&t->m, t->original))
        return DB_NO_RESULTS;
    t->outcome = PATCH_OK;
    if ((st = patched_override(db, t)) != DB_ONE_RESULT || t->outcome != PATCH_OK)
        return st != DB_ONE_RESULT ? st : DB_NO_RESULTS;
    /* A patch that changes nothing writes nothing: the version counts changes (a bump would
     * turn every other client's ETag stale for nothing). */
    if (t->changed) {
        t->m.version++;
        t->m.updated_at_ms = now;
        if ((st = db_override_put(db, t->m.id, &t->ov)) != DB_ONE_RESULT ||
            (st = db_meeting_touch(db, rq->tenant_id, t->m.id, t->m.updated_at_ms)) !=
                DB_ONE_RESULT ||
            (st = series_sync_write(db, rq->tenant_id, &t->m, true, &t->series, now, &t->gone,
                                    &t->fresh, NULL)) != DB_ONE_RESULT)
            return st;
    }
    struct db_occurrence_reminders rows = {0};
    if ((st = db_occurrence_reminders(db, t->m.id, &t->original, 1, &rows)) != DB_ONE_RESULT)
        return st;
    struct series_occurrence occ;
    struct reminder mine[MEETING_REMINDERS_MAX];
    size_t k = 0;
    for (size_t i = 0; i < rows.n && k < MEETING_REMINDERS_MAX; i++)
        mine[k++] = rows.r[i].r;
    series_occurrence_of(&t->m, t->original, &t->ov, &occ);
    t->body = codec_series_occurrence_encode(&t->m, &occ, mine, k);
    db_occurrence_reminders_fini(&rows);
    if (t->body == NULL) {
        db_note_error(db, "meeting %s: cannot encode the occurrence", t->m.id);
        return DB_HARD_ERROR;
    }
    return DB_ONE_RESULT;
}

/* The path's original start, exactly as the list shows it (UTC with milliseconds). */
static int
original_arg(struct request *rq, int64_t *out)
{
    char back[TIMEFMT_BUF];
    const char *s = rq->match.nargs == 2 ? rq->match.args[1] : "";

    if (timefmt_parse(s, strlen(s), out) != 0 || strcmp(timefmt_format(*out, back), s) != 0)
        return -1;
    return 0;
}

int
handle_occurrence_patch(struct request *rq)
{
    struct patch_tx t = {.rq = rq, .series = series_sync_params_of(rq->cfg)};
    struct db *db;
    json_t *doc;
    int ret;

    if (handler_no_query(rq, &ret) != 0)
        return ret;
    if (rq->match.nargs != 2 || !meeting_id_valid(rq->match.args[0]))
        return http_reply_problem(rq, API_E_MEETING_NOT_FOUND, NULL);
    t.id = rq->match.args[0];
    if (original_arg(rq, &t.original) != 0)
        return http_reply_problem(rq, API_E_OCCURRENCE_NOT_FOUND,
                                  "name the occurrence by its original_start as listed");
    if (handler_require_type(rq, "application/merge-patch+json", &ret) != 0 ||
        (doc = handler_parse_body(rq, &ret)) == NULL)
        return ret;
    if ((db = http_request_db(rq)) == NULL) {
        json_decref(doc);
        return http_reply_problem(rq, API_E_DB_UNAVAILABLE, NULL);
    }
    t.doc = doc;
    meeting_init(&t.m);
    enum db_status st = db_tx_run(db, patch_tx_run, &t);
    if (st == DB_ONE_RESULT) {
        handler_series_keys(rq, &t.gone, &t.fresh);
        ret = http_reply_json(rq, MHD_HTTP_OK, json_incref(t.body), NULL);
    } else if (st != DB_NO_RESULTS) {
        ret = http_reply_problem(rq, API_E_DB_UNAVAILABLE, NULL);
    } else if (t.outcome == PATCH_INVALID) {
        ret = http_reply_validation(rq, &t.errs);
    } else {
        ret = http_reply_problem(rq, t.refusal, NULL);
    }
    patch_reset(&t);
    db_series_keys_fini(&t.gone);
    db_series_keys_fini(&t.fresh);
    json_decref(doc);
    return ret;
}
