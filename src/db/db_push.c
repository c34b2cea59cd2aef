/* db_push.c -- the statements of db_push.h. */
#include "db_push.h"

#include <stdio.h>
#include <string.h>

#include "db_internal.h"

/* clang-format off */
static const char key_get_sql[] =
    "SELECT private_key, public_key FROM vapid_keys WHERE tenant_id = $1::bigint";
static const char key_put_sql[] =
    "INSERT INTO vapid_keys (tenant_id, private_key, public_key) VALUES ($1::bigint, $2, $3)"
    " ON CONFLICT (tenant_id) DO NOTHING";
static const char sub_same_sql[] =
    "UPDATE push_subscriptions SET origin = $4, p256dh = $5, auth = $6,"
    "  expires_at = " DB_TS("nullif($7::bigint, 0)")
    " WHERE tenant_id = $1::bigint AND endpoint = $2 AND participant_id = $3 RETURNING id";
/* The browser now belongs to another participant (another user signed in on it); and the
 * participant's expired subscriptions go (a browser re-subscribes with a new endpoint when its
 * subscription expires: they would pile up). */
static const char sub_take_sql[] =
    "DELETE FROM push_subscriptions WHERE tenant_id = $1::bigint"
    " AND (endpoint = $2 OR (participant_id = $3 AND expires_at <= now()))";
/* Live ones only: expired subscriptions are never sent to and must not hold the participant's
 * places. */
static const char sub_count_sql[] =
    "SELECT count(*) FROM push_subscriptions WHERE tenant_id = $1::bigint AND participant_id = $2"
    " AND (expires_at IS NULL OR expires_at > now())";
static const char sub_insert_sql[] =
    "INSERT INTO push_subscriptions (id, tenant_id, participant_id, endpoint, origin, p256dh, auth,"
    "                                expires_at)"
    " VALUES ($1::uuid, $2::bigint, $3, $4, $5, $6, $7, " DB_TS("nullif($8::bigint, 0)") ")";
static const char sub_delete_sql[] =
    "DELETE FROM push_subscriptions"
    " WHERE id = $3::uuid AND tenant_id = $1::bigint AND participant_id = $2";
static const char sub_gone_sql[] = "DELETE FROM push_subscriptions WHERE id = $1::uuid";
/* clang-format on */

enum db_status
db_push_vapid_key_get(struct db *db, int64_t tenant_id, struct db_push_vapid_key *k)
{
    char t[DB_I64_BUF];
    const char *params[] = {db_i64(t, tenant_id)};
    PGresult *res;
    enum db_status st = db_exec(db, STMT_VAPID_KEY_GET, key_get_sql, 1, params, &res);

    if (st != DB_ONE_RESULT)
        return st;
    st = PQntuples(res) == 1 ? DB_ONE_RESULT : DB_NO_RESULTS;
    if (st == DB_ONE_RESULT) {
        snprintf(k->private_key, sizeof k->private_key, "%s", PQgetvalue(res, 0, 0));
        snprintf(k->public_key, sizeof k->public_key, "%s", PQgetvalue(res, 0, 1));
    }
    PQclear(res);
    return st;
}

enum db_status
db_push_vapid_key_put(struct db *db, int64_t tenant_id, struct db_push_vapid_key *k)
{
    char t[DB_I64_BUF];
    const char *params[] = {db_i64(t, tenant_id), k->private_key, k->public_key};
    PGresult *res;
    enum db_status st = db_exec(db, STMT_VAPID_KEY_PUT, key_put_sql, 3, params, &res);

    if (st != DB_ONE_RESULT)
        return st;
    PQclear(res);
    st = db_push_vapid_key_get(db, tenant_id, k);
    return st == DB_NO_RESULTS ? DB_HARD_ERROR : st;
}

struct put_tx {
    int64_t tenant_id;
    struct db_push_subscription *s;
};

static enum db_status
put_tx_run(struct db *db, void *arg)
{
    struct put_tx *t = arg;
    struct db_push_subscription *s = t->s;
    char tid[DB_I64_BUF], exp[DB_I64_BUF];
    const char *same[] = {
        db_i64(tid, t->tenant_id),    s->endpoint, s->participant_id, s->origin, s->p256dh, s->auth,
        db_i64(exp, s->expires_at_ms)};
    const char *count[] = {tid, s->participant_id};
    const char *ins[] = {s->id,     tid,       s->participant_id, s->endpoint,
                         s->origin, s->p256dh, s->auth,           exp};
    PGresult *res;
    enum db_status st = db_tenant_lock(db, t->tenant_id);

    if (st == DB_ONE_RESULT)
        st = db_exec(db, STMT_PUSH_SUB_SAME, sub_same_sql, 7, same, &res);
    if (st != DB_ONE_RESULT)
        return st;
    if (PQntuples(res) == 1) { /* the same browser subscribed again: keep its id */
        snprintf(s->id, sizeof s->id, "%s", PQgetvalue(res, 0, 0));
        s->replaced = true;
        PQclear(res);
        return DB_ONE_RESULT;
    }
    PQclear(res);
    /* The limit first: a refused request commits (DB_NO_RESULTS) and must change nothing, not
     * take the browser from its participant. A row the take removes is not this participant's
     * (sub_same found none), so the count is the same before and after it. */
    int64_t n = 0;
    if ((st = db_exec_i64(db, STMT_PUSH_SUB_COUNT, sub_count_sql, 2, count, &n)) != DB_ONE_RESULT)
        return st;
    if (n >= PUSH_SUBSCRIPTIONS_PER_PARTICIPANT_MAX)
        return DB_NO_RESULTS;
    if ((st = db_exec(db, STMT_PUSH_SUB_TAKE, sub_take_sql, 3, same, &res)) != DB_ONE_RESULT)
        return st;
    PQclear(res);
    if ((st = db_exec(db, STMT_PUSH_SUB_INSERT, sub_insert_sql, 8, ins, &res)) == DB_ONE_RESULT)
        PQclear(res);
    return st;
}

enum db_status
db_push_subscription_put(struct db *db, int64_t tenant_id, struct db_push_subscription *s)
{
    struct put_tx t = {tenant_id, s};

    return db_tx_run(db, put_tx_run, &t);
}

enum db_status
db_push_subscription_delete(struct db *db, int64_t tenant_id, const char *participant_id,
                            const char *id)
{
    char t[DB_I64_BUF];
    const char *params[] = {db_i64(t, tenant_id), participant_id, id};

    if (!meeting_id_valid(id))
        return DB_NO_RESULTS;
    return db_exec_one_row(db, STMT_PUSH_SUB_DELETE, sub_delete_sql, 3, params);
}

enum db_status
db_push_subscription_gone(struct db *db, const char *id)
{
    const char *params[] = {id};
    PGresult *res;

    if (!meeting_id_valid(id))
        return DB_NO_RESULTS;
    enum db_status st = db_exec(db, STMT_PUSH_SUB_GONE, sub_gone_sql, 1, params, &res);
    if (st == DB_ONE_RESULT)
        PQclear(res);
    return st;
}
