/* health.c -- GET /healthz (the process answers) and GET /readyz (PostgreSQL reachable, schema
 * migrated, Redis reachable with keyspace notifications enabled, the expiry listener subscribed).
 * Readiness is checked live on each call with this thread's own connections. */
#include <microhttpd.h>
#include <stdio.h>

#include "engine.h"
#include "handler.h"
#include "http_routes.h"
#include "mirror.h"

#define READY_DETAIL_MAX 200

int
handle_healthz(struct request *rq)
{
    return http_reply_json(rq, MHD_HTTP_OK, json_pack("{s:s}", "status", "ok"), NULL);
}

static const char *
check_postgres(struct request *rq, const char **migrations)
{
    struct db *db = http_db(rq);
    *migrations = "unknown";
    if (db == NULL || db_ping(db) != 0)
        return "down";
    *migrations = db_migrations_current(db) == 0 ? "ok" : "pending";
    return "ok";
}

int
handle_readyz(struct request *rq)
{
    const char *migrations, *notify = "unknown";
    char err[READY_DETAIL_MAX] = "";
    const char *pg = check_postgres(rq, &migrations);
    const char *redis = mirror_ping(rq->w->mi) == 0 ? "ok" : "down";

    if (redis[0] == 'o')
        notify = mirror_ensure_notify(rq->w->mi, err, sizeof(err)) == 0 ? "ok" : "misconfigured";
    struct engine_gauges g;
    engine_gauges(rq->w->engine, &g);
    const char *sub = rq->w->engine == NULL ? "off" : g.subscribed ? "ok" : "down";
    int ready = pg[0] == 'o' && migrations[0] == 'o' && redis[0] == 'o' && notify[0] == 'o' &&
                sub[0] != 'd';
    json_t *body =
        json_pack("{s:s, s:{s:s, s:s, s:s, s:s, s:s}}", "status", ready ? "ready" : "not_ready",
                  "checks", "postgres", pg, "migrations", migrations, "redis", redis,
                  "notify_config", notify, "subscriber", sub);
    if (err[0] != '\0')
        json_object_set_new(body, "detail", json_string(err));
    return http_reply_json(rq, ready ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE, body, NULL);
}
