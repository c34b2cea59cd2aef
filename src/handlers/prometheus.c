/* prometheus.c -- GET /metrics: the process's counters and fire-lateness histogram (metrics.c),
 * the HTTP requests by route (http_metrics.c), plus gauges read now: the engine's queues, the
 * subscriber, shards and replicas, open streams, deliveries in flight, the clock skew, Redis as
 * the engine last saw it, the build, and from PostgreSQL the outbox backlog and how long its
 * oldest due row has waited (omitted when the database is down, so a scrape still works in an
 * outage; tocsin_postgres_up says which). Prometheus text format 0.0.4. Public, like /healthz:
 * it holds counts, never tenant data. */
#include <inttypes.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_outbox.h"
#include "dbclock.h"
#include "deliver.h"
#include "engine.h"
#include "handler.h"
#include "http_metrics.h"
#include "http_routes.h"
#include "hub.h"
#include "metrics.h"
#include "version.h"

/* Bytes of the gauge section: about 2,200, and a line of up to 300 per Redis Cluster master. */
#define METRICS_GAUGES_MAX (4096 + 300 * METRICS_MASTERS_MAX)
#define METRICS_MASTERS_MAX 16 /* Cluster masters /metrics lists; a bigger cluster shows these */

/* What this scrape reads from PostgreSQL (the backlog and its oldest due row, db_outbox.h), and
 * whether it could. */
static void
db_gauges(struct db *db, char *buf, size_t cap)
{
    int64_t backlog = 0, oldest_due_ms = 0;
    bool up = db != NULL && db_outbox_backlog(db, &backlog) == DB_ONE_RESULT &&
              db_outbox_oldest_due(db, &oldest_due_ms) == DB_ONE_RESULT;
    int n = snprintf(buf, cap,
                     "# HELP tocsin_postgres_up 1 when PostgreSQL answered this scrape's queries.\n"
                     "# TYPE tocsin_postgres_up gauge\ntocsin_postgres_up %d\n",
                     up ? 1 : 0);

    if (!up || n < 0 || (size_t)n >= cap)
        return;
    snprintf(buf + n, cap - (size_t)n,
             "# HELP tocsin_outbox_pending Notifications written and not yet delivered.\n"
             "# TYPE tocsin_outbox_pending gauge\ntocsin_outbox_pending %" PRId64 "\n"
             "# HELP tocsin_outbox_oldest_due_seconds How long the longest-waiting due "
             "notification no delivery worker holds has been due (0: none).\n"
             "# TYPE tocsin_outbox_oldest_due_seconds gauge\n"
             "tocsin_outbox_oldest_due_seconds %.3f\n",
             backlog, (double)oldest_due_ms / 1000.0);
}

/* With Redis Cluster: one line per master, so an alert can say which one is down. */
static void
masters(struct request *rq, char *buf, size_t cap)
{
    struct expiry_master m[METRICS_MASTERS_MAX];
    size_t n = engine_redis_masters(rq->w->engine, m, METRICS_MASTERS_MAX);
    size_t used = strlen(buf);

    if (n == 0)
        return;
    used += (size_t)snprintf(buf + used, cap - used,
                             "# HELP tocsin_redis_master_up 1 while the expiry listener of this "
                             "Redis Cluster master is subscribed.\n"
                             "# TYPE tocsin_redis_master_up gauge\n");
    for (size_t i = 0; i < n && used < cap; i++)
        used +=
            (size_t)snprintf(buf + used, cap - used, "tocsin_redis_master_up{master=\"%s\"} %d\n",
                             m[i].addr, m[i].subscribed ? 1 : 0);
}

