/* meeting_batch.c -- the batch of POST /v1/meetings/batch and `tocsin import`: 1..MEETING_BATCH_MAX
 * meetings, each validated by the codec as POST /v1/meetings validates one, answered item by item
 * in input order. The good items are written in one transaction: the single meetings with one
 * statement (db_meeting_insert_batch), each series as the single create writes it (its row and
 * first window of occurrences, series_sync.c); their idempotency keys are looked up, locked and
 * stored with one statement each, in the key space of the Idempotency-Key header. The caller arms
 * the Redis keys after the commit (meeting_batch_mirror): an item exists with its keys, or not
 * at all. */
#include "meeting_batch.h"

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "db_own.h"
#include "db_quota.h"
#include "db_series.h"
#include "engine.h"
#include "handler.h"
#include "metrics.h"
#include "mirror.h"
#include "panic.h"
#include "series_sync.h"
#include "timefmt.h"

#define BATCH_DETAIL_MAX 128

/* What became of one item. PENDING: valid, to be written; the others are final. */
enum item_state { ITEM_PENDING, ITEM_CREATED, ITEM_REPLAYED, ITEM_FAILED };

struct item {
    struct meeting m;
    enum item_state state;
    bool rejected;        /* failed before the transaction (validation): stays failed */
    enum api_error error; /* ITEM_FAILED */
    json_t *problem;      /* ITEM_FAILED by validation: its body, with the field errors */
    const char *key;      /* borrowed from key_buf, NULL when the item has none */
    char key_buf[IDEMPOTENCY_KEY_MAX + 1];
    char hash[CRYPTO_SHA256_HEX_LEN + 1];
    size_t first; /* the earlier item of the batch with the same key, or itself */
    char replayed_id[MEETING_ID_LEN + 1];
    char *body; /* the stored response of a created item with a key */
    char etag[HTTP_ETAG_MAX];
    char location[HTTP_LOCATION_MAX];
    struct db_series_keys fresh; /* a series' occurrence keys to arm */
};

struct meeting_batch {
    int64_t tenant_id;
    struct item *it;
    size_t n;
    struct series_sync_params series;
    int64_t quota; /* TOCSIN_TENANT_MEETINGS_MAX, 0 = none */
    size_t quota_refused;
    /* scratch for the statements, n entries each */
    const char **keys, **hashes;
    size_t *which;
    struct db_idem_hit *hits;
    bool *locked;
    struct meeting **singles;
    struct db_idem_response *resps;
    struct db_series_keys own; /* the single meetings' participants' own reminders (db_own.h) */
};

static void
fail(struct item *t, enum api_error e)
{
    t->state = ITEM_FAILED;
    t->error = e;
}

/* Reads item i: its idempotency_key taken out, its hash taken over the rest (compact, keys
 * sorted: codec_dump), then the meeting through the codec, exactly as a single create. */
