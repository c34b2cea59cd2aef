/* meetings_post.c -- POST /v1/meetings. Validate, insert (one statement; a series with its first
 * window of occurrences, in one transaction), then arm the Redis keys after the commit. With an
 * Idempotency-Key the insert and the stored response share one transaction, serialized per key by a
 * try-lock: a concurrent duplicate gets 409 instead of waiting, a finished one is replayed byte for
 * byte, a different body with the same key is 422. The stored response is read before the try-lock
 * is taken, so that replays of a finished request never contend for the lock (parallel replays
 * would otherwise get 409 from each other); after the lock it is read again, for a first request
 * that committed in between. Under TOCSIN_TENANT_MEETINGS_MAX every create is a transaction that
 * counts the tenant's live meetings before its insert (check_quota). */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "browser_writes.h"
#include "crypto.h"
#include "db_own.h"
#include "db_quota.h"
#include "db_series.h"
#include "handler.h"
#include "http_routes.h"
#include "metrics.h"
#include "panic.h"
#include "series_sync.h"
#include "timefmt.h"

#define LOCATION_MAX 64
#define SCOPED_KEY_LEN (2 + CRYPTO_SHA256_HEX_LEN) /* "b:" and a hash */
_Static_assert(SCOPED_KEY_LEN <= IDEMPOTENCY_KEY_MAX, "a participant's key fits the key column");

_Static_assert(DB_REQUEST_HASH_LEN == CRYPTO_SHA256_HEX_LEN, "a request hash is crypto_sha256_hex");

#define QUOTA_DETAIL_MAX 128

enum post_outcome { POST_CREATED, POST_REPLAY, POST_MISMATCH, POST_IN_FLIGHT, POST_QUOTA };

struct post_tx {
    int64_t tenant_id;
    const char *key;
    char request_hash[DB_REQUEST_HASH_LEN + 1];
    struct meeting *m;
    char location[LOCATION_MAX];
    char etag[HTTP_ETAG_MAX];
    char *body;
    struct db_idem_response stored;
    enum post_outcome outcome;
    struct series_sync_params series; /* a series is written with its first window of occurrences */
    struct db_series_keys fresh;
    int64_t quota; /* TOCSIN_TENANT_MEETINGS_MAX, 0 = none */
};

/* The stored response of the key, if any: ONE_RESULT with t->outcome replay or mismatch. */
static enum db_status
read_stored(struct db *db, struct post_tx *t)
{
    char stored_hash[65];
    enum db_status st;

    db_idem_response_fini(&t->stored);
    st = db_idem_get(db, t->tenant_id, t->key, stored_hash, &t->stored);
    if (st == DB_ONE_RESULT)
        t->outcome = strcmp(stored_hash, t->request_hash) == 0 ? POST_REPLAY : POST_MISMATCH;
    return st;
}

/* TOCSIN_TENANT_MEETINGS_MAX: NO_RESULTS with the outcome POST_QUOTA when the tenant has that
 * many live meetings. The count runs in the create's transaction, READ COMMITTED: creates that
 * count at once all see the meetings committed before them, so together they pass the quota by
 * at most as many as were in flight at once, less one: fewer than TOCSIN_HTTP_THREADS on one
 * replica (tenant_limits.test.mjs holds it), that many times the replicas in all. An exact
 * count would take a lock on the tenant for each create, serializing its creates on their
 * commits and holding HTTP threads waiting there, which a quota must not cost. */
static enum db_status
check_quota(struct db *db, struct post_tx *t)
{
    int64_t live = 0;
    enum db_status st;

    if (t->quota == 0)
        return DB_ONE_RESULT;
    if ((st = db_quota_meetings(db, t->tenant_id, t->quota, &live)) != DB_ONE_RESULT)
        return st;
    if (live < t->quota)
        return DB_ONE_RESULT;
    t->outcome = POST_QUOTA;
    return DB_NO_RESULTS;
}

/* A single meeting's own reminders of its participants (db_own.h) when one of them has some
 * (own, from the insert), and its body. */
static enum db_status
insert_single_own(struct db *db, struct post_tx *t, bool own)
{
    enum db_status st = own ? db_own_plan_meeting(db, t->m->id, NULL, &t->fresh) : DB_ONE_RESULT;

    return st != DB_ONE_RESULT ? st : handler_meeting_body_st(db, t->m, &t->body, t->etag);
}

/* The insert and its body, within the quota. A series also gets its series row and its first
 * window of occurrence rows, and its body is read back (its reminders show their next firing). */
