/* db_outbox.c -- the statements of db_outbox.h. The claim takes a batch by id through small
 * SKIP LOCKED subqueries (the due range of outbox_pending_due, a lapsed owner's rows in
 * outbox_held); a lease is the owner's, one row in delivery_owners, so holding a row costs no
 * write after it was taken. Batches keep the index churn per row small (a row-at-a-time SKIP
 * LOCKED claim queue slowed from 9.1k to 2.2k rows/s within 30 s here as dead index entries piled
 * up). Texts travel as JSON arrays (bodies, errors), numbers as array literals, zipped by
 * unnest ... WITH ORDINALITY. */
#include "db_outbox.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_internal.h"

/* clang-format off */
/* Three sources, in this order, up to $2 rows: the rows of owners with no live lease (a dead
 * replica's: first, so that they never wait behind a backlog; looked for only when $5), found by
 * walking the distinct owners of held rows through outbox_held (a loose index scan: one probe per
 * owner, however many rows each holds), but not the rows the caller holds itself ($4: a worker
 * that registered again under a new name still has its old name's requests out, and taking them
 * would send them twice); the rows the owner $1 was given, does not hold yet (not in $4) and
 * that are due (a row it is handed in memory is due DB_FIRE_HANDOVER_GRACE_MS after its fire, so
 * the two never meet), read without a write; then due rows nobody holds, in order along
 * outbox_pending_due. The first and the last become $1's. Each source skips the receivers in $3
 * and the tenants in $6 (those holding their share of the worker's slots: their rows wait here,
 * pending, in order, and nothing about them changes).
 * The rows go back with their target's details: a webhook's URL and secret, a push
 * subscription's endpoint and keys, an email's address; a target that is gone (webhook deleted or
 * missing, subscription removed) comes back with gone = 1, a webhook turned off (migrations/020)
 * with 2, so delivery records the row failed instead of sending. Rows are fetched by key (`= ANY (ARRAY(...))`): joined instead, the planner
 * may hash the whole outbox. */
static const char claim_sql[] =
    "WITH RECURSIVE holders AS ("
    "  (SELECT lease_owner AS o FROM outbox WHERE $5::bool AND status = 'pending'"
    "   AND lease_owner IS NOT NULL ORDER BY lease_owner LIMIT 1)"
    "  UNION ALL SELECT (SELECT lease_owner FROM outbox WHERE status = 'pending'"
    "   AND lease_owner IS NOT NULL AND lease_owner > h.o ORDER BY lease_owner LIMIT 1)"
    "  FROM holders h WHERE h.o IS NOT NULL),"
    " dead AS (SELECT h.o FROM holders h WHERE h.o IS NOT NULL AND h.o <> $1 AND NOT EXISTS"
    "   (SELECT 1 FROM delivery_owners d WHERE d.owner = h.o AND d.lease_until > now()"
    "    AND NOT tocsin_backend_gone(d.backend_pid, d.backend_start))),"
    " orphans AS (SELECT x.id FROM dead d CROSS JOIN LATERAL (SELECT id FROM outbox"
    "   WHERE status = 'pending' AND lease_owner = d.o AND receiver <> ALL ($3::text[])"
    "   AND tenant_id <> ALL ($6::bigint[]) AND id <> ALL ($4::bigint[])"
    "   ORDER BY lease_owner, id LIMIT $2::int FOR UPDATE SKIP LOCKED) x LIMIT $2::int),"
    " mine AS (SELECT id FROM outbox WHERE status = 'pending' AND lease_owner = $1"
    "   AND next_attempt_at <= now()"
    "   AND receiver <> ALL ($3::text[]) AND tenant_id <> ALL ($6::bigint[])"
    "   AND id <> ALL ($4::bigint[])"
    "   ORDER BY lease_owner, id LIMIT $2::int - (SELECT count(*) FROM orphans)),"
    " due AS (SELECT id FROM outbox WHERE status = 'pending' AND lease_owner IS NULL"
    "   AND next_attempt_at <= now() AND receiver <> ALL ($3::text[])"
    "   AND tenant_id <> ALL ($6::bigint[])"
    "   ORDER BY next_attempt_at, id LIMIT $2::int FOR UPDATE SKIP LOCKED),"
    " c AS (SELECT id FROM orphans UNION ALL (SELECT id FROM due"
    "   LIMIT $2::int - (SELECT count(*) FROM mine) - (SELECT count(*) FROM orphans))),"
    " l AS (UPDATE outbox o SET lease_owner = $1 WHERE o.id = ANY (ARRAY(SELECT id FROM c))"
    "   RETURNING o.*),"
    " r AS (SELECT l.*, false AS given FROM l UNION ALL"
    "   SELECT o.*, true FROM outbox o WHERE o.id = ANY (ARRAY(SELECT id FROM mine)))"
    " SELECT r.id, r.tenant_id, r.meeting_id, r.reminder_id, " DB_MS("r.fire_at") ", r.attempts,"
    "  r.payload, r.channel, r.receiver, coalesce(w.url, p.endpoint), coalesce(w.secret, ''),"
    "  CASE r.channel WHEN 'webhook' THEN CASE WHEN w.id IS NULL OR w.deleted_at IS NOT NULL"
    "   THEN 1 WHEN w.disabled_at IS NOT NULL THEN 2 ELSE 0 END"
    "                 WHEN 'push' THEN (p.id IS NULL)::int ELSE 0 END,"
    "  p.p256dh, p.auth, r.recipient, r.address, " DB_MS("p.expires_at") ", r.target, r.given,"
    "  CASE WHEN w.previous_until > now() THEN w.previous_secret END"
    " FROM r LEFT JOIN webhooks w ON w.id = r.webhook_id"
    " LEFT JOIN push_subscriptions p ON p.id = r.push_subscription_id";