static void
decode_item(struct meeting_batch *b, size_t i, json_t *v)
{
    struct item *t = &b->it[i];
    struct codec_errors errs = {0};
    json_t *k;

    meeting_init(&t->m);
    t->first = i;
    t->rejected = true; /* until it passes */
    if (!json_is_object(v)) {
        snprintf(errs.e[0].field, sizeof errs.e[0].field, "items[%zu]", i);
        snprintf(errs.e[0].message, sizeof errs.e[0].message, "must be a meeting object");
        errs.n = 1;
    } else if ((k = json_object_get(v, "idempotency_key")) != NULL) {
        if (!json_is_string(k) || !handler_idempotency_key_valid(json_string_value(k))) {
            snprintf(errs.e[0].field, sizeof errs.e[0].field, "idempotency_key");
            snprintf(errs.e[0].message, sizeof errs.e[0].message,
                     "must be 1..255 printable ASCII characters");
            errs.n = 1;
        } else {
            snprintf(t->key_buf, sizeof t->key_buf, "%s", json_string_value(k));
            t->key = t->key_buf;
            json_object_del(v, "idempotency_key");
        }
    }
    if (errs.n == 0 && t->key != NULL) {
        char *dump = codec_dump(v);
        if (dump == NULL) {
            fail(t, API_E_INTERNAL);
            return;
        }
        crypto_sha256_hex(dump, strlen(dump), t->hash);
        free(dump);
    }
    if (errs.n == 0 && codec_meeting_decode(v, &t->m, &errs) == API_E_NONE &&
        handler_series_upcoming(NULL, &t->m, &errs)) {
        if (meeting_new_id(t->m.id) != 0) {
            fail(t, API_E_INTERNAL);
            return;
        }
        t->m.version = 1;
        t->m.created_at_ms = t->m.updated_at_ms = timefmt_now_ms();
        snprintf(t->location, sizeof t->location, "/v1/meetings/%s", t->m.id);
        t->rejected = false;
        return;
    }
    fail(t, API_E_VALIDATION);
    t->problem = http_reply_problem_doc(API_E_VALIDATION, NULL, &errs);
}

/* A key seen earlier in the batch is that item's: this one is its replay (or a mismatch). */
static void
link_duplicates(struct meeting_batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        struct item *t = &b->it[i];
        if (t->state != ITEM_PENDING || t->key == NULL)
            continue;
        for (size_t j = 0; j < i; j++)
            if (b->it[j].first == j && b->it[j].state == ITEM_PENDING && b->it[j].key != NULL &&
                strcmp(b->it[j].key, t->key) == 0) {
                t->first = j;
                break;
            }
    }
}

/* The stored responses of the items' keys (the items that own a key in this batch): a found one
 * makes its item a replay or a mismatch. Those not found are locked; a key another transaction
 * holds is in flight (409), and one locked is looked up again, for a request that committed
 * between the two statements. */
static enum db_status
check_keys(struct db *db, struct meeting_batch *b)
{
    size_t nk = 0, nl = 0;
    enum db_status st;

    for (size_t i = 0; i < b->n; i++)
        if (b->it[i].state == ITEM_PENDING && b->it[i].key != NULL && b->it[i].first == i) {
            b->which[nk] = i;
            b->keys[nk++] = b->it[i].key;
        }
    if (nk == 0)
        return DB_ONE_RESULT;
    for (int pass = 0; pass < 2 && nk > 0; pass++) {
        if ((st = db_idem_get_many(db, b->tenant_id, b->keys, nk, b->hits)) != DB_ONE_RESULT)
            return st;
        nl = 0;
        for (size_t k = 0; k < nk; k++) {
            struct item *t = &b->it[b->which[k]];
            const struct db_idem_hit *h = &b->hits[k];
            if (!h->found) {
                b->which[nl] = b->which[k];
                b->keys[nl++] = b->keys[k];
            } else if (strcmp(h->request_hash, t->hash) != 0) {
                fail(t, API_E_IDEMPOTENCY_MISMATCH);
            } else {
                t->state = ITEM_REPLAYED;
                const char *id = strrchr(h->location, '/');
                snprintf(t->replayed_id, sizeof t->replayed_id, "%s", id ? id + 1 : "");
            }
        }
        nk = nl;
        if (pass == 1 || nk == 0)
            break;
        if ((st = db_idem_lock_many(db, b->tenant_id, b->keys, nk, b->locked)) != DB_ONE_RESULT)
            return st;
        nl = 0;
        for (size_t k = 0; k < nk; k++) {
            if (!b->locked[k]) {
                fail(&b->it[b->which[k]], API_E_IDEMPOTENCY_IN_FLIGHT);
                continue;
            }
            b->which[nl] = b->which[k];
            b->keys[nl++] = b->keys[k];
        }
        nk = nl;
    }
    return DB_ONE_RESULT;
}