static enum db_status
insert(struct db *db, struct post_tx *t)
{
    enum db_status st = check_quota(db, t);

    if (st != DB_ONE_RESULT)
        return st;
    bool own = false;
    st = db_meeting_insert(db, t->tenant_id, t->m, &own);
    if (st == DB_NO_RESULTS) {
        db_note_error(db, "meeting %s: its insert returned no row", t->m->id);
        return DB_HARD_ERROR;
    }
    if (st != DB_ONE_RESULT)
        return st;
    t->fresh.n = 0;
    if (t->m->recurrence == NULL)
        return insert_single_own(db, t, own);
    st = series_sync_write(db, t->tenant_id, t->m, false, &t->series, timefmt_now_ms(), NULL,
                           &t->fresh, NULL);
    return st != DB_ONE_RESULT ? st
                               : handler_series_body(db, t->tenant_id, t->m->id, &t->body, t->etag);
}

/* Runs inside db_tx_run, so it may run again after a soft error: reset what it produced. Without
 * an Idempotency-Key (a series, which takes several statements, or any create under a quota) it
 * is the insert alone. */
static enum db_status
post_tx_run(struct db *db, void *arg)
{
    struct post_tx *t = arg;
    enum db_status st;

    free(t->body);
    t->body = NULL;
    t->outcome = POST_CREATED;
    if (t->key == NULL)
        return insert(db, t);
    st = read_stored(db, t);
    if (st == DB_NO_RESULTS) {
        st = db_idem_lock(db, t->tenant_id, t->key);
        if (st == DB_NO_RESULTS)
            t->outcome = POST_IN_FLIGHT;
        if (st != DB_ONE_RESULT)
            return st;
        st = read_stored(db, t);
    }
    if (st != DB_NO_RESULTS)
        return st;
    if ((st = insert(db, t)) != DB_ONE_RESULT)
        return st;
    struct db_idem_response resp = {MHD_HTTP_CREATED, t->body, t->location, t->etag};
    t->outcome = POST_CREATED;
    return db_idem_put(db, t->tenant_id, t->key, t->request_hash, &resp);
}

static int
reply_quota(struct request *rq, int64_t quota)
{
    char detail[QUOTA_DETAIL_MAX];

    metrics_add(METRIC_QUOTA_REFUSED, 1);
    snprintf(detail, sizeof detail,
             "this tenant has %lld live meetings, its quota (TOCSIN_TENANT_MEETINGS_MAX): "
             "delete some first",
             (long long)quota);
    return http_reply_problem(rq, API_E_QUOTA_EXCEEDED, detail);
}

static int
reply_outcome(struct request *rq, struct post_tx *t)
{
    struct http_reply_meta meta = {t->etag, t->location, NULL, NULL};
    switch (t->outcome) {
    case POST_CREATED:
        handler_mirror_sync(rq, NULL, t->m);
        handler_series_keys(rq, NULL, &t->fresh);
        return http_reply_raw(rq, MHD_HTTP_CREATED, t->body, strlen(t->body), NULL, &meta);
    case POST_REPLAY:
        meta.etag = t->stored.etag;
        meta.location = t->stored.location;
        return http_reply_raw(rq, (unsigned)t->stored.status, t->stored.body,
                              strlen(t->stored.body), NULL, &meta);
    case POST_MISMATCH:
        return http_reply_problem(rq, API_E_IDEMPOTENCY_MISMATCH,
                                  "this Idempotency-Key was used with a different request body");
    case POST_IN_FLIGHT:
        return http_reply_problem(rq, API_E_IDEMPOTENCY_IN_FLIGHT, NULL);
    case POST_QUOTA:
        return reply_quota(rq, t->quota);
    }
    TOCSIN_UNREACHABLE("a post outcome outside its enum");
}

/* What a request's Idempotency-Key is stored under: the key as given for an API key (a tenant's
 * servers share one space of keys), and for a browser token a key of its participant's own, so
 * that two people who pick the same natural key (a date) never get each other's meeting: "b:" and
 * the SHA-256 of the subject and the key, which fits the key column whatever their lengths (a
 * server that sends such a key itself only meets its own tenant's requests). */
static const char *
stored_key(const struct request *rq, const char *key, char out[SCOPED_KEY_LEN + 1])
{
    char in[PRINCIPAL_SUB_MAX + 1 + IDEMPOTENCY_KEY_MAX];

    if (key == NULL || !rq->who.browser)
        return key;
    size_t sub = strlen(rq->who.sub), n = strlen(key);
    memcpy(in, rq->who.sub, sub);
    in[sub] = '\0'; /* a subject has no NUL: the pair reads back one way only */
    memcpy(in + sub + 1, key, n);
    memcpy(out, "b:", 2);
    crypto_sha256_hex(in, sub + 1 + n, out + 2);
    return out;
}