static void
gauges(struct request *rq, char *buf, size_t cap)
{
    struct engine_gauges g;
    int n;

    engine_gauges(rq->w->engine, &g);
    n = snprintf(buf, cap,
                 "# HELP tocsin_dispatch_queue_depth Occurrences waiting for dispatch.\n"
                 "# TYPE tocsin_dispatch_queue_depth gauge\ntocsin_dispatch_queue_depth %zu\n"
                 "# HELP tocsin_sched_held Occurrences the scheduler holds for its window.\n"
                 "# TYPE tocsin_sched_held gauge\ntocsin_sched_held %zu\n"
                 "# HELP tocsin_expiry_subscribed 1 while the expiry listener is subscribed.\n"
                 "# TYPE tocsin_expiry_subscribed gauge\ntocsin_expiry_subscribed %d\n"
                 "# HELP tocsin_recon_full_passes_total Completed full reconciler passes.\n"
                 "# TYPE tocsin_recon_full_passes_total counter\n"
                 "tocsin_recon_full_passes_total %llu\n"
                 "# HELP tocsin_shards_owned Shards of the engine's work this replica owns.\n"
                 "# TYPE tocsin_shards_owned gauge\ntocsin_shards_owned %zu\n"
                 "# HELP tocsin_replicas_live Replicas with a fresh heartbeat, as this one saw.\n"
                 "# TYPE tocsin_replicas_live gauge\ntocsin_replicas_live %zu\n"
                 "# HELP tocsin_streams_open Live streams open on this replica.\n"
                 "# TYPE tocsin_streams_open gauge\ntocsin_streams_open %zu\n"
                 "# HELP tocsin_deliveries_in_flight Requests to receivers not recorded yet:"
                 " waiting for an answer, or answered and about to be recorded.\n"
                 "# TYPE tocsin_deliveries_in_flight gauge\ntocsin_deliveries_in_flight %zu\n"
                 "# HELP tocsin_clock_skew_seconds This replica's clock minus PostgreSQL's.\n"
                 "# TYPE tocsin_clock_skew_seconds gauge\ntocsin_clock_skew_seconds %.3f\n"
                 "# HELP tocsin_redis_up 1 when Redis answered the reconciler's last check.\n"
                 "# TYPE tocsin_redis_up gauge\ntocsin_redis_up %d\n"
                 "# HELP tocsin_redis_notify_ok 1 when the last probe key's expired event "
                 "arrived (notify-keyspace-events has E and x).\n"
                 "# TYPE tocsin_redis_notify_ok gauge\ntocsin_redis_notify_ok %d\n"
                 "# HELP tocsin_build_info The running build; always 1.\n"
                 "# TYPE tocsin_build_info gauge\n"
                 "tocsin_build_info{version=\"%s\",commit=\"%s\"} 1\n",
                 g.dispatch_queue, g.sched_held, g.subscribed ? 1 : 0, g.recon_passes,
                 g.shards_owned, g.replicas, hub_streams(rq->w->hub), deliver_in_flight(),
                 (double)dbclock_skew_ms() / 1000.0, g.redis_up ? 1 : 0,
                 g.notify == EXPIRY_NOTIFY_OK ? 1 : 0, version_number, version_commit);
    if (n >= 0 && (size_t)n < cap)
        db_gauges(http_request_db(rq), buf + n, cap - (size_t)n);
    masters(rq, buf, cap);
}

int
handle_metrics(struct request *rq)
{
    char extra[METRICS_GAUGES_MAX] = "";
    char *text = metrics_render(), *http = http_metrics_render(), *all = NULL;
    int ret;

    if (text != NULL && http != NULL) {
        gauges(rq, extra, sizeof extra);
        size_t a = strlen(text), b = strlen(http), c = strlen(extra);
        if ((all = malloc(a + b + c + 1)) != NULL) {
            memcpy(all, text, a);
            memcpy(all + a, http, b);
            memcpy(all + a + b, extra, c + 1);
        }
    }
    ret = all != NULL ? http_reply_raw(rq, MHD_HTTP_OK, all, strlen(all),
                                       "text/plain; version=0.0.4; charset=utf-8", NULL)
                      : http_reply_problem(rq, API_E_INTERNAL, "metrics unavailable");
    free(all);
    free(http);
    free(text);
    return ret;
}
