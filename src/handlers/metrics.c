/* metrics.c -- GET /metrics: the process's counters and fire-lateness histogram (metrics.c) plus
 * gauges read now: the engine's queues, the subscriber, and the outbox backlog from PostgreSQL
 * (omitted when the database is down, so a scrape still works in an outage). Prometheus text
 * format 0.0.4. Public, like /healthz: it holds counts, never tenant data. */
#include <inttypes.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_outbox.h"
#include "engine.h"
#include "handler.h"
#include "http_routes.h"
#include "metrics.h"

#define METRICS_GAUGES_MAX 1024 /* bytes of the gauge section */

static void
gauges(struct request *rq, char *buf, size_t cap)
{
    struct engine_gauges g;
    struct db *db = http_db(rq);
    int64_t backlog = 0;
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
                 "tocsin_recon_full_passes_total %llu\n",
                 g.dispatch_queue, g.sched_held, g.subscribed ? 1 : 0, g.recon_passes);
    if (n < 0 || (size_t)n >= cap || db == NULL || db_outbox_backlog(db, &backlog) != DB_ONE_RESULT)
        return;
    snprintf(buf + n, cap - (size_t)n,
             "# HELP tocsin_outbox_pending Notifications written and not yet delivered.\n"
             "# TYPE tocsin_outbox_pending gauge\ntocsin_outbox_pending %" PRId64 "\n",
             backlog);
}

int
handle_metrics(struct request *rq)
{
    char extra[METRICS_GAUGES_MAX] = "";
    char *text = metrics_render();
    int ret;

    if (text == NULL)
        return http_reply_problem(rq, API_E_INTERNAL, "metrics unavailable");
    gauges(rq, extra, sizeof extra);
    size_t a = strlen(text), b = strlen(extra);
    char *all = malloc(a + b + 1);
    if (all == NULL) {
        free(text);
        return http_reply_problem(rq, API_E_INTERNAL, "out of memory");
    }
    memcpy(all, text, a);
    memcpy(all + a, extra, b + 1);
    ret = http_reply_raw(rq, MHD_HTTP_OK, all, a + b, "text/plain; version=0.0.4; charset=utf-8",
                         NULL);
    free(all);
    free(text);
    return ret;
}