/* The owners nobody will miss go with each registration: lapsed an hour ago, holding nothing.
 * On a direct connection ($3) the lease names the backend that took it (migrations/015): it ends
 * when that backend does, and only that backend renews it, so a worker whose connection was
 * replaced learns that its rows may be another's. */
static const char owner_register_sql[] =
    "WITH gone AS (DELETE FROM delivery_owners d"
    "  WHERE d.lease_until < now() - interval '1 hour' AND NOT EXISTS (SELECT 1 FROM outbox o"
    "   WHERE o.status = 'pending' AND o.lease_owner = d.owner))"
    " INSERT INTO delivery_owners (owner, lease_until, backend_pid, backend_start)"
    " VALUES ($1, now() + $2::bigint * interval '1 millisecond',"
    "  " DB_BACKEND_PID("$3") ", " DB_BACKEND_START("$3") ")"
    " ON CONFLICT (owner) DO UPDATE SET lease_until = excluded.lease_until,"
    "  backend_pid = excluded.backend_pid, backend_start = excluded.backend_start";
/* A renewal must find the lease alive by the clock as it runs (not now(), the statement's start)
 * and by a margin, DB_OUTBOX_RENEW_MARGIN_MS: one that stalled past the lapse, or committed just
 * after it, would tell the worker its rows are still its own while another worker that saw the
 * lease lapse takes its queued rows and sends them too. */
static const char owner_renew_sql[] =
    "UPDATE delivery_owners SET lease_until = now() + $2::bigint * interval '1 millisecond'"
    " WHERE owner = $1 AND lease_until > clock_timestamp() + interval '"
    DB_OUTBOX_RENEW_MARGIN_TEXT " milliseconds'"
    "  AND backend_pid IS NOT DISTINCT FROM " DB_BACKEND_PID("$3")
    "  AND backend_start IS NOT DISTINCT FROM " DB_BACKEND_START("$3");
