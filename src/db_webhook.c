/* db_webhook.c -- the statements of db_webhook.h. The outbox claim leases a batch by id through a
 * small SKIP LOCKED subquery over the due range of outbox_pending_due; a lease is next_attempt_at
 * moved to its end (see db_outbox_claim). Batches keep the index churn per row small (the trap
 * DESIGN.md measured for row-at-a-time claim queues). */
#include "db_webhook.h"

#include <stdlib.h>
#include <string.h>

#include "db_internal.h"

/* clang-format off */
static const char insert_sql[] =
    "INSERT INTO webhooks (id, tenant_id, url, description, secret)"
    " SELECT $1::uuid, $2::bigint, $3, $4, $5"
    " WHERE (SELECT count(*) FROM webhooks WHERE tenant_id = $2::bigint AND deleted_at IS NULL) < $6"
    " RETURNING " DB_MS("created_at");
static const char list_sql[] =
    "SELECT id, url, description, " DB_MS("created_at") " FROM webhooks"
    " WHERE tenant_id = $1::bigint AND deleted_at IS NULL ORDER BY created_at, id";
static const char delete_sql[] =
    "UPDATE webhooks SET deleted_at = now()"
    " WHERE id = $1::uuid AND tenant_id = $2::bigint AND deleted_at IS NULL";
static const char claim_sql[] =
    "UPDATE outbox o SET lease_owner = $1,"
    "  next_attempt_at = now() + $2::bigint * interval '1 millisecond'"
    " FROM (SELECT id FROM outbox WHERE status = 'pending' AND next_attempt_at <= now()"
    "       ORDER BY next_attempt_at, id LIMIT $3::int FOR UPDATE SKIP LOCKED) c, webhooks w"
    " WHERE o.id = c.id AND w.id = o.webhook_id"
    " RETURNING o.id, o.tenant_id, o.meeting_id, o.reminder_id, " DB_MS("o.fire_at") ","
    "  o.attempts, o.payload, w.url, w.secret, (w.deleted_at IS NOT NULL)::int";
static const char delivered_sql[] =
    "UPDATE outbox o SET status = 'delivered', attempts = o.attempts + 1, delivered_at = now(),"
    "  last_status = d.st, last_error = NULL, lease_owner = NULL,"
    "  payload = coalesce(o.payload, d.body)"
    " FROM unnest($1::bigint[], $2::int[], ARRAY(SELECT e FROM json_array_elements_text($3::json)"
    "      WITH ORDINALITY AS t(e, i) ORDER BY i)) AS d(id, st, body)"
    " WHERE o.id = d.id";
static const char failed_sql[] =
    "UPDATE outbox SET attempts = attempts + 1, last_status = NULLIF($2::int, 0), last_error = $3,"
    "  next_attempt_at = now() + $4::bigint * interval '1 millisecond',"
    "  status = CASE WHEN $6::bool OR attempts + 1 >= $5::int THEN 'failed' ELSE 'pending' END,"
    "  lease_owner = NULL, payload = coalesce(payload, $7)"
    " WHERE id = $1::bigint";
static const char release_sql[] =
    "UPDATE outbox SET lease_owner = NULL, next_attempt_at = now()"
    " WHERE id = ANY($1::bigint[]) AND lease_owner = $2 AND status = 'pending'";
static const char renew_sql[] =
    "UPDATE outbox SET next_attempt_at = now() + $3::bigint * interval '1 millisecond'"
    " WHERE id = ANY($1::bigint[]) AND lease_owner = $2 AND status = 'pending'";
static const char deliveries_sql[] =
    "SELECT o.id, o.reminder_id, " DB_MS("o.fire_at") ", o.webhook_id, o.status, o.attempts,"
    "  coalesce(o.last_status, 0), o.last_error, " DB_MS("o.next_attempt_at") ","
    "  coalesce(" DB_MS("o.delivered_at") ", 0), m.id"
    " FROM meetings m LEFT JOIN outbox o ON o.meeting_id = m.id"
    " WHERE m.id = $1::uuid AND m.tenant_id = $2::bigint AND m.deleted_at IS NULL"
    " ORDER BY o.id";
/* clang-format on */

