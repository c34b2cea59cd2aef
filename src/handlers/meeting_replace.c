/* meeting_replace.c -- the read-modify-write shared by PUT and PATCH. In one transaction: lock the
 * row, check If-Match against the current representation, build and validate the new state (a
 * browser token's also against browser_writes.h's bounds), write it (a series: with its window of
 * occurrence rows, keeping the overrides whose occurrence still exists). The Redis keys follow
 * after the commit. A new state equal to the current one (PATCH {}, a PUT of the same fields)
 * writes nothing: the answer is the current representation, version and ETag unchanged, as a
 * version counts changes. */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "browser_writes.h"
#include "db_own.h"
#include "db_series.h"
#include "handler.h"
#include "http_auth.h"
#include "panic.h"
#include "series_sync.h"
#include "timefmt.h"

enum replace_outcome {
    REPLACE_OK,
    REPLACE_NOT_FOUND,
    REPLACE_NOT_ORGANIZER,
    REPLACE_PRECONDITION,
    REPLACE_INVALID,
    REPLACE_REFUSED /* over browser_writes.h's bounds: t->refusal, about t->errs */
};

struct replace_tx {
    struct request *rq; /* for the principal: a browser token changes only what it organizes */
    int64_t tenant_id;
    const char *id;
    const json_t *doc;
    bool is_patch;
    const char *if_match;
    struct meeting cur;
    struct meeting next;
    struct codec_errors errs;
    struct reminder_keys gone;
    char *body;
    char etag[HTTP_ETAG_MAX];
    enum replace_outcome outcome;
    enum api_error refusal; /* REPLACE_REFUSED's */
    bool unchanged;         /* next equals cur: nothing written */
    /* A series (before or after): its occurrence rows' keys and the overrides it dropped. */
    struct series_sync_params series;
    struct db_series_keys series_gone, series_fresh;
    struct series_sync_dropped dropped;
};

static void
replace_reset(struct replace_tx *t)
{
    meeting_fini(&t->cur);
    meeting_fini(&t->next);
    free(t->body);
    t->body = NULL;
    t->errs.n = 0;
    t->gone.n = 0;
    t->unchanged = false;
    t->series_gone.n = t->series_fresh.n = 0;
    series_sync_dropped_fini(&t->dropped);
}

/* Whether next's writable fields, in their canonical input form, are cur's. */
static bool
same_fields(const struct meeting *cur, const struct meeting *next)
{
    json_t *a = codec_meeting_input_doc(cur), *b = codec_meeting_input_doc(next);
    bool same = a != NULL && b != NULL && json_equal(a, b);
    json_decref(a);
    json_decref(b);
    return same;
}

/* The new state of the meeting; REPLACE_INVALID with t->errs when it does not validate. */
static enum replace_outcome
build_next(struct replace_tx *t)
{
    json_t *input;
    if (t->is_patch) {
        json_t *base = codec_meeting_input_doc(&t->cur);
        input = base ? codec_merge_patch(base, t->doc) : NULL;
        json_decref(base);
    } else {
        input = json_incref((json_t *)t->doc);
    }
    if (input == NULL)
        return REPLACE_INVALID;
    enum api_error e = codec_meeting_decode(input, &t->next, &t->errs);
    json_decref(input);
    if (e != API_E_NONE)
        return REPLACE_INVALID;
    /* The organizer is set at creation and never changes; naming the same one is fine. */
    if (t->next.organizer_id != NULL &&
        (t->cur.organizer_id == NULL || strcmp(t->next.organizer_id, t->cur.organizer_id) != 0)) {
        snprintf(t->errs.e[0].field, sizeof t->errs.e[0].field, "organizer_id");
        snprintf(t->errs.e[0].message, sizeof t->errs.e[0].message, "cannot change");
        t->errs.n = 1;
        return REPLACE_INVALID;
    }
    free(t->next.organizer_id);
    t->next.organizer_id = t->cur.organizer_id ? strdup(t->cur.organizer_id) : NULL;
    if (t->cur.organizer_id != NULL && t->next.organizer_id == NULL)
        return REPLACE_INVALID;
    memcpy(t->next.id, t->cur.id, sizeof(t->next.id));
    t->next.created_at_ms = t->cur.created_at_ms;
    t->next.version = t->cur.version + 1;
    t->next.updated_at_ms = timefmt_now_ms();
    if (!handler_series_upcoming(&t->cur, &t->next, &t->errs))
        return REPLACE_INVALID;
    return REPLACE_OK;
}

/* The write of a changed meeting; a series (before or after) also brings its occurrence rows in
 * line, and its body is read back. */
static enum db_status
write_next(struct db *db, struct replace_tx *t)
{
    enum db_status st = db_meeting_update(db, t->tenant_id, &t->next, &t->gone);

    if (st == DB_NO_RESULTS) {
        db_note_error(db, "meeting %s: its update found no row after its read for update",
                      t->next.id);
        return DB_HARD_ERROR;
    }
    if (st != DB_ONE_RESULT)
        return st;
    if (t->next.recurrence == NULL && t->cur.recurrence == NULL) {
        st = db_own_plan_meeting(db, t->next.id, &t->series_gone, &t->series_fresh);
        return st != DB_ONE_RESULT ? st : handler_meeting_body_st(db, &t->next, &t->body, t->etag);
    }
    st = series_sync_write(db, t->tenant_id, &t->next, t->cur.recurrence != NULL, &t->series,
                           timefmt_now_ms(), &t->series_gone, &t->series_fresh, &t->dropped);
    return st != DB_ONE_RESULT
               ? st
               : handler_series_body(db, t->tenant_id, t->next.id, &t->body, t->etag);
}