/* A handed row the owner never took is due at once too. */
static const char owner_leave_sql[] =
    "WITH back AS (UPDATE outbox SET lease_owner = NULL,"
    "  next_attempt_at = least(next_attempt_at, now())"
    "  WHERE status = 'pending' AND lease_owner = $1 RETURNING 1)"
    " DELETE FROM delivery_owners WHERE owner = $1";
/* A delivered row keeps no body it did not have: only a retry needs the bytes again. A row
 * already recorded delivered stays as it was: a worker whose lease ended while its request was
 * out and the worker that took the row over both send it, and the first answer is the record,
 * whoever holds the row (the ids returned are the rows this statement recorded, which metrics
 * count). A row recorded failed (the last attempt of the worker that took it over, or its meeting
 * deleted) becomes delivered when such a late answer says it was. A failure counts only from the
 * row's holder ($8): the holder's own answer is still to come. Both statements write the attempt
 * of each row they recorded into delivery_attempts (migrations/020), numbered by the row's new
 * attempt count, and delete what falls past the DB_OUTBOX_ATTEMPTS_KEPT newest: the outcome and
 * its history never disagree, and a row retried without end keeps a bounded history. */
#define ATTEMPTS_TRIM                                                                             \
    " t AS (DELETE FROM delivery_attempts x USING u WHERE u.attempts > "                           \
    DB_OUTBOX_ATTEMPTS_KEPT_TEXT " AND x.outbox_id = u.id"                                        \
    "  AND x.n <= u.attempts - " DB_OUTBOX_ATTEMPTS_KEPT_TEXT ")"
static const char delivered_sql[] =
    "WITH u AS (UPDATE outbox o SET status = 'delivered', attempts = o.attempts + 1,"
    "  delivered_at = now(), last_status = d.st, last_error = NULL, lease_owner = NULL"
    " FROM unnest($1::bigint[], $2::int[], $3::bigint[]) AS d(id, st, ms)"
    " WHERE o.id = d.id AND " DB_FILTER("o.status <> 'delivered'")
    " RETURNING o.id, o.webhook_id, o.attempts, d.st, d.ms),"
    " a AS (INSERT INTO delivery_attempts (outbox_id, webhook_id, n, outcome, http_status,"
    "  duration_ms, instance) SELECT id, webhook_id, attempts, 'delivered', NULLIF(st, 0),"
    "  least(greatest(ms, 0), 2147483647), $4 FROM u),"
    ATTEMPTS_TRIM
    " SELECT id FROM u";
static const char failed_sql[] =
    "WITH u AS (UPDATE outbox o SET attempts = o.attempts + 1, last_status = NULLIF(f.st, 0),"
    "  last_error = f.err, next_attempt_at = now() + f.retry * interval '1 millisecond',"
    "  status = CASE WHEN f.give_up OR o.attempts + 1 >= $7::int THEN 'failed' ELSE 'pending' END,"
    "  lease_owner = NULL, payload = coalesce(o.payload, f.body)"
    " FROM (SELECT a.id, a.st, a.retry, a.give_up, a.ms, e.err, b.body"
    "       FROM unnest($1::bigint[], $2::int[], $3::bigint[], $4::bool[], $9::bigint[])"
    "            WITH ORDINALITY AS a(id, st, retry, give_up, ms, i)"
    "       JOIN json_array_elements_text($5::json) WITH ORDINALITY AS e(err, i) USING (i)"
    "       JOIN json_array_elements_text($6::json) WITH ORDINALITY AS b(body, i) USING (i)) f"
    " WHERE o.id = f.id AND " DB_FILTER("o.status = 'pending' AND o.lease_owner = $8")
    " RETURNING o.id, o.webhook_id, o.status, o.attempts, f.st, f.ms, f.err),"
    " a AS (INSERT INTO delivery_attempts (outbox_id, webhook_id, n, outcome, http_status,"
    "  duration_ms, error, instance) SELECT id, webhook_id, attempts, 'failed', NULLIF(st, 0),"
    "  least(greatest(ms, 0), 2147483647), left(err, 500), $10 FROM u),"
    ATTEMPTS_TRIM
    " SELECT id, status FROM u";