/* TOCSIN_TENANT_MEETINGS_MAX, counted once for the batch in its transaction (the single
 * create's count and its bound on concurrent creates, meetings_post.c): the items past what the
 * quota leaves fail alone, in input order. */
static enum db_status
check_quota(struct db *db, struct meeting_batch *b)
{
    int64_t live = 0, left;
    enum db_status st;

    if (b->quota == 0)
        return DB_ONE_RESULT;
    if ((st = db_quota_meetings(db, b->tenant_id, b->quota, &live)) != DB_ONE_RESULT)
        return st;
    left = b->quota - live;
    for (size_t i = 0; i < b->n; i++) {
        struct item *t = &b->it[i];
        if (t->state != ITEM_PENDING || t->first != i)
            continue;
        if (left > 0) {
            left--;
            continue;
        }
        fail(t, API_E_QUOTA_EXCEEDED);
        b->quota_refused++;
    }
    return DB_ONE_RESULT;
}

static bool
to_write(const struct meeting_batch *b, size_t i)
{
    return b->it[i].state == ITEM_PENDING && b->it[i].first == i;
}

/* The series of the batch, one by one through the single create's series code. */
static enum db_status
write_series(struct db *db, struct meeting_batch *b, int64_t now)
{
    enum db_status st;

    for (size_t i = 0; i < b->n; i++) {
        struct item *t = &b->it[i];
        if (!to_write(b, i) || t->m.recurrence == NULL)
            continue;
        if ((st = db_meeting_insert(db, b->tenant_id, &t->m, NULL)) == DB_NO_RESULTS) {
            db_note_error(db, "meeting %s: its insert returned no row", t->m.id);
            return DB_HARD_ERROR;
        }
        if (st != DB_ONE_RESULT)
            return st;
        t->fresh.n = 0;
        st = series_sync_write(db, b->tenant_id, &t->m, false, &b->series, now, NULL, &t->fresh,
                               NULL);
        if (st == DB_ONE_RESULT && t->key != NULL)
            st = handler_series_body(db, b->tenant_id, t->m.id, &t->body, t->etag);
        if (st != DB_ONE_RESULT)
            return st;
    }
    return DB_ONE_RESULT;
}

/* The responses stored under the created items' keys: what a single create with that key
 * stores (201, the meeting, its Location and ETag), so either path replays the other's. */
static enum db_status
store_keys(struct db *db, struct meeting_batch *b)
{
    size_t nk = 0;

    for (size_t i = 0; i < b->n; i++) {
        struct item *t = &b->it[i];
        if (!to_write(b, i) || t->key == NULL)
            continue;
        if (t->body == NULL &&
            handler_meeting_body_st(db, &t->m, &t->body, t->etag) != DB_ONE_RESULT)
            return DB_HARD_ERROR;
        b->keys[nk] = t->key;
        b->hashes[nk] = t->hash;
        b->resps[nk++] = (struct db_idem_response){MHD_HTTP_CREATED, t->body, t->location, t->etag};
    }
    return nk == 0 ? DB_ONE_RESULT
                   : db_idem_put_many(db, b->tenant_id, b->keys, b->hashes, b->resps, nk);
}

/* The own reminders of the ns single meetings just inserted, in one statement. */
static enum db_status
plan_own(struct db *db, struct meeting_batch *b, size_t ns)
{
    b->own.n = 0;
    if (ns == 0)
        return DB_ONE_RESULT;
    const char **ids = calloc(ns, sizeof *ids);
    if (ids == NULL) {
        db_note_error(db, "batch: out of memory for %zu meeting ids", ns);
        return DB_HARD_ERROR;
    }
    for (size_t i = 0; i < ns; i++)
        ids[i] = b->singles[i]->id;
    enum db_status st = db_own_plan_meetings(db, ids, ns, NULL, &b->own);
    free(ids);
    return st;
}

