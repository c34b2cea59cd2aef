/* db_stats.c -- the statement of db_stats.h. Each count is a walk of an index bounded by the
 * tenant and the window: pending outbox rows along outbox_tenant_status (migrations/020), due and
 * fired reminders along reminders_tenant_pending and reminders_tenant_fired (migrations/021),
 * delivered and failed rows along outbox_tenant_status, a failed row's outcome time being its
 * last attempt's (delivery_attempts_outbox, probed by key). Skipped rows (a participant's
 * preferences, migrations/028) are outcomes at their writing: their tenant's range of
 * outbox_tenant_status, kept when written within the window. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_internal.h"
#include "db_stats.h"

struct stats_run {
    const char *v[4];
    PGresult *res;
};

#define TS(t) "to_char((" t ") AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
#define PCT(p, col) "percentile_cont(" p ") WITHIN GROUP (ORDER BY " col ")"
/* The bucket of a time inside the window: [t0 + i * $3 s, t0 + (i + 1) * $3 s) (extract is
 * numeric, so exact). */
#define BUCKET(at) "floor(extract(epoch FROM " at " - w.t0) / $3::int)::int"

/* The statement reads better laid out as SQL than as clang-format would wrap it. */
/* clang-format off */

/* f: the window's fired reminders; d: its outcomes, delivered rows, skipped ones (no lateness)
 * and failed ones (each by its last attempt, probed by key for the tenant's failed rows: a walk of the window's attempts of
 * every tenant read 800,000 rows on bench/deliveries.sh's seed); fb, db_, dc: each set grouped
 * once by bucket or channel, where a subquery per bucket and channel read d again each time
 * (24 buckets x 5 of them: 1.8 s for 24 h of a tenant's 80,000 deliveries). */
static const char stats_sql[] =
    "WITH w AS (SELECT now() AS t1, now() - $2::int * interval '1 second' AS t0),"
    " f AS (SELECT r.fired_at AS at, extract(epoch FROM r.fired_at - r.fire_at) * 1000 AS late"
    "  FROM reminders r, w WHERE r.tenant_id = $1::bigint AND r.status = 'fired'"
    "  AND r.fired_at >= w.t0 AND r.fired_at < w.t1),"
    " d AS (SELECT o.channel, 'delivered' AS outcome, o.delivered_at AS at,"
    "  extract(epoch FROM o.delivered_at - o.fire_at) * 1000 AS late"
    "  FROM outbox o, w WHERE o.tenant_id = $1::bigint AND o.status = 'delivered'"
    "  AND o.delivered_at >= w.t0 AND o.delivered_at < w.t1"
    "  UNION ALL SELECT o.channel, 'failed', a.at, extract(epoch FROM a.at - o.fire_at) * 1000"
    "  FROM w, outbox o CROSS JOIN LATERAL (SELECT a.at FROM delivery_attempts a"
    "   WHERE a.outbox_id = o.id AND a.n = o.attempts AND a.outcome = 'failed' LIMIT 1) a"
    "  WHERE o.tenant_id = $1::bigint AND o.status = 'failed' AND a.at >= w.t0 AND a.at < w.t1"
    "  UNION ALL SELECT o.channel, 'skipped', o.created_at, NULL FROM outbox o, w"
    "  WHERE o.tenant_id = $1::bigint AND o.status = 'skipped' AND o.created_at >= w.t0"
    "  AND o.created_at < w.t1),"
    " c AS (SELECT ch FROM unnest(ARRAY['webhook', 'push', 'email', 'stream']) AS ch),"
    " b AS (SELECT i, w.t0 + i * $3::int * interval '1 second' AS s FROM w,"
    "  generate_series(0, $2::int / $3::int - 1) AS i),"
    " fb AS (SELECT " BUCKET("f.at") " AS i, count(*) AS n, " PCT("0.5", "late") " AS p50, "
    PCT("0.99", "late") " AS p99 FROM f, w GROUP BY 1),"
    " db_ AS (SELECT " BUCKET("d.at") " AS i, count(*) FILTER (WHERE outcome = 'delivered') AS dn,"
    "  count(*) FILTER (WHERE outcome = 'failed') AS fn,"
    "  count(*) FILTER (WHERE outcome = 'skipped') AS sn FROM d, w GROUP BY 1),"
    " dc AS (SELECT channel, count(*) FILTER (WHERE outcome = 'delivered') AS dn,"
    "  count(*) FILTER (WHERE outcome = 'failed') AS fn,"
    "  count(*) FILTER (WHERE outcome = 'skipped') AS sn, " PCT("0.5", "late") " AS p50, "
    PCT("0.99", "late") " AS p99, max(late) AS mx FROM d GROUP BY channel),"
    " pc AS (SELECT channel, count(*) AS n FROM outbox WHERE tenant_id = $1::bigint"
    "  AND status = 'pending' GROUP BY channel)"
    " SELECT json_build_object('window', $4::text, 'from', " TS("w.t0") ", 'to', " TS("w.t1") ","
    "  'pending', (SELECT coalesce(sum(n), 0) FROM pc),"
    "  'due_next_hour', (SELECT count(*) FROM reminders WHERE tenant_id = $1::bigint"
    "   AND status = 'pending' AND fire_at >= w.t1 AND fire_at < w.t1 + interval '1 hour'),"
    "  'fired', (SELECT count(*) FROM f),"
    "  'delivered', (SELECT coalesce(sum(dn), 0) FROM dc),"
    "  'failed', (SELECT coalesce(sum(fn), 0) FROM dc),"
    "  'skipped', (SELECT coalesce(sum(sn), 0) FROM dc),"
    "  'lateness_ms', (SELECT json_build_object('p50', " PCT("0.5", "late") ", 'p99', "
    PCT("0.99", "late") ", 'max', max(late)) FROM f),"
    "  'channels', (SELECT json_object_agg(c.ch, json_build_object("
    "   'pending', coalesce(pc.n, 0), 'delivered', coalesce(dc.dn, 0),"
    "   'failed', coalesce(dc.fn, 0), 'skipped', coalesce(dc.sn, 0),"
    "   'lateness_ms', json_build_object('p50', dc.p50, 'p99', dc.p99, 'max', dc.mx)))"
    "   FROM c LEFT JOIN dc ON dc.channel = c.ch LEFT JOIN pc ON pc.channel = c.ch),"
    "  'buckets', (SELECT json_agg(json_build_object('start', " TS("b.s") ","
    "   'fired', coalesce(fb.n, 0), 'delivered', coalesce(db_.dn, 0),"
    "   'failed', coalesce(db_.fn, 0), 'skipped', coalesce(db_.sn, 0),"
    "   'lateness_p50_ms', fb.p50, 'lateness_p99_ms', fb.p99) ORDER BY b.i)"
    "   FROM b LEFT JOIN fb ON fb.i = b.i LEFT JOIN db_ ON db_.i = b.i)"
    " )::text FROM w";