static const char release_sql[] =
    "UPDATE outbox SET lease_owner = NULL,"
    "  next_attempt_at = now() + $3::bigint * interval '1 millisecond'"
    " WHERE id = ANY($1::bigint[]) AND " DB_FILTER("lease_owner = $2 AND status = 'pending'");
/* Rows given to owner $1 for the receivers in $2 (their circuits are open in that worker) go to
 * anyone, as they are: only once due, like the lease statement's given rows, so that none can
 * still be in a handover the owner may take (DB_FIRE_HANDOVER_GRACE_MS), and never one the owner
 * holds ($3: a request out before the circuit opened). Along outbox_held, the owner's rows. */
static const char pass_on_sql[] =
    "WITH u AS (UPDATE outbox SET lease_owner = NULL"
    "  WHERE status = 'pending' AND lease_owner = $1 AND next_attempt_at <= now()"
    "  AND receiver = ANY ($2::text[]) AND id <> ALL ($3::bigint[]) RETURNING 1)"
    " SELECT count(*) FROM u";
/* Counted along the partial indexes outbox_pending_due and outbox_held: the cost is the backlog,
 * not the history. */
static const char backlog_sql[] =
    "SELECT (SELECT count(*) FROM outbox WHERE status = 'pending' AND lease_owner IS NULL)"
    " + (SELECT count(*) FROM outbox WHERE status = 'pending' AND lease_owner IS NOT NULL)";
/* How long the earliest due row no worker holds has been due, by the database's clock: the first
 * entry of outbox_pending_due, one index entry however long the backlog (0.3 ms at a million
 * pending rows, where the count above takes 0.4 s). In order (no sequential scan, a generic plan
 * that walks the index): a statement without parameters keeps the plan it got first, and one
 * made on an empty outbox read the whole table, or the whole index under min(), once it had grown
 * (0.1 to 0.4 s at 100,000 pending rows). The age since a row was written would need an index of
 * pending rows by created_at, which every write would pay for. */
static const char oldest_due_sql[] =
    "SELECT coalesce((SELECT greatest(0, floor(extract(epoch FROM now() - next_attempt_at) * 1000))"
    " FROM outbox WHERE status = 'pending' AND lease_owner IS NULL ORDER BY next_attempt_at"
    " LIMIT 1), 0)::bigint";
/* A meeting's rows, found through its reminders (outbox_occurrence_target leads with the
 * reminder): a single meeting's along reminders_single, a series' along reminders_occurrence, the
 * participants' own along reminders_own, one partial index each, hence the three branches
 * (migrations/013, 029). */
static const char deliveries_sql[] =
    "SELECT o.id, o.reminder_id, " DB_MS("o.fire_at") ", o.webhook_id, o.status, o.attempts,"
    "  coalesce(o.last_status, 0), o.last_error, " DB_MS("o.next_attempt_at") ","
    "  coalesce(" DB_MS("o.delivered_at") ", 0), m.id, o.channel, o.recipient"
    " FROM meetings m LEFT JOIN ("
    "  (SELECT r.id FROM reminders r WHERE r.meeting_id = $1::uuid AND r.original_start IS NULL"
    "    AND r.participant IS NULL"
    "   UNION ALL SELECT r.id FROM reminders r WHERE r.meeting_id = $1::uuid"
    "    AND r.original_start IS NOT NULL AND r.participant IS NULL"
    "   UNION ALL SELECT r.id FROM reminders r WHERE r.meeting_id = $1::uuid"
    "    AND r.participant IS NOT NULL) r"
    "  JOIN outbox o ON o.reminder_id = r.id AND o.id > $3::bigint) ON true"
    " WHERE m.id = $1::uuid AND m.tenant_id = $2::bigint AND m.deleted_at IS NULL"
    " ORDER BY o.id LIMIT $4::int + 1";
/* clang-format on */

