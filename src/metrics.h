/* metrics.h -- process-wide counters and the fire-lateness histogram, rendered for GET /metrics in
 * the Prometheus text format. Lock-free (relaxed atomics): any thread may add or observe at any
 * time, and a render is a consistent-enough snapshot for monitoring, not an audit. */
#ifndef TOCSIN_METRICS_H
#define TOCSIN_METRICS_H

#include <stdint.h>

/* Append new counters before METRIC_COUNT and give them a row in metrics.c's table. */
enum metric {
    METRIC_FIRED,            /* reminders recorded fired (outbox rows written) */
    METRIC_MISSED,           /* reminders recorded missed (processed after start + grace) */
    METRIC_STALE_DROPPED,    /* fire attempts that changed nothing: stale, fired, deleted */
    METRIC_ALREADY_CLAIMED,  /* items another replica (or this one's other path) had claimed */
    METRIC_EXPIRED_EVENTS,   /* Redis expired events for reminder keys */
    METRIC_DISPATCH_ERRORS,  /* failed fire statements (each retry counts) */
    METRIC_QUEUE_DROPPED,    /* items refused by a full or closed queue (repaired by recon) */
    METRIC_DELIVERED,        /* deliveries recorded delivered, every channel */
    METRIC_DELIVERY_RETRIED, /* failed attempts with another one scheduled */
    METRIC_DELIVERY_FAILED,  /* deliveries recorded failed (last attempt, target or meeting gone) */
    METRIC_STREAM_EVENTS,    /* reminder events written to open streams (live and replayed) */
    METRIC_STREAM_RESUMES,   /* streams resumed from a cursor with the events they missed */
    METRIC_STREAM_RESETS,    /* streams told to reset: cursor garbage, too old or ahead */
    METRIC_STREAMS_CUT,      /* streams cut because their reader fell behind */
    METRIC_STREAM_BACKLOG_READS,     /* reads of missed events from PostgreSQL to resume streams */
    METRIC_HTTP_STREAM_POOL,         /* connections handed to the stream pool (http_listen.h) */
    METRIC_HTTP_ADDR_REFUSED,        /* connections closed, or proxied requests refused, at
                                      * TOCSIN_HTTP_CONNECTIONS_PER_ADDR */
    METRIC_HTTP_RATE_LIMITED,        /* requests refused 429 rate_limited (TOCSIN_TENANT_RATE) */
    METRIC_QUOTA_REFUSED,            /* creates refused 403 quota_exceeded (a tenant quota) */
    METRIC_STREAMS_TENANT_FULL,      /* streams refused 429 at TOCSIN_STREAMS_PER_TENANT */
    METRIC_STREAMS_REVOKED,          /* streams ended because their signing key was revoked */
    METRIC_DELIVERY_TENANT_DEFERRED, /* rows loaded past their tenant's share of a worker */
    METRIC_WEBHOOKS_DISABLED,        /* webhooks turned off after TOCSIN_WEBHOOK_DISABLE_AFTER_S */
    METRIC_REDIS_FAILOVERS,          /* moves to a new Redis master (sentinel.h) */
    METRIC_DELIVERY_HANDED,          /* fired rows a worker took in memory, no lease nor read */
    METRIC_DELIVERY_HANDED_LEFT,     /* handed rows a worker left to its lease statement */
    METRIC_COUNT
};

/* Adds n to counter m. Thread-safe. */
void metrics_add(enum metric m, uint64_t n);
/* Current value of counter m. Thread-safe. */
uint64_t metrics_get(enum metric m);
/* Records one fire's lateness (fired_at - fire_at) in milliseconds, rendered in seconds as
 * tocsin_fire_lateness_seconds; negative counts as 0. */
void metrics_observe_lateness_ms(int64_t ms);
/* Number of lateness observations so far, and how many of them were <= le_ms (le_ms must be one
 * of the bucket bounds; other values give the next bucket up). For tests and benchmarks. */
uint64_t metrics_lateness_count(void);
uint64_t metrics_lateness_le(int64_t le_ms);
/* Per delivery channel (webhook, push, email: a CHANNEL_* of meeting.h; others are ignored):
 * how attempts ended, and the delivery latency histogram (delivered time minus the reminder's
 * due time), rendered as tocsin_channel_{sent,retried,failed}_total{channel} and
 * tocsin_channel_delivery_latency_seconds{channel}. Thread-safe. */
enum metric_outcome {
    OUTCOME_SENT,    /* delivered */
    OUTCOME_RETRIED, /* a failed attempt with another one scheduled */
    OUTCOME_FAILED,  /* failed for good */
    OUTCOME_COUNT
};
void metrics_channel_add(unsigned channel, enum metric_outcome o, uint64_t n);
void metrics_observe_delivery_ms(unsigned channel, int64_t ms);
/* A channel's count of outcome o so far. For tests. */
uint64_t metrics_channel_get(unsigned channel, enum metric_outcome o);

/* Delivery receivers whose circuit is open or half open (deliver.h: opened after failures in a
 * row or by Retry-After, closed only by a success), by channel (as metrics_channel_add; others are
 * ignored), rendered as the gauge tocsin_delivery_circuits_open{channel}. Each delivery worker
 * keeps its own circuits, so one broken receiver counts once per worker that sent to it. delta is
 * +1 when a circuit opens, -1 when it closes or its worker stops. Thread-safe. */
void metrics_circuits_add(unsigned channel, int delta);
int64_t metrics_circuits_get(unsigned channel);

/* Rows retention purged, by kind (an enum db_retention_kind; others are ignored), rendered as
 * tocsin_retention_purged_rows_total{kind}. Thread-safe. */
void metrics_retention_add(unsigned kind, uint64_t n);
uint64_t metrics_retention_get(unsigned kind);

/* Every counter and histogram above in the Prometheus text exposition format. Returns a malloc'ed
 * string the caller frees with free(), or NULL when out of memory. */
char *metrics_render(void);

#endif
