/* http_metrics.h -- what the HTTP API served, for GET /metrics: tocsin_http_requests_total by
 * route, method and status, and tocsin_http_request_duration_seconds, a histogram by route. The
 * route label is the route table's pattern ("/v1/meetings/{id}"), never the raw path, so the
 * label sets are bounded: paths that match no route count as route="unmatched", methods outside
 * the API's as method="other", statuses tocsin does not send as their class ("5xx"). Lock-free
 * (relaxed atomics), like metrics.h. */
#ifndef TOCSIN_HTTP_METRICS_H
#define TOCSIN_HTTP_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "route.h"

#define HTTP_METRICS_ROUTES_MAX 48 /* route table entries counted; past them, "unmatched" */

/* Counts one finished request. route: an entry of http_routes whose pattern the path matched
 * (any method), or NULL. duration_ns: from its request line (MHD's first callback) to its
 * completion (for a stream, the stream's life). Thread-safe. */
void http_metrics_observe(const struct route *route, const char *method, unsigned status,
                          int64_t duration_ns);
/* Both families in the Prometheus text format; series never observed are left out. Returns a
 * malloc'ed string to free(), or NULL when out of memory. */
char *http_metrics_render(void);

#endif