static void
copy_id(char out[MEETING_ID_LEN + 1], const PGresult *res, int row, int col)
{
    strncpy(out, PQgetvalue(res, row, col), MEETING_ID_LEN);
    out[MEETING_ID_LEN] = '\0';
}

static int
fill_item(const PGresult *res, int row, struct db_outbox_item *it)
{
    *it = (struct db_outbox_item){.id = db_get_i64(res, row, 0),
                                  .tenant_id = db_get_i64(res, row, 1),
                                  .reminder_id = db_get_i64(res, row, 3),
                                  .fire_at_ms = db_get_i64(res, row, 4),
                                  .attempts = (int)db_get_i64(res, row, 5),
                                  .channel = meeting_channel_parse(PQgetvalue(res, row, 7)),
                                  .target_gone = db_get_i64(res, row, 11) != 0,
                                  .target_disabled = db_get_i64(res, row, 11) == 2,
                                  .expires_at_ms = db_get_i64(res, row, 16),
                                  .given = PQgetvalue(res, row, 18)[0] == 't'};
    copy_id(it->meeting_id, res, row, 2);
    if (db_get_opt_str(res, row, 6, &it->payload) != 0 ||
        db_get_opt_str(res, row, 8, &it->receiver) != 0 ||
        db_get_opt_str(res, row, 9, &it->url) != 0 ||
        db_get_opt_str(res, row, 10, &it->secret) != 0 ||
        db_get_opt_str(res, row, 12, &it->p256dh) != 0 ||
        db_get_opt_str(res, row, 13, &it->auth) != 0 ||
        db_get_opt_str(res, row, 14, &it->recipient) != 0 ||
        db_get_opt_str(res, row, 15, &it->address) != 0 ||
        db_get_opt_str(res, row, 17, &it->target) != 0 ||
        db_get_opt_str(res, row, 19, &it->secret_old) != 0)
        return -1;
    return it->receiver != NULL && it->channel != 0 ? 0 : -1;
}

/* A PostgreSQL text[] literal of v[0..n): each element double-quoted, '"' and '\\' escaped;
 * malloc'ed, NULL when out of memory. */
static char *
text_array(const char *const *v, size_t n)
{
    size_t cap = 3;
    for (size_t i = 0; i < n; i++)
        cap += 2 * strlen(v[i]) + 3;
    char *s = malloc(cap);
    size_t len = 0;

    if (s == NULL)
        return NULL;
    s[len++] = '{';
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            s[len++] = ',';
        s[len++] = '"';
        for (const char *p = v[i]; *p != '\0'; p++) {
            if (*p == '"' || *p == '\\')
                s[len++] = '\\';
            s[len++] = *p;
        }
        s[len++] = '"';
    }
    s[len++] = '}';
    s[len] = '\0';
    return s;
}

enum db_status
db_outbox_claim(struct db *db, const struct db_outbox_claim_args *a, struct db_outbox_item *out,
                size_t max, size_t *n)
{
    char limit[DB_I64_BUF];
    char *ex = text_array(a->exclude, a->n_exclude < DB_OUTBOX_EXCLUDE_MAX ? a->n_exclude
                                                                           : DB_OUTBOX_EXCLUDE_MAX);
    char *hd = db_array_i64(a->held, a->n_held);
    char *tn = db_array_i64(
        a->tenants, a->n_tenants < DB_OUTBOX_EXCLUDE_MAX ? a->n_tenants : DB_OUTBOX_EXCLUDE_MAX);
    const char *params[] = {
        a->owner,
        db_i64(limit, (int64_t)(max < DB_OUTBOX_CLAIM_MAX ? max : DB_OUTBOX_CLAIM_MAX)),
        ex,
        hd,
        a->orphans ? "true" : "false",
        tn};
    PGresult *res;
    enum db_status st = DB_HARD_ERROR;

    *n = 0;
    /* In order: statistics describe the outbox at rest, a few rows due; planned on them, the
     * due rows were read whole through a bitmap and sorted on every lease, 50,000 of them each
     * time in a burst (5.7 ms a lease on average here, against 2.0 ms walking
     * outbox_pending_due in order and stopping at the limit). */
    if (ex != NULL && hd != NULL && tn != NULL)
        st = db_exec_in_order(db, STMT_OUTBOX_CLAIM, claim_sql, 6, params, DB_PLAN_GENERIC, &res);
    else
        db_set_err(db, "out of memory");
    free(ex);
    free(hd);
    free(tn);
    if (st != DB_ONE_RESULT)
        return st;
    for (int row = 0; row < PQntuples(res) && *n < max; row++) {
        if (fill_item(res, row, &out[*n]) != 0) {
            /* Out of memory, or a channel this version does not know: the row stays with this
             * owner until it lapses or leaves, and is taken again then. */
            db_outbox_item_fini(&out[*n]);
            continue;
        }
        (*n)++;
    }
    PQclear(res);
    return DB_ONE_RESULT;
}