/* Runs inside db_tx_run, so it may run again after a soft error: every outcome it decides is
 * reset first (the validation's stay). */
static enum db_status
batch_tx_run(struct db *db, void *arg)
{
    struct meeting_batch *b = arg;
    size_t ns = 0;
    enum db_status st;

    b->quota_refused = 0;
    for (size_t i = 0; i < b->n; i++) {
        struct item *t = &b->it[i];
        if (!t->rejected)
            t->state = ITEM_PENDING;
        free(t->body);
        t->body = NULL;
    }
    if ((st = check_keys(db, b)) != DB_ONE_RESULT || (st = check_quota(db, b)) != DB_ONE_RESULT)
        return st;
    for (size_t i = 0; i < b->n; i++)
        if (to_write(b, i) && b->it[i].m.recurrence == NULL)
            b->singles[ns++] = &b->it[i].m;
    if (ns > 0 && (st = db_meeting_insert_batch(db, b->tenant_id, b->singles, ns)) != DB_ONE_RESULT)
        return st;
    if ((st = plan_own(db, b, ns)) != DB_ONE_RESULT)
        return st;
    if ((st = write_series(db, b, timefmt_now_ms())) != DB_ONE_RESULT)
        return st;
    return store_keys(db, b);
}

json_t *
meeting_batch_result(const struct meeting_batch *b, size_t i)
{
    const struct item *t = &b->it[i];
    const struct item *f = &b->it[t->first];
    char detail[BATCH_DETAIL_MAX];

    if (t->first != i && t->state == ITEM_PENDING) { /* the same key earlier in this batch */
        if (strcmp(t->hash, f->hash) != 0)
            return json_pack("{s:i, s:o}", "status", api_errors_status(API_E_IDEMPOTENCY_MISMATCH),
                             "problem",
                             http_reply_problem_doc(API_E_IDEMPOTENCY_MISMATCH,
                                                    "this idempotency_key was used with a "
                                                    "different item earlier in this batch",
                                                    NULL));
        if (f->state == ITEM_CREATED)
            return json_pack("{s:i, s:s}", "status", MHD_HTTP_OK, "id", f->m.id);
        if (f->state == ITEM_REPLAYED)
            return json_pack("{s:i, s:s}", "status", MHD_HTTP_OK, "id", f->replayed_id);
        t = f; /* it failed: so does this one, the same way */
    }
    switch (t->state) {
    case ITEM_CREATED:
        return json_pack("{s:i, s:s}", "status", MHD_HTTP_CREATED, "id", t->m.id);
    case ITEM_REPLAYED:
        return json_pack("{s:i, s:s}", "status", MHD_HTTP_OK, "id", t->replayed_id);
    case ITEM_FAILED:
    case ITEM_PENDING:
        break;
    }
    if (t->problem != NULL)
        return json_pack("{s:i, s:O}", "status", api_errors_status(t->error), "problem",
                         t->problem);
    const char *d = NULL;
    if (t->error == API_E_QUOTA_EXCEEDED) {
        snprintf(detail, sizeof detail,
                 "this tenant has %lld live meetings, its quota (TOCSIN_TENANT_MEETINGS_MAX)",
                 (long long)b->quota);
        d = detail;
    } else if (t->error == API_E_IDEMPOTENCY_MISMATCH) {
        d = "this idempotency_key was used with a different request body";
    }
    json_t *p = http_reply_problem_doc(t->error, d, NULL);
    return json_pack("{s:i, s:o}", "status", api_errors_status(t->error), "problem", p);
}

/* Every created meeting's pending keys in one pipeline (mirror_arm sends them in chunks): the
 * single meetings' and the series' first windows. */