enum db_status
db_webhook_insert(struct db *db, int64_t tenant_id, struct db_webhook *w)
{
    char tenant[DB_I64_BUF], cap[DB_I64_BUF];
    const char *params[] = {w->id,     db_i64(tenant, tenant_id),           w->url, w->description,
                            w->secret, db_i64(cap, WEBHOOKS_PER_TENANT_MAX)};
    PGresult *res;
    enum db_status st = db_exec(db, STMT_WEBHOOK_INSERT, insert_sql, 6, params, &res);

    if (st != DB_ONE_RESULT)
        return st;
    st = PQntuples(res) == 1 ? DB_ONE_RESULT : DB_NO_RESULTS;
    if (st == DB_ONE_RESULT)
        w->created_at_ms = db_get_i64(res, 0, 0);
    PQclear(res);
    return st;
}

static void
copy_id(char out[MEETING_ID_LEN + 1], const PGresult *res, int row, int col)
{
    strncpy(out, PQgetvalue(res, row, col), MEETING_ID_LEN);
    out[MEETING_ID_LEN] = '\0';
}

enum db_status
db_webhook_list(struct db *db, int64_t tenant_id, db_webhook_row_fn fn, void *arg)
{
    char tenant[DB_I64_BUF];
    const char *params[] = {db_i64(tenant, tenant_id)};
    PGresult *res;
    enum db_status st = db_exec(db, STMT_WEBHOOK_LIST, list_sql, 1, params, &res);

    if (st != DB_ONE_RESULT)
        return st;
    for (int row = 0; row < PQntuples(res); row++) {
        struct db_webhook w = {.url = PQgetvalue(res, row, 1),
                               .description =
                                   PQgetisnull(res, row, 2) ? NULL : PQgetvalue(res, row, 2),
                               .created_at_ms = db_get_i64(res, row, 3)};
        copy_id(w.id, res, row, 0);
        fn(arg, &w);
    }
    PQclear(res);
    return DB_ONE_RESULT;
}

enum db_status
db_webhook_delete(struct db *db, int64_t tenant_id, const char *id)
{
    char tenant[DB_I64_BUF];
    const char *params[] = {id, db_i64(tenant, tenant_id)};
    PGresult *res;

    if (!meeting_id_valid(id))
        return DB_NO_RESULTS;
    enum db_status st = db_exec(db, STMT_WEBHOOK_DELETE, delete_sql, 2, params, &res);
    if (st != DB_ONE_RESULT)
        return st;
    st = db_affected(res) == 1 ? DB_ONE_RESULT : DB_NO_RESULTS;
    PQclear(res);
    return st;
}

static int
fill_item(const PGresult *res, int row, struct db_outbox_item *it)
{
    *it = (struct db_outbox_item){.id = db_get_i64(res, row, 0),
                                  .tenant_id = db_get_i64(res, row, 1),
                                  .reminder_id = db_get_i64(res, row, 3),
                                  .fire_at_ms = db_get_i64(res, row, 4),
                                  .attempts = (int)db_get_i64(res, row, 5),
                                  .webhook_deleted = db_get_i64(res, row, 9) != 0};
    copy_id(it->meeting_id, res, row, 2);
    it->payload = db_get_str(res, row, 6);
    it->url = db_get_str(res, row, 7);
    it->secret = db_get_str(res, row, 8);
    return it->url != NULL && it->secret != NULL &&
                   (it->payload != NULL || PQgetisnull(res, row, 6))
               ? 0
               : -1;
}