void
db_outbox_item_fini(struct db_outbox_item *it)
{
    free(it->payload);
    free(it->receiver);
    free(it->url);
    free(it->secret);
    free(it->secret_old);
    free(it->p256dh);
    free(it->auth);
    free(it->recipient);
    free(it->address);
    free(it->target);
    memset(it, 0, sizeof *it);
}

static enum db_status
exec_no_rows(struct db *db, enum db_stmt id, const char *sql, int n, const char *const *params)
{
    PGresult *res;
    enum db_status st = db_exec(db, id, sql, n, params, &res);

    if (st == DB_ONE_RESULT)
        PQclear(res);
    return st;
}

enum db_status
db_outbox_owner_register(struct db *db, const char *owner, int64_t lease_ms)
{
    char ms[DB_I64_BUF];
    const char *params[] = {owner, db_i64(ms, lease_ms), db_tracks_backend()};

    return exec_no_rows(db, STMT_OUTBOX_OWNER_REGISTER, owner_register_sql, 3, params);
}

enum db_status
db_outbox_owner_renew(struct db *db, const char *owner, int64_t lease_ms)
{
    char ms[DB_I64_BUF];
    const char *params[] = {owner, db_i64(ms, lease_ms), db_tracks_backend()};

    return db_exec_one_row(db, STMT_OUTBOX_OWNER_RENEW, owner_renew_sql, 3, params);
}

enum db_status
db_outbox_owner_leave(struct db *db, const char *owner)
{
    const char *params[] = {owner};

    return exec_no_rows(db, STMT_OUTBOX_OWNER_LEAVE, owner_leave_sql, 1, params);
}

/* Elements for db_array: an int array, and the columns of a failure array. */
static const char *
int_elem(const void *arg, size_t i, char buf[DB_I64_BUF])
{
    return db_i64(buf, ((const int *)arg)[i]);
}

static const char *
failure_id(const void *arg, size_t i, char buf[DB_I64_BUF])
{
    return db_i64(buf, ((const struct db_outbox_failure *)arg)[i].id);
}

static const char *
failure_status(const void *arg, size_t i, char buf[DB_I64_BUF])
{
    return db_i64(buf, ((const struct db_outbox_failure *)arg)[i].http_status);
}

static const char *
failure_retry(const void *arg, size_t i, char buf[DB_I64_BUF])
{
    return db_i64(buf, ((const struct db_outbox_failure *)arg)[i].retry_ms);
}

static const char *
failure_give_up(const void *arg, size_t i, char buf[DB_I64_BUF])
{
    (void)buf;
    return ((const struct db_outbox_failure *)arg)[i].give_up ? "t" : "f";
}

