/* db_stats.c -- the statement of db_stats.h. Each count is a walk of an index bounded by the
 * tenant and the window: pending outbox rows along outbox_tenant_status (migrations/020), due and
 * fired reminders along reminders_tenant_pending and reminders_tenant_fired (migrations/021),
 * delivered rows along outbox_tenant_status, failed ones from the window's attempts
 * (delivery_attempts_at, a BRIN index on time) joined to their outbox row by key: a failed row's
 * outcome time is its last attempt's. Skipped rows (a participant's preferences,
 * migrations/028) are outcomes at their writing: their tenant's range of outbox_tenant_status,
 * kept when written within the window. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_internal.h"
#include "db_stats.h"

#define TS(t) "to_char((" t ") AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
#define PCT(p, col) "percentile_cont(" p ") WITHIN GROUP (ORDER BY " col ")"
#define LATE(set)                                                                                  \
    "(SELECT json_build_object('p50', " PCT("0.5", "late") ", 'p99', " PCT(                        \
        "0.99", "late") ", 'max', max(late)) FROM " set ")"

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
    "  FROM w, delivery_attempts a JOIN outbox o ON o.id = a.outbox_id"
    "  WHERE a.at >= w.t0 AND a.at < w.t1 AND a.outcome = 'failed' AND o.tenant_id = $1::bigint"
    "  AND o.status = 'failed' AND a.n = o.attempts),"
    " k AS (SELECT o.channel, o.created_at AS at FROM outbox o, w WHERE o.tenant_id = $1::bigint"
    "  AND o.status = 'skipped' AND o.created_at >= w.t0 AND o.created_at < w.t1),"
    " c AS (SELECT ch FROM unnest(ARRAY['webhook', 'push', 'email', 'stream']) AS ch),"
    " b AS (SELECT i, w.t0 + i * $3::int * interval '1 second' AS s FROM w,"
    "  generate_series(0, $2::int / $3::int - 1) AS i)"
    " SELECT json_build_object('window', $4::text, 'from', " TS("w.t0") ", 'to', " TS(
        "w.t1") ","
                "  'pending', (SELECT count(*) FROM outbox WHERE tenant_id = $1::bigint AND status "
                "= 'pending'),"
                "  'due_next_hour', (SELECT count(*) FROM reminders WHERE tenant_id = $1::bigint"
                "   AND status = 'pending' AND fire_at >= w.t1 AND fire_at < w.t1 + interval '1 "
                "hour'),"
                "  'fired', (SELECT count(*) FROM f),"
                "  'delivered', (SELECT count(*) FROM d WHERE outcome = 'delivered'),"
                "  'failed', (SELECT count(*) FROM d WHERE outcome = 'failed'),"
                "  'skipped', (SELECT count(*) FROM k),"
                "  'lateness_ms', " LATE(
                    "f") ","
                         "  'channels', (SELECT json_object_agg(ch, json_build_object("
                         "   'pending', (SELECT count(*) FROM outbox WHERE tenant_id = $1::bigint"
                         "    AND status = 'pending' AND channel = c.ch),"
                         "   'delivered', (SELECT count(*) FROM d WHERE channel = c.ch AND outcome "
                         "= 'delivered'),"
                         "   'failed', (SELECT count(*) FROM d WHERE channel = c.ch AND outcome = "
                         "'failed'),"
                         "   'skipped', (SELECT count(*) FROM k WHERE k.channel = c.ch),"
                         "   'lateness_ms', " LATE(
                             "d WHERE d.channel = c.ch") ")) FROM c),"
                                                         "  'buckets', (SELECT "
                                                         "json_agg(json_build_object('start', " TS(
                                                             "b.s") ","
                                                                    "   'fired', (SELECT count(*) "
                                                                    "FROM f WHERE f.at >= b.s AND "
                                                                    "f.at < b.s + $3::int * "
                                                                    "interval '1 second'),"
                                                                    "   'delivered', (SELECT "
                                                                    "count(*) FROM d WHERE outcome "
                                                                    "= 'delivered' AND d.at >= b.s"
                                                                    "    AND d.at < b.s + $3::int "
                                                                    "* interval '1 second'),"
                                                                    "   'failed', (SELECT count(*) "
                                                                    "FROM d WHERE outcome = "
                                                                    "'failed' AND d.at >= b.s"
                                                                    "    AND d.at < b.s + $3::int "
                                                                    "* interval '1 second'), "
                                                                    "'skipped', (SELECT count(*) "
                                                                    "FROM k WHERE k.at >= b.s"
                                                                    " AND k.at < b.s + $3::int * "
                                                                    "interval '1 second'),"
                                                                    "   'lateness_p50_ms', "
                                                                    "(SELECT " PCT(
                                                                        "0.5",
                                                                        "late") " FROM f WHERE "
                                                                                "f.at >= b.s"
                                                                                "    AND f.at < "
                                                                                "b.s + $3::int * "
                                                                                "interval '1 "
                                                                                "second'),"
                                                                                "   "
                                                                                "'lateness_p99_ms',"
                                                                                " (SELECT " PCT(
                                                                                    "0.99",
                                                                                    "late") " FROM "
                                                                                            "f "
                                                                                            "WHERE "
                                                                                            "f.at "
                                                                                            ">= b.s"
                                                                                            "    "
                                                                                            "AND "
                                                                                            "f.at "
                                                                                            "< b.s "
                                                                                            "+ "
                                                                                            "$3::"
                                                                                            "int * "
                                                                                            "interv"
                                                                                            "al '1 "
                                                                                            "second"
                                                                                            "')) "
                                                                                            "ORDER "
                                                                                            "BY "
                                                                                            "b.i) "
                                                                                            "FROM "
                                                                                            "b)"
                                                                                            " )::"
                                                                                            "text "
                                                                                            "FROM "
                                                                                            "w";

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
    const char *v[] = {t, win, bucket, name};
    enum db_status st = db_exec(db, STMT_STATS, stats_sql, 4, v, &res);
    if (st != DB_ONE_RESULT)
        return st;
    if (PQntuples(res) == 1 && (*json = strdup(PQgetvalue(res, 0, 0))) == NULL)
        st = db_oom(db, "stats");
    else if (PQntuples(res) != 1)
        st = DB_NO_RESULTS;
    PQclear(res);
    return st;
}