static int
create(struct request *rq, struct db *db, struct meeting *m, const char *key)
{
    char scoped[SCOPED_KEY_LEN + 1];
    struct post_tx t = {.tenant_id = rq->tenant_id,
                        .key = stored_key(rq, key, scoped),
                        .m = m,
                        .series = series_sync_params_of(rq->cfg),
                        .quota = rq->cfg->tenant_meetings_max};
    enum db_status st;
    int ret;

    snprintf(t.location, sizeof(t.location), "/v1/meetings/%s", m->id);
    if (key == NULL && m->recurrence == NULL && t.quota == 0) {
        /* Two statements, not one transaction: a meeting committed without its participants'
         * own rows (a lost connection between them) reminds them with its own reminders. */
        bool own = false;
        st = db_meeting_insert(db, rq->tenant_id, m, &own);
        if (st == DB_ONE_RESULT)
            st = insert_single_own(db, &t, own);
        t.outcome = POST_CREATED;
    } else {
        crypto_sha256_hex(rq->body, rq->body_len, t.request_hash);
        st = db_tx_run(db, post_tx_run, &t);
    }
    if (st == DB_ONE_RESULT ||
        (st == DB_NO_RESULTS && (t.outcome == POST_IN_FLIGHT || t.outcome == POST_QUOTA)))
        ret = reply_outcome(rq, &t);
    else
        ret = http_reply_problem(rq, API_E_DB_UNAVAILABLE, NULL);
    free(t.body);
    db_idem_response_fini(&t.stored);
    db_series_keys_fini(&t.fresh);
    return ret;
}

/* A browser token creates meetings it organizes (its sub), within browser_writes.h's bounds;
 * one limited to some meetings (mtg) creates none. An API key may name any organizer, or none.
 * 0, or -1 after replying. */
static int
organizer(struct request *rq, struct meeting *m, struct codec_errors *errs, int *ret)
{
    enum api_error e;

    if (!rq->who.browser)
        return 0;
    if (rq->who.n_mtg > 0) {
        *ret = http_reply_problem(rq, API_E_INSUFFICIENT_SCOPE,
                                  "a token limited to some meetings (mtg) cannot create meetings");
        return -1;
    }
    if (m->organizer_id != NULL && strcmp(m->organizer_id, rq->who.sub) != 0) {
        snprintf(errs->e[0].field, sizeof errs->e[0].field, "organizer_id");
        snprintf(errs->e[0].message, sizeof errs->e[0].message,
                 "must be the token's subject (or left out)");
        errs->n = 1;
        *ret = http_reply_validation(rq, errs);
        return -1;
    }
    if ((e = browser_writes_check(rq->cfg, NULL, m, errs)) != API_E_NONE) {
        *ret =
            e == API_E_INTERNAL ? http_reply_problem(rq, e, NULL) : http_reply_fields(rq, e, errs);
        return -1;
    }
    free(m->organizer_id);
    if ((m->organizer_id = strdup(rq->who.sub)) == NULL) {
        *ret = http_reply_problem(rq, API_E_INTERNAL, NULL);
        return -1;
    }
    return 0;
}

int
handle_meetings_post(struct request *rq)
{
    struct meeting m;
    struct codec_errors errs = {0};
    const char *key = http_request_header(rq, "Idempotency-Key");
    struct db *db;
    json_t *doc;
    int ret;

    if (handler_no_query(rq, &ret) != 0 || handler_require_type(rq, "application/json", &ret) != 0)
        return ret;
    if (key != NULL && !handler_idempotency_key_valid(key))
        return http_reply_problem(rq, API_E_BAD_HEADER,
                                  "Idempotency-Key must be 1..255 printable ASCII characters");
    if ((doc = handler_parse_body(rq, &ret)) == NULL)
        return ret;
    meeting_init(&m);
    if (codec_meeting_decode(doc, &m, &errs) != API_E_NONE ||
        !handler_series_upcoming(NULL, &m, &errs)) {
        ret = http_reply_validation(rq, &errs);
    } else if (organizer(rq, &m, &errs, &ret) != 0) {
        /* replied */
    } else if (meeting_new_id(m.id) != 0 || (db = http_request_db(rq)) == NULL) {
        ret = http_reply_problem(rq, API_E_DB_UNAVAILABLE, NULL);
    } else {
        m.version = 1;
        m.created_at_ms = m.updated_at_ms = timefmt_now_ms();
        ret = create(rq, db, &m, key);
    }
    json_decref(doc);
    meeting_fini(&m);
    return ret;
}
