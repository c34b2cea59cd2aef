/* health.c -- GET /healthz (the process answers) and GET /readyz (it can serve the API:
 * PostgreSQL reachable, taking writes and the schema migrated, checked live with this thread's
 * connection, and why not when it is not).
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

/* "ok", "read_only" (the server answers but refuses writes: a standby, or the old primary of a
 * failover) or "down", with *why saying what the connection or the ping ran into. */
static const char *
check_postgres(struct request *rq, const char **migrations, const char **why)
{
    struct db *db = http_request_db(rq);
    *migrations = "unknown";
    *why = NULL;
    if (db == NULL) {
        *why = rq->w->db_open_err;
        return "down";
    }
    switch (db_ping(db)) {
    case DB_PING_OK:
        *migrations = db_migrate_current(db) == 0 ? "ok" : "pending";
        return "ok";
    case DB_PING_READ_ONLY:
        *why = db_errmsg(db);
        return "read_only";
    case DB_PING_DOWN:
        *why = db_errmsg(db);
        return "down";
    }
    TOCSIN_UNREACHABLE("a db_ping outside its enum");
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
    const char *migrations, *pg_why;
    const char *pg = check_postgres(rq, &migrations, &pg_why);
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
    /* Why PostgreSQL cannot serve, in libpq's words: a refused connection, a certificate the
     * sslrootcert did not sign or that does not name the host, no host that takes writes. */
    if (pg_why != NULL && pg_why[0] != '\0')
        json_object_set_new(body, "postgres_error", json_string(pg_why));
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