enum db_status
db_outbox_claim(struct db *db, const char *owner, int64_t lease_ms, struct db_outbox_item *out,
                size_t max, size_t *n)
{
    char lease[DB_I64_BUF], limit[DB_I64_BUF];
    const char *params[] = {
        owner, db_i64(lease, lease_ms),
        db_i64(limit, (int64_t)(max < DB_OUTBOX_CLAIM_MAX ? max : DB_OUTBOX_CLAIM_MAX))};
    PGresult *res;
    enum db_status st = db_exec(db, STMT_OUTBOX_CLAIM, claim_sql, 3, params, &res);

    *n = 0;
    if (st != DB_ONE_RESULT)
        return st;
    for (int row = 0; row < PQntuples(res) && *n < max; row++) {
        if (fill_item(res, row, &out[*n]) != 0) {
            db_outbox_item_fini(&out[*n]); /* out of memory: the lease runs out, retried then */
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
    free(it->url);
    free(it->secret);
    it->payload = it->url = it->secret = NULL;
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

/* "{1,2,3}" of n integers; malloc'ed, NULL when out of memory. */
static char *
int_array(const int64_t *v64, const int *v32, size_t n)
{
    char *s = malloc(n * DB_I64_BUF + 3), num[DB_I64_BUF];
    size_t len = 0;

    if (s == NULL)
        return NULL;
    s[len++] = '{';
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(db_i64(num, v64 != NULL ? v64[i] : v32[i]));
        if (i > 0)
            s[len++] = ',';
        memcpy(s + len, num, l);
        len += l;
    }
    s[len++] = '}';
    s[len] = '\0';
    return s;
}

enum db_status
db_outbox_delivered(struct db *db, const int64_t *ids, const int *status, size_t n,
                    const char *bodies_json)
{
    char *a = int_array(ids, NULL, n), *b = int_array(NULL, status, n);
    const char *params[] = {a, b, bodies_json};
    enum db_status st = DB_HARD_ERROR;

    if (a != NULL && b != NULL)
        st = exec_no_rows(db, STMT_OUTBOX_DELIVERED, delivered_sql, 3, params);
    else
        db_set_err(db, "out of memory");
    free(a);
    free(b);
    return st;
}

/* Runs a statement on rows ids[0..n) held by owner: $1 the ids, $2 owner, $3 extra (when not
 * NULL). */
static enum db_status
exec_on_held(struct db *db, enum db_stmt id, const char *sql, const int64_t *ids, size_t n,
             const char *owner, const char *extra)
{
    char *a = int_array(ids, NULL, n);
    const char *params[] = {a, owner, extra};
    enum db_status st = DB_HARD_ERROR;

    if (a != NULL)
        st = exec_no_rows(db, id, sql, extra != NULL ? 3 : 2, params);
    else
        db_set_err(db, "out of memory");
    free(a);
    return st;
}

enum db_status
db_outbox_release(struct db *db, const char *owner, const int64_t *ids, size_t n)
{
    return exec_on_held(db, STMT_OUTBOX_RELEASE, release_sql, ids, n, owner, NULL);
}

enum db_status
db_outbox_renew(struct db *db, const char *owner, const int64_t *ids, size_t n, int64_t lease_ms)
{
    char ms[DB_I64_BUF];

    return exec_on_held(db, STMT_OUTBOX_RENEW, renew_sql, ids, n, owner, db_i64(ms, lease_ms));
}

enum db_status
db_outbox_failed(struct db *db, int64_t id, int http_status, const char *error, int64_t retry_ms,
                 int max_attempts, bool give_up, const char *body)
{
    char ids[DB_I64_BUF], hs[DB_I64_BUF], retry[DB_I64_BUF], max[DB_I64_BUF];
    const char *params[] = {
        db_i64(ids, id),           db_i64(hs, http_status),    error, db_i64(retry, retry_ms),
        db_i64(max, max_attempts), give_up ? "true" : "false", body};

    return exec_no_rows(db, STMT_OUTBOX_FAILED, failed_sql, 7, params);
}

enum db_status
db_meeting_deliveries(struct db *db, int64_t tenant_id, const char *meeting_id,
                      db_delivery_row_fn fn, void *arg)
{
    char tenant[DB_I64_BUF];
    const char *params[] = {meeting_id, db_i64(tenant, tenant_id)};
    PGresult *res;

    if (!meeting_id_valid(meeting_id))
        return DB_NO_RESULTS;
    enum db_status st = db_exec(db, STMT_MEETING_DELIVERIES, deliveries_sql, 2, params, &res);
    if (st != DB_ONE_RESULT)
        return st;
    st = PQntuples(res) > 0 ? DB_ONE_RESULT : DB_NO_RESULTS;
    for (int row = 0; row < PQntuples(res); row++) {
        if (PQgetisnull(res, row, 0))
            continue; /* the meeting exists and has no outbox rows */
        struct db_delivery d = {.id = db_get_i64(res, row, 0),
                                .reminder_id = db_get_i64(res, row, 1),
                                .fire_at_ms = db_get_i64(res, row, 2),
                                .attempts = (int)db_get_i64(res, row, 5),
                                .last_status = (int)db_get_i64(res, row, 6),
                                .last_error =
                                    PQgetisnull(res, row, 7) ? NULL : PQgetvalue(res, row, 7),
                                .next_attempt_at_ms = db_get_i64(res, row, 8),
                                .delivered_at_ms = db_get_i64(res, row, 9)};
        copy_id(d.webhook_id, res, row, 3);
        strncpy(d.status, PQgetvalue(res, row, 4), sizeof d.status - 1);
        fn(arg, &d);
    }
    PQclear(res);
    return st;
}