int
meeting_batch_mirror(const struct meeting_batch *b, struct mirror *mi, struct engine *e)
{
    size_t cap = 0, nk = 0;
    struct reminder_keys one;
    struct reminder_key *k;
    int rc = 0;

    for (size_t i = 0; i < b->n; i++)
        if (b->it[i].state == ITEM_CREATED)
            cap += b->it[i].m.recurrence != NULL ? b->it[i].fresh.n : MEETING_REMINDERS_MAX;
    cap += b->own.n;
    if (cap == 0)
        return 0;
    if ((k = malloc(cap * sizeof *k)) == NULL)
        return -1;
    for (size_t i = 0; i < b->n; i++) {
        const struct item *t = &b->it[i];
        if (t->state != ITEM_CREATED)
            continue;
        if (t->m.recurrence != NULL) {
            if (t->fresh.n > 0)
                memcpy(k + nk, t->fresh.k, t->fresh.n * sizeof *k);
            nk += t->fresh.n;
            continue;
        }
        one.n = 0; /* meeting_pending_keys appends */
        meeting_pending_keys(&t->m, &one);
        memcpy(k + nk, one.k, one.n * sizeof *k);
        nk += one.n;
    }
    if (b->own.n > 0)
        memcpy(k + nk, b->own.k, b->own.n * sizeof *k);
    nk += b->own.n;
    if (nk > 0) {
        engine_reminders_changed(e, k, nk);
        rc = mirror_arm(mi, k, nk, timefmt_now_ms(), 0);
    }
    free(k);
    return rc;
}

size_t
meeting_batch_count(const struct meeting_batch *b)
{
    return b->n;
}

void
meeting_batch_free(struct meeting_batch *b)
{
    if (b == NULL)
        return;
    for (size_t i = 0; b->it != NULL && i < b->n; i++) {
        meeting_fini(&b->it[i].m);
        json_decref(b->it[i].problem);
        free(b->it[i].body);
        db_series_keys_fini(&b->it[i].fresh);
    }
    free(b->it);
    free(b->keys);
    free(b->hashes);
    free(b->which);
    free(b->hits);
    free(b->locked);
    free(b->singles);
    free(b->resps);
    db_series_keys_fini(&b->own);
    free(b);
}

static int
alloc_items(struct meeting_batch *b, size_t n)
{
    b->n = n;
    b->it = calloc(n, sizeof *b->it);
    b->keys = calloc(n, sizeof *b->keys);
    b->hashes = calloc(n, sizeof *b->hashes);
    b->which = calloc(n, sizeof *b->which);
    b->hits = calloc(n, sizeof *b->hits);
    b->locked = calloc(n, sizeof *b->locked);
    b->singles = calloc(n, sizeof(struct meeting *));
    b->resps = calloc(n, sizeof *b->resps);
    return b->it && b->keys && b->hashes && b->which && b->hits && b->locked && b->singles &&
                   b->resps
               ? 0
               : -1;
}

struct meeting_batch *
meeting_batch_new(const struct config *cfg, int64_t tenant_id, json_t *items)
{
    struct meeting_batch *b = calloc(1, sizeof *b);
    size_t n = json_array_size(items);

    if (b == NULL)
        return NULL;
    b->tenant_id = tenant_id;
    b->series = series_sync_params_of(cfg);
    b->quota = cfg->tenant_meetings_max;
    TOCSIN_ASSERT(n >= 1 && n <= MEETING_BATCH_MAX);
    if (alloc_items(b, n) != 0) {
        meeting_batch_free(b);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        decode_item(b, i, json_array_get(items, i));
    link_duplicates(b);
    return b;
}

enum db_status
meeting_batch_write(struct meeting_batch *b, struct db *db)
{
    enum db_status st = db_tx_run(db, batch_tx_run, b);

    if (st != DB_ONE_RESULT)
        return st;
    for (size_t i = 0; i < b->n; i++)
        if (to_write(b, i))
            b->it[i].state = ITEM_CREATED;
    if (b->quota_refused > 0)
        metrics_add(METRIC_QUOTA_REFUSED, b->quota_refused);
    return DB_ONE_RESULT;
}
