/* metrics.c -- the counters and histogram behind metrics.h: fixed arrays of relaxed atomics, so
 * the hot paths (dispatch, expiry) pay one atomic add per event and never a lock. */
#include "metrics.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "db_retention.h"
#include "meeting.h"

#define METRICS_RENDER_MAX 16384 /* bytes of the rendered text; checked below */
#define LATENESS_BUCKETS_MAX 14  /* the bounds below plus +Inf */

static const struct {
    const char *name;
    const char *help;
} counters[METRIC_COUNT] = {
    [METRIC_FIRED] = {"tocsin_reminders_fired_total", "Reminders recorded as fired."},
    [METRIC_MISSED] = {"tocsin_reminders_missed_total",
                       "Reminders recorded as missed (processed after meeting start + grace)."},
    [METRIC_STALE_DROPPED] = {"tocsin_fire_stale_dropped_total",
                              "Fire attempts dropped: stale, already fired or deleted."},
    [METRIC_ALREADY_CLAIMED] =
        {"tocsin_fire_already_claimed_total",
         "Fire attempts skipped because the reminder was claimed already: by "
         "another replica, or by this one on its other path (the expiry event "
         "and the timer both see each reminder). Counts up on one replica too; "
         "not an error."},
    [METRIC_EXPIRED_EVENTS] = {"tocsin_redis_expired_events_total",
                               "Redis expired events received for reminder keys."},
    [METRIC_DISPATCH_ERRORS] = {"tocsin_dispatch_errors_total",
                                "Failed fire statements (database errors), retries included."},
    [METRIC_QUEUE_DROPPED] = {"tocsin_dispatch_queue_dropped_total",
                              "Occurrences the dispatch queue refused, full or closed at shutdown "
                              "(left to the reconciler)."},
    [METRIC_DELIVERED] = {"tocsin_deliveries_delivered_total",
                          "Deliveries recorded delivered (every channel)."},
    [METRIC_DELIVERY_RETRIED] =
        {"tocsin_delivery_attempts_failed_total",
         "Failed delivery attempts with another attempt scheduled (every channel)."},
    [METRIC_DELIVERY_FAILED] = {"tocsin_deliveries_failed_total",
                                "Deliveries recorded failed, no attempt left (every channel)."},
    [METRIC_STREAM_EVENTS] = {"tocsin_stream_events_sent_total",
                              "Reminder events written to open streams, live and replayed."},
    [METRIC_STREAM_RESUMES] = {"tocsin_stream_resumes_total",
                               "Streams resumed from a cursor with the events they missed."},
    [METRIC_STREAM_RESETS] = {"tocsin_stream_resets_total",
                              "Streams told to reset (cursor garbage, too old or ahead)."},
    [METRIC_STREAMS_CUT] = {"tocsin_streams_cut_total",
                            "Streams cut because their reader fell too far behind."},
    [METRIC_STREAM_BACKLOG_READS] = {"tocsin_stream_backlog_reads_total",
                                     "Reads of missed events from PostgreSQL to resume streams "
                                     "(one per stream, or one filling the recent events for all)."},
    [METRIC_HTTP_STREAM_POOL] = {"tocsin_http_stream_pool_connections_total",
                                 "Connections whose first request opened a stream, handed to the "
                                 "HTTP threads that serve streams."},
    [METRIC_HTTP_ADDR_REFUSED] = {"tocsin_http_connections_refused_total",
                                  "Connections closed at once, or requests through a "
                                  "trusted proxy answered 429: their client address held "
                                  "TOCSIN_HTTP_CONNECTIONS_PER_ADDR already."},
    [METRIC_HTTP_RATE_LIMITED] = {"tocsin_http_rate_limited_total",
                                  "Requests refused 429 rate_limited: their tenant was over "
                                  "TOCSIN_TENANT_RATE on this replica."},
    [METRIC_QUOTA_REFUSED] = {"tocsin_quota_refused_total",
                              "Creates refused 403 quota_exceeded: their tenant had "
                              "TOCSIN_TENANT_MEETINGS_MAX live meetings."},
    [METRIC_STREAMS_TENANT_FULL] = {"tocsin_streams_tenant_refused_total",
                                    "Streams refused 429 too_many_tenant_streams: their tenant "
                                    "held TOCSIN_STREAMS_PER_TENANT on this replica."},
    [METRIC_STREAMS_REVOKED] = {"tocsin_streams_revoked_total",
                                "Streams ended because the signing key of their token was "
                                "revoked."},
    [METRIC_DELIVERY_TENANT_DEFERRED] =
        {"tocsin_delivery_tenant_deferred_total",
         "Outbox rows a delivery worker loaded past their tenant's share of its slots "
         "(TOCSIN_DELIVERY_TENANT_SHARE): each waited for one of its tenant's requests."},
    [METRIC_WEBHOOKS_DISABLED] = {"tocsin_webhooks_disabled_total",
                                  "Webhooks turned off because their attempts failed without "
                                  "one success for TOCSIN_WEBHOOK_DISABLE_AFTER_S."},
    [METRIC_REDIS_FAILOVERS] = {"tocsin_redis_failovers_total",
                                "Times this replica moved its Redis connections to a new master "
                                "(redis-sentinel://: +switch-master, or a new address from the "
                                "Sentinels)."},
    [METRIC_DELIVERY_HANDED] = {"tocsin_delivery_handed_total",
                                "Webhook rows a delivery worker took in memory from the fire "
                                "that wrote them, without a lease statement or a meeting read."},
    [METRIC_DELIVERY_HANDED_LEFT] = {"tocsin_delivery_handed_left_total",
                                     "Webhook rows handed to a delivery worker that it left to "
                                     "its lease statement (too late, renamed, or no room)."},
};

