/* health.c -- GET /healthz (the process answers) and GET /readyz (it can serve the API:
 * PostgreSQL reachable and the schema migrated, checked live with this thread's connection).
 * Redis is reported in /readyz's body but never fails it: the API works without Redis (writes
 * skip the mirror, the reconciler repairs it, reminders fire from PostgreSQL), and a readiness
 * that follows Redis would take every replica out of rotation at once. The Redis states are the
 * engine's (the reconciler's last look, the listener's probe): /readyz sends nothing to Redis, so
 * a hung Redis cannot slow it down. */
#include <microhttpd.h>
#include <stdio.h>

#include "engine.h"
#include "handler.h"
#include "http_routes.h"
#include "panic.h"

int
handle_healthz(struct request *rq)
{
    return http_reply_json(rq, MHD_HTTP_OK, json_pack("{s:s}", "status", "ok"), NULL);
}

static const char *
check_postgres(struct request *rq, const char **migrations)
{
    struct db *db = http_request_db(rq);
    *migrations = "unknown";
    if (db == NULL || db_ping(db) != 0)
        return "down";
    *migrations = db_migrate_current(db) == 0 ? "ok" : "pending";
    return "ok";
}

static const char *
notify_word(enum expiry_notify n)
{
    switch (n) {
    case EXPIRY_NOTIFY_UNKNOWN:
        return "unknown";
    case EXPIRY_NOTIFY_OK:
        return "ok";
    case EXPIRY_NOTIFY_MISSING:
        return "misconfigured";
    }
    TOCSIN_UNREACHABLE("an expiry_notify outside its enum");
}

int
handle_readyz(struct request *rq)
{
    const char *migrations;
    const char *pg = check_postgres(rq, &migrations);
    struct engine_gauges g;
    int ready = pg[0] == 'o' && migrations[0] == 'o';

    engine_gauges(rq->w->engine, &g);
    int off = rq->w->engine == NULL;
    json_t *body =
        json_pack("{s:s, s:{s:s, s:s, s:s, s:s, s:s}}", "status", ready ? "ready" : "not_ready",
                  "checks", "postgres", pg, "migrations", migrations, "redis",
                  off          ? "off"
                  : g.redis_up ? "ok"
                               : "down",
                  "notify_config", off ? "off" : notify_word(g.notify), "subscriber",
                  off            ? "off"
                  : g.subscribed ? "ok"
                                 : "down");
    /* Why Redis is down, in the connect's own words (a TLS certificate the CA did not sign, a host
     * name the certificate does not name, a refused AUTH): the operator's first question. */
    if (!off && g.redis_error[0] != '\0')
        json_object_set_new(body, "redis_error", json_string(g.redis_error));
    if (!off && g.notify == EXPIRY_NOTIFY_MISSING)
        json_object_set_new(body, "detail",
                            json_string("Redis sends no expired-key events: set "
                                        "notify-keyspace-events to include E and x (e.g. Ex)"));
    return http_reply_json(rq, ready ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE, body, NULL);
}