/* clang-format on */

/* The statement's estimates (millions of outbox rows) start JIT compilation, which took 196 ms
 * of the 593 a 1 h window took on the seed: never worth it for one tenant's rows. A direct
 * session has JIT off already (db.c); a pooled one has no session settings, hence SET LOCAL in
 * the statement's own transaction. */
static enum db_status
stats_tx(struct db *db, void *arg)
{
    struct stats_run *r = arg;
    enum db_status st = db_exec_simple(db, "SET LOCAL jit = off");

    PQclear(r->res); /* a retried transaction's first result */
    r->res = NULL;
    return st != DB_ONE_RESULT ? st : db_exec(db, STMT_STATS, stats_sql, 4, r->v, &r->res);
}

enum db_status
db_stats(struct db *db, int64_t tenant_id, int window_s, int bucket_s, char **json)
{
    char t[DB_I64_BUF], win[DB_I64_BUF], bucket[DB_I64_BUF], name[DB_I64_BUF];
    PGresult *res = NULL;

    *json = NULL;
    snprintf(t, sizeof t, "%lld", (long long)tenant_id);
    snprintf(win, sizeof win, "%d", window_s);
    snprintf(bucket, sizeof bucket, "%d", bucket_s);
    snprintf(name, sizeof name, "%dh", window_s / 3600);
    struct stats_run r = {{t, win, bucket, name}, NULL};
    enum db_status st = db_tx_run(db, stats_tx, &r);
    if (st != DB_ONE_RESULT) {
        PQclear(r.res);
        return st;
    }
    res = r.res;
    if (PQntuples(res) == 1 && (*json = strdup(PQgetvalue(res, 0, 0))) == NULL)
        st = db_oom(db, "stats");
    else if (PQntuples(res) != 1)
        st = DB_NO_RESULTS;
    PQclear(res);
    return st;
}