enum db_status
db_outbox_delivered(struct db *db, const int64_t *ids, const int *status,
                    const int64_t *duration_ms, size_t n, const char *instance, bool *recorded)
{
    char *a = db_array_i64(ids, n), *b = db_array(n, int_elem, status),
         *c = db_array_i64(duration_ms, n);
    const char *params[] = {a, b, c, instance};
    enum db_status st = DB_HARD_ERROR;
    PGresult *res;

    memset(recorded, 0, n * sizeof *recorded);
    if (a != NULL && b != NULL && c != NULL)
        st = db_exec(db, STMT_OUTBOX_DELIVERED, delivered_sql, 4, params, &res);
    else
        db_set_err(db, "out of memory");
    free(a);
    free(b);
    free(c);
    if (st != DB_ONE_RESULT)
        return st;
    for (int row = 0; row < PQntuples(res); row++) {
        int64_t id = db_get_i64(res, row, 0);
        for (size_t i = 0; i < n; i++)
            recorded[i] = recorded[i] || ids[i] == id;
    }
    PQclear(res);
    return st;
}

static const char *
failure_duration(const void *arg, size_t i, char buf[DB_I64_BUF])
{
    return db_i64(buf, ((const struct db_outbox_failure *)arg)[i].duration_ms);
}

/* The five number columns of failures f[0..n) as array literals into cols; 0 or -1. */
static int
failure_columns(const struct db_outbox_failure *f, size_t n, char *cols[5])
{
    cols[0] = db_array(n, failure_id, f);
    cols[1] = db_array(n, failure_status, f);
    cols[2] = db_array(n, failure_retry, f);
    cols[3] = db_array(n, failure_give_up, f);
    cols[4] = db_array(n, failure_duration, f);
    return cols[0] && cols[1] && cols[2] && cols[3] && cols[4] ? 0 : -1;
}

enum db_status
db_outbox_failed(struct db *db, const char *owner, const char *instance,
                 struct db_outbox_failure *f, size_t n, const char *errors_json,
                 const char *bodies_json, int max_attempts, size_t *n_failed)
{
    char *cols[5] = {NULL, NULL, NULL, NULL, NULL}, max[DB_I64_BUF];
    PGresult *res = NULL;
    enum db_status st = DB_HARD_ERROR;

    *n_failed = 0;
    if (failure_columns(f, n, cols) == 0) {
        const char *params[] = {
            cols[0], cols[1], cols[2], cols[3], errors_json, bodies_json, db_i64(max, max_attempts),
            owner,   cols[4], instance};
        st = db_exec(db, STMT_OUTBOX_FAILED, failed_sql, 10, params, &res);
    } else {
        db_set_err(db, "out of memory");
    }
    for (size_t i = 0; i < n; i++)
        f[i].recorded = false;
    for (int row = 0; st == DB_ONE_RESULT && row < PQntuples(res); row++) {
        int64_t id = db_get_i64(res, row, 0);
        for (size_t i = 0; i < n; i++)
            f[i].recorded |= f[i].id == id;
        *n_failed += strcmp(PQgetvalue(res, row, 1), "failed") == 0;
    }
    if (st == DB_ONE_RESULT)
        PQclear(res);
    for (size_t i = 0; i < 5; i++)
        free(cols[i]);
    return st;
}

/* Runs a statement on rows ids[0..n) held by owner: $1 the ids, $2 owner, $3 milliseconds. */
static enum db_status
exec_on_held(struct db *db, enum db_stmt id, const char *sql, const int64_t *ids, size_t n,
             const char *owner, int64_t ms)
{
    char *a = db_array_i64(ids, n), m[DB_I64_BUF];
    const char *params[] = {a, owner, db_i64(m, ms)};
    enum db_status st = DB_HARD_ERROR;

    if (a != NULL)
        st = exec_no_rows(db, id, sql, 3, params);
    else
        db_set_err(db, "out of memory");
    free(a);
    return st;
}

enum db_status
db_outbox_release(struct db *db, const char *owner, const int64_t *ids, size_t n, int64_t delay_ms)
{
    return exec_on_held(db, STMT_OUTBOX_RELEASE, release_sql, ids, n, owner, delay_ms);
}