/* Upper bounds in milliseconds, rendered in seconds; the last bucket is +Inf. */
static const int64_t bounds[LATENESS_BUCKETS_MAX - 1] = {1,   2,   5,    10,   20,   50,   100,
                                                         250, 500, 1000, 2500, 5000, 10000};

static atomic_uint_fast64_t values[METRIC_COUNT];
static atomic_uint_fast64_t buckets[LATENESS_BUCKETS_MAX]; /* not cumulative */
static atomic_uint_fast64_t lateness_sum_ms;

void
metrics_add(enum metric m, uint64_t n)
{
    if ((unsigned)m < METRIC_COUNT)
        atomic_fetch_add_explicit(&values[m], n, memory_order_relaxed);
}

uint64_t
metrics_get(enum metric m)
{
    if ((unsigned)m >= METRIC_COUNT)
        return 0;
    return atomic_load_explicit(&values[m], memory_order_relaxed);
}

static size_t
bucket_of(int64_t ms)
{
    size_t i = 0;

    while (i < LATENESS_BUCKETS_MAX - 1 && ms > bounds[i])
        i++;
    return i;
}

void
metrics_observe_lateness_ms(int64_t ms)
{
    if (ms < 0)
        ms = 0;
    atomic_fetch_add_explicit(&buckets[bucket_of(ms)], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&lateness_sum_ms, (uint64_t)ms, memory_order_relaxed);
}

uint64_t
metrics_lateness_le(int64_t le_ms)
{
    uint64_t n = 0;
    size_t last = bucket_of(le_ms);

    for (size_t i = 0; i <= last; i++)
        n += atomic_load_explicit(&buckets[i], memory_order_relaxed);
    return n;
}

uint64_t
metrics_lateness_count(void)
{
    return metrics_lateness_le(INT64_MAX);
}

/* ---- per channel --------------------------------------------------------------------------- */

#define CHANNEL_SLOTS 3         /* webhook, push, email: the channels delivery sends */
#define DELIVERY_BUCKETS_MAX 13 /* the bounds below plus +Inf */

static const unsigned channel_of_slot[CHANNEL_SLOTS] = {CHANNEL_WEBHOOK, CHANNEL_PUSH,
                                                        CHANNEL_EMAIL};
/* Upper bounds in milliseconds, rendered in seconds; the last bucket is +Inf. */
static const int64_t delivery_bounds[DELIVERY_BUCKETS_MAX - 1] = {
    100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000, 900000, 3600000};

static atomic_uint_fast64_t outcomes[CHANNEL_SLOTS][OUTCOME_COUNT];
static atomic_int_fast64_t circuits[CHANNEL_SLOTS];
static atomic_uint_fast64_t delivery_buckets[CHANNEL_SLOTS][DELIVERY_BUCKETS_MAX];
static atomic_uint_fast64_t delivery_sum_ms[CHANNEL_SLOTS];

static int
slot_of(unsigned channel)
{
    for (int i = 0; i < CHANNEL_SLOTS; i++)
        if (channel_of_slot[i] == channel)
            return i;
    return -1;
}

