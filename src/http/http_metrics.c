/* http_metrics.c -- the counters of http_metrics.h in fixed arrays indexed by route, method and
 * status slot. A route is counted under the first entry of http_routes with its pattern, so GET
 * and POST /v1/meetings are one route label with two methods. The status slots are every status
 * api_errors.def can give, the others the handlers send (200, 201, 204, 304), and one per class
 * for the rest. */
#include "http_metrics.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_routes.h"

#define DURATION_BUCKETS 12 /* the bounds below and +Inf */
#define RENDER_CHUNK 8192

static const char *const methods[] = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"};
#define METHOD_SLOTS (sizeof methods / sizeof methods[0] + 1) /* + "other" */

static const unsigned statuses[] = {
    200,
    201,
    204,
    304,
#define X(name, status, title) status,
#include "api_errors.def"
#undef X
};
#define STATUS_LIST (sizeof statuses / sizeof statuses[0])
#define STATUS_SLOTS (STATUS_LIST + 5) /* + "1xx".."5xx" for any other status */

/* Upper bounds in seconds (Prometheus's default buckets). */
static const double bounds[DURATION_BUCKETS - 1] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                    0.5,   1,    2.5,   5,    10};

static atomic_uint_fast64_t counts[HTTP_METRICS_ROUTES_MAX + 1][METHOD_SLOTS][STATUS_SLOTS];
static atomic_uint_fast64_t buckets[HTTP_METRICS_ROUTES_MAX + 1][DURATION_BUCKETS];
static atomic_uint_fast64_t sum_ns[HTTP_METRICS_ROUTES_MAX + 1];

/* The first table entry with route's pattern; HTTP_METRICS_ROUTES_MAX for none. */
static size_t
route_slot(const struct route *r)
{
    size_t i;

    if (r == NULL || r < http_routes || r >= http_routes + http_routes_count)
        return HTTP_METRICS_ROUTES_MAX;
    i = (size_t)(r - http_routes);
    for (size_t j = 0; j < i; j++)
        if (strcmp(http_routes[j].pattern, r->pattern) == 0)
            return j < HTTP_METRICS_ROUTES_MAX ? j : HTTP_METRICS_ROUTES_MAX;
    return i < HTTP_METRICS_ROUTES_MAX ? i : HTTP_METRICS_ROUTES_MAX;
}

static size_t
method_slot(const char *m)
{
    size_t i = 0;

    while (i < METHOD_SLOTS - 1 && (m == NULL || strcmp(methods[i], m) != 0))
        i++;
    return i;
}

static size_t
status_slot(unsigned st)
{
    for (size_t i = 0; i < STATUS_LIST; i++)
        if (statuses[i] == st)
            return i;
    return STATUS_LIST + (st >= 100 && st <= 599 ? st / 100 - 1 : 4);
}

void
http_metrics_observe(const struct route *route, const char *method, unsigned status,
                     int64_t duration_ns)
{
    size_t r = route_slot(route), b = 0;
    double s = (double)(duration_ns < 0 ? 0 : duration_ns) / 1e9;

    atomic_fetch_add_explicit(&counts[r][method_slot(method)][status_slot(status)], 1,
                              memory_order_relaxed);
    while (b < DURATION_BUCKETS - 1 && s > bounds[b])
        b++;
    atomic_fetch_add_explicit(&buckets[r][b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&sum_ns[r], (uint64_t)(duration_ns < 0 ? 0 : duration_ns),
                              memory_order_relaxed);
}

struct text {
    char *buf;
    size_t len, cap;
    bool failed;
};

static void put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
put(struct text *t, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (t->failed)
        return;
    for (;;) {
        va_start(ap, fmt);
        n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->failed = true;
            return;
        }
        if ((size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        char *b = realloc(t->buf, t->cap + (size_t)n + RENDER_CHUNK);
        if (b == NULL) {
            t->failed = true;
            return;
        }
        t->buf = b;
        t->cap += (size_t)n + RENDER_CHUNK;
    }
}

static const char *
route_label(size_t r)
{
    return r < HTTP_METRICS_ROUTES_MAX && r < http_routes_count ? http_routes[r].pattern
                                                                : "unmatched";
}

static void
status_label(size_t s, char out[8])
{
    if (s < STATUS_LIST)
        snprintf(out, 8, "%u", statuses[s]);
    else
        snprintf(out, 8, "%uxx", (unsigned)(s - STATUS_LIST + 1) % 10);
}

static void
render_counts(struct text *t)
{
    char st[8];

    put(t, "# HELP tocsin_http_requests_total HTTP requests answered, by route pattern, method "
           "and status.\n# TYPE tocsin_http_requests_total counter\n");
    for (size_t r = 0; r <= HTTP_METRICS_ROUTES_MAX; r++)
        for (size_t m = 0; m < METHOD_SLOTS; m++)
            for (size_t s = 0; s < STATUS_SLOTS; s++) {
                uint64_t v = atomic_load_explicit(&counts[r][m][s], memory_order_relaxed);
                if (v == 0)
                    continue;
                status_label(s, st);
                put(t,
                    "tocsin_http_requests_total{route=\"%s\",method=\"%s\",status=\"%s\"} %llu\n",
                    route_label(r), m < METHOD_SLOTS - 1 ? methods[m] : "other", st,
                    (unsigned long long)v);
            }
}

static void
render_durations(struct text *t)
{
    static const char name[] = "tocsin_http_request_duration_seconds";

    put(t,
        "# HELP %s Time from a request's head to the end of its answer (a stream: its life), by "
        "route pattern.\n# TYPE %s histogram\n",
        name, name);
    for (size_t r = 0; r <= HTTP_METRICS_ROUTES_MAX; r++) {
        uint64_t cum = 0, seen = 0;
        for (size_t b = 0; b < DURATION_BUCKETS; b++)
            seen += atomic_load_explicit(&buckets[r][b], memory_order_relaxed);
        if (seen == 0)
            continue;
        for (size_t b = 0; b < DURATION_BUCKETS; b++) {
            cum += atomic_load_explicit(&buckets[r][b], memory_order_relaxed);
            if (b < DURATION_BUCKETS - 1)
                put(t, "%s_bucket{route=\"%s\",le=\"%g\"} %llu\n", name, route_label(r), bounds[b],
                    (unsigned long long)cum);
            else
                put(t, "%s_bucket{route=\"%s\",le=\"+Inf\"} %llu\n", name, route_label(r),
                    (unsigned long long)cum);
        }
        uint64_t ns = atomic_load_explicit(&sum_ns[r], memory_order_relaxed);
        put(t, "%s_sum{route=\"%s\"} %llu.%09llu\n%s_count{route=\"%s\"} %llu\n", name,
            route_label(r), (unsigned long long)(ns / 1000000000u),
            (unsigned long long)(ns % 1000000000u), name, route_label(r), (unsigned long long)cum);
    }
}

char *
http_metrics_render(void)
{
    struct text t = {malloc(RENDER_CHUNK), 0, RENDER_CHUNK, false};

    if (t.buf == NULL)
        return NULL;
    t.buf[0] = '\0';
    render_counts(&t);
    render_durations(&t);
    if (t.failed) {
        free(t.buf);
        return NULL;
    }
    return t.buf;
}