enum db_status
db_outbox_pass_on(struct db *db, const char *owner, const char *const *receivers, size_t n,
                  const int64_t *held, size_t n_held, int64_t *passed)
{
    char *rc = text_array(receivers, n), *hd = db_array_i64(held, n_held);
    const char *params[] = {owner, rc, hd};
    enum db_status st = DB_HARD_ERROR;

    if (rc != NULL && hd != NULL)
        st = db_exec_i64(db, STMT_OUTBOX_PASS_ON, pass_on_sql, 3, params, passed);
    else
        db_set_err(db, "out of memory");
    free(rc);
    free(hd);
    return st;
}

enum db_status
db_outbox_backlog(struct db *db, int64_t *n)
{
    return db_exec_i64(db, STMT_OUTBOX_BACKLOG, backlog_sql, 0, NULL, n); /* count(*): one row */
}

enum db_status
db_outbox_oldest_due(struct db *db, int64_t *ms)
{
    PGresult *res;
    enum db_status st = db_exec_in_order(db, STMT_OUTBOX_OLDEST_DUE, oldest_due_sql, 0, NULL,
                                         DB_PLAN_GENERIC, &res);

    if (st != DB_ONE_RESULT)
        return st;
    st = PQntuples(res) > 0 ? DB_ONE_RESULT : DB_NO_RESULTS; /* coalesce: always one row */
    if (st == DB_ONE_RESULT)
        *ms = db_get_i64(res, 0, 0);
    PQclear(res);
    return st;
}

void
db_outbox_delivery_row(const PGresult *res, int row, struct db_delivery *d)
{
    *d = (struct db_delivery){
        .id = db_get_i64(res, row, 0),
        .reminder_id = db_get_i64(res, row, 1),
        .fire_at_ms = db_get_i64(res, row, 2),
        .attempts = (int)db_get_i64(res, row, 5),
        .last_status = (int)db_get_i64(res, row, 6),
        .last_error = PQgetisnull(res, row, 7) ? NULL : PQgetvalue(res, row, 7),
        .next_attempt_at_ms = db_get_i64(res, row, 8),
        .delivered_at_ms = db_get_i64(res, row, 9),
        .channel = meeting_channel_parse(PQgetvalue(res, row, 11)),
        .recipient = PQgetisnull(res, row, 12) ? NULL : PQgetvalue(res, row, 12)};
    if (!PQgetisnull(res, row, 3))
        copy_id(d->webhook_id, res, row, 3);
    if (!PQgetisnull(res, row, 10))
        copy_id(d->meeting_id, res, row, 10);
    strncpy(d->status, PQgetvalue(res, row, 4), sizeof d->status - 1);
}

enum db_status
db_outbox_deliveries(struct db *db, int64_t tenant_id, const char *meeting_id,
                     struct db_delivery_page *page, db_delivery_row_fn fn, void *arg)
{
    char tenant[DB_I64_BUF], after[DB_I64_BUF], limit[DB_I64_BUF];
    const char *params[] = {meeting_id, db_i64(tenant, tenant_id), db_i64(after, page->after_id),
                            db_i64(limit, (int64_t)page->limit)};
    PGresult *res;

    page->more = false;
    if (!meeting_id_valid(meeting_id))
        return DB_NO_RESULTS;
    enum db_status st = db_exec(db, STMT_OUTBOX_DELIVERIES, deliveries_sql, 4, params, &res);
    if (st != DB_ONE_RESULT)
        return st;
    st = PQntuples(res) > 0 ? DB_ONE_RESULT : DB_NO_RESULTS;
    page->more = (size_t)PQntuples(res) > page->limit;
    for (int row = 0; row < PQntuples(res) && (size_t)row < page->limit; row++) {
        if (PQgetisnull(res, row, 0))
            continue; /* the meeting exists and has no outbox rows */
        struct db_delivery d;
        db_outbox_delivery_row(res, row, &d);
        fn(arg, &d);
    }
    PQclear(res);
    return st;
}