static enum db_status
replace_tx_run(struct db *db, void *arg)
{
    struct replace_tx *t = arg;
    enum db_status st;

    replace_reset(t);
    st = db_meeting_get(db, t->tenant_id, t->id, &t->cur, true);
    if (st == DB_NO_RESULTS)
        t->outcome = REPLACE_NOT_FOUND;
    if (st != DB_ONE_RESULT)
        return st;
    if (t->rq->who.browser) {
        if (!http_auth_meeting_allowed(t->rq, t->cur.id) ||
            !codec_people_in_meeting(&t->cur, t->rq->who.sub)) {
            t->outcome = REPLACE_NOT_FOUND;
            return DB_NO_RESULTS;
        }
        if (t->cur.organizer_id == NULL || strcmp(t->cur.organizer_id, t->rq->who.sub) != 0) {
            t->outcome = REPLACE_NOT_ORGANIZER;
            return DB_NO_RESULTS;
        }
    }
    if (t->if_match != NULL) {
        if ((st = handler_meeting_body_st(db, &t->cur, &t->body, t->etag)) != DB_ONE_RESULT)
            return st;
        if (!http_reply_etag_matches(t->if_match, t->etag, 0)) {
            t->outcome = REPLACE_PRECONDITION;
            return DB_NO_RESULTS;
        }
        free(t->body);
        t->body = NULL;
    }
    if ((t->outcome = build_next(t)) != REPLACE_OK)
        return DB_NO_RESULTS;
    if (t->rq->who.browser && (t->refusal = browser_writes_check(t->rq->cfg, &t->cur, &t->next,
                                                                 &t->errs)) != API_E_NONE) {
        t->outcome = REPLACE_REFUSED;
        return DB_NO_RESULTS;
    }
    if (same_fields(&t->cur, &t->next)) {
        t->unchanged = true;
        free(t->body);
        return handler_meeting_body_st(db, &t->cur, &t->body, t->etag);
    }
    return write_next(db, t);
}

/* A series' PUT or PATCH answer adds "overrides_dropped": the original starts of the overrides
 * the change removed because their occurrence is gone. The ETag stays the meeting's (GET's). */
static char *
with_dropped(const char *body, const struct series_sync_dropped *d)
{
    json_t *v = json_loads(body, 0, NULL), *list = json_array();
    char *out = NULL;

    for (size_t i = 0; list != NULL && d != NULL && i < d->n; i++)
        json_array_append_new(list, codec_time(d->at[i]));
    if (v != NULL && list != NULL && json_object_set_new(v, "overrides_dropped", list) == 0)
        out = codec_dump(v);
    else
        json_decref(list);
    json_decref(v);
    return out;
}

static int
reply(struct request *rq, struct replace_tx *t, enum db_status st)
{
    struct http_reply_meta meta = {t->etag, NULL, NULL, NULL};
    if (st == DB_ONE_RESULT) {
        if (!t->unchanged) {
            handler_mirror_sync(rq, &t->gone, &t->next);
            handler_series_keys(rq, &t->series_gone, &t->series_fresh);
        }
        const struct meeting *now = t->unchanged ? &t->cur : &t->next;
        if (now->recurrence == NULL)
            return http_reply_raw(rq, MHD_HTTP_OK, t->body, strlen(t->body), NULL, &meta);
        char *body = with_dropped(t->body, &t->dropped);
        if (body == NULL)
            return http_reply_problem(rq, API_E_INTERNAL, NULL);
        int ret = http_reply_raw(rq, MHD_HTTP_OK, body, strlen(body), NULL, &meta);
        free(body);
        return ret;
    }
    if (st != DB_NO_RESULTS)
        return http_reply_problem(rq, API_E_DB_UNAVAILABLE, NULL);
    switch (t->outcome) {
    case REPLACE_NOT_FOUND:
        return http_reply_problem(rq, API_E_MEETING_NOT_FOUND, NULL);
    case REPLACE_NOT_ORGANIZER:
        return http_reply_problem(rq, API_E_NOT_ORGANIZER, NULL);
    case REPLACE_PRECONDITION:
        return http_reply_problem(rq, API_E_PRECONDITION_FAILED,
                                  "If-Match does not match the current ETag");
    case REPLACE_INVALID:
        return http_reply_validation(rq, &t->errs);
    case REPLACE_REFUSED:
        return t->refusal == API_E_INTERNAL ? http_reply_problem(rq, t->refusal, NULL)
                                            : http_reply_fields(rq, t->refusal, &t->errs);
    case REPLACE_OK:
        break;
    }
    TOCSIN_UNREACHABLE("replace_tx_run returned NO_RESULTS without an outcome");
}

int
handler_meeting_replace(struct request *rq, const json_t *doc, bool is_patch)
{
    struct replace_tx t = {.rq = rq,
                           .tenant_id = rq->tenant_id,
                           .id = rq->match.args[0],
                           .doc = doc,
                           .is_patch = is_patch,
                           .series = series_sync_params_of(rq->cfg)};
    struct db *db = http_request_db(rq);
    int ret;

    if (db == NULL)
        return http_reply_problem(rq, API_E_DB_UNAVAILABLE, NULL);
    t.if_match = http_request_header(rq, MHD_HTTP_HEADER_IF_MATCH);
    meeting_init(&t.cur);
    meeting_init(&t.next);
    ret = reply(rq, &t, db_tx_run(db, replace_tx_run, &t));
    replace_reset(&t);
    db_series_keys_fini(&t.series_gone);
    db_series_keys_fini(&t.series_fresh);
    return ret;
}