void
metrics_channel_add(unsigned channel, enum metric_outcome o, uint64_t n)
{
    int s = slot_of(channel);

    if (s >= 0 && (unsigned)o < OUTCOME_COUNT)
        atomic_fetch_add_explicit(&outcomes[s][o], n, memory_order_relaxed);
}

uint64_t
metrics_channel_get(unsigned channel, enum metric_outcome o)
{
    int s = slot_of(channel);

    if (s < 0 || (unsigned)o >= OUTCOME_COUNT)
        return 0;
    return atomic_load_explicit(&outcomes[s][o], memory_order_relaxed);
}

void
metrics_observe_delivery_ms(unsigned channel, int64_t ms)
{
    int s = slot_of(channel);
    size_t b = 0;

    if (s < 0)
        return;
    if (ms < 0)
        ms = 0;
    while (b < DELIVERY_BUCKETS_MAX - 1 && ms > delivery_bounds[b])
        b++;
    atomic_fetch_add_explicit(&delivery_buckets[s][b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&delivery_sum_ms[s], (uint64_t)ms, memory_order_relaxed);
}

void
metrics_circuits_add(unsigned channel, int delta)
{
    int s = slot_of(channel);

    if (s >= 0)
        atomic_fetch_add_explicit(&circuits[s], delta, memory_order_relaxed);
}

int64_t
metrics_circuits_get(unsigned channel)
{
    int s = slot_of(channel);

    return s >= 0 ? (int64_t)atomic_load_explicit(&circuits[s], memory_order_relaxed) : 0;
}

/* ---- retention ------------------------------------------------------------------------------ */

static atomic_uint_fast64_t purged[DB_RETENTION_KINDS];

void
metrics_retention_add(unsigned kind, uint64_t n)
{
    if (kind < DB_RETENTION_KINDS)
        atomic_fetch_add_explicit(&purged[kind], n, memory_order_relaxed);
}

uint64_t
metrics_retention_get(unsigned kind)
{
    return kind < DB_RETENTION_KINDS ? atomic_load_explicit(&purged[kind], memory_order_relaxed)
                                     : 0;
}

static int put(char *buf, size_t *len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Appends to buf at *len; returns -1 once the buffer is too small. */
static int
put(char *buf, size_t *len, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf + *len, METRICS_RENDER_MAX - *len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= METRICS_RENDER_MAX - *len)
        return -1;
    *len += (size_t)n;
    return 0;
}

/* Kept in milliseconds, rendered in seconds (Prometheus's base unit). */
static int
render_histogram(char *buf, size_t *len)
{
    static const char name[] = "tocsin_fire_lateness_seconds";
    uint64_t cum = 0, sum;
    int rc = put(buf, len,
                 "# HELP %s Fire time minus due time of fired reminders.\n# TYPE %s "
                 "histogram\n",
                 name, name);

    for (size_t i = 0; i < LATENESS_BUCKETS_MAX && rc == 0; i++) {
        cum += atomic_load_explicit(&buckets[i], memory_order_relaxed);
        if (i < LATENESS_BUCKETS_MAX - 1)
            rc = put(buf, len, "%s_bucket{le=\"%g\"} %" PRIu64 "\n", name,
                     (double)bounds[i] / 1000.0, cum);
        else
            rc = put(buf, len, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n", name, cum);
    }
    sum = atomic_load_explicit(&lateness_sum_ms, memory_order_relaxed);
    if (rc == 0)
        rc = put(buf, len, "%s_sum %" PRIu64 ".%03u\n%s_count %" PRIu64 "\n", name, sum / 1000,
                 (unsigned)(sum % 1000), name, cum);
    return rc;
}

static int
render_outcomes(char *buf, size_t *len)
{
    static const struct {
        const char *name, *help;
    } o[OUTCOME_COUNT] = {
        [OUTCOME_SENT] = {"tocsin_channel_sent_total", "Notifications delivered, by channel."},
        [OUTCOME_RETRIED] = {"tocsin_channel_retried_total",
                             "Failed attempts with another attempt scheduled, by channel."},
        [OUTCOME_FAILED] = {"tocsin_channel_failed_total",
                            "Notifications recorded failed (no attempt left), by channel."},
    };
    int rc = 0;

    for (size_t k = 0; k < OUTCOME_COUNT && rc == 0; k++) {
        rc = put(buf, len, "# HELP %s %s\n# TYPE %s counter\n", o[k].name, o[k].help, o[k].name);
        for (size_t s = 0; s < CHANNEL_SLOTS && rc == 0; s++)
            rc = put(buf, len, "%s{channel=\"%s\"} %" PRIu64 "\n", o[k].name,
                     meeting_channel_name(channel_of_slot[s]),
                     (uint64_t)atomic_load_explicit(&outcomes[s][k], memory_order_relaxed));
    }
    return rc;
}

static int
render_delivery_latency(char *buf, size_t *len)
{
    static const char name[] = "tocsin_channel_delivery_latency_seconds";
    int rc = put(buf, len,
                 "# HELP %s Delivered time minus the reminder's due time, by channel.\n"
                 "# TYPE %s histogram\n",
                 name, name);

    for (size_t s = 0; s < CHANNEL_SLOTS && rc == 0; s++) {
        const char *ch = meeting_channel_name(channel_of_slot[s]);
        uint64_t cum = 0;
        for (size_t b = 0; b < DELIVERY_BUCKETS_MAX && rc == 0; b++) {
            cum += atomic_load_explicit(&delivery_buckets[s][b], memory_order_relaxed);
            if (b < DELIVERY_BUCKETS_MAX - 1)
                rc = put(buf, len, "%s_bucket{channel=\"%s\",le=\"%g\"} %" PRIu64 "\n", name, ch,
                         (double)delivery_bounds[b] / 1000.0, cum);
            else
                rc = put(buf, len, "%s_bucket{channel=\"%s\",le=\"+Inf\"} %" PRIu64 "\n", name, ch,
                         cum);
        }
        uint64_t sum = atomic_load_explicit(&delivery_sum_ms[s], memory_order_relaxed);
        if (rc == 0)
            rc = put(buf, len,
                     "%s_sum{channel=\"%s\"} %" PRIu64 ".%03u\n%s_count{channel=\"%s\"} %" PRIu64
                     "\n",
                     name, ch, sum / 1000, (unsigned)(sum % 1000), name, ch, cum);
    }
    return rc;
}

static int
render_circuits(char *buf, size_t *len)
{
    static const char name[] = "tocsin_delivery_circuits_open";
    int rc = put(buf, len,
                 "# HELP %s Receivers whose circuit is open or half open, counted per delivery "
                 "worker, by channel.\n# TYPE %s gauge\n",
                 name, name);

    for (size_t s = 0; s < CHANNEL_SLOTS && rc == 0; s++)
        rc =
            put(buf, len, "%s{channel=\"%s\"} %" PRId64 "\n", name,
                meeting_channel_name(channel_of_slot[s]), metrics_circuits_get(channel_of_slot[s]));
    return rc;
}

static int
render_retention(char *buf, size_t *len)
{
    static const char name[] = "tocsin_retention_purged_rows_total";
    int rc = put(buf, len, "# HELP %s Rows removed by retention, by kind.\n# TYPE %s counter\n",
                 name, name);

    for (unsigned k = 0; k < DB_RETENTION_KINDS && rc == 0; k++)
        rc = put(buf, len, "%s{kind=\"%s\"} %" PRIu64 "\n", name, db_retention_name(k),
                 metrics_retention_get(k));
    return rc;
}

char *
metrics_render(void)
{
    char *buf = malloc(METRICS_RENDER_MAX);
    size_t len = 0;
    int rc = 0;

    if (buf == NULL)
        return NULL;
    buf[0] = '\0';
    for (size_t i = 0; i < METRIC_COUNT && rc == 0; i++)
        rc = put(buf, &len, "# HELP %s %s\n# TYPE %s counter\n%s %" PRIu64 "\n", counters[i].name,
                 counters[i].help, counters[i].name, counters[i].name, metrics_get((enum metric)i));
    if (rc == 0)
        rc = render_histogram(buf, &len);
    if (rc == 0)
        rc = render_outcomes(buf, &len);
    if (rc == 0)
        rc = render_delivery_latency(buf, &len);
    if (rc == 0)
        rc = render_circuits(buf, &len);
    if (rc == 0)
        rc = render_retention(buf, &len);
    if (rc != 0) {
        free(buf); /* METRICS_RENDER_MAX too small: a bug caught by test_metrics */
        return NULL;
    }
    return buf;
}
