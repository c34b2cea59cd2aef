/* test_http_metrics.c -- the HTTP request metrics: one route label per pattern (GET and POST
 * /v1/meetings share it), "unmatched" for no route, "other" for unknown methods, a status class
 * for statuses tocsin never sends, durations in seconds with cumulative buckets, and every route
 * of the table within the counted slots. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "http_metrics.h"
#include "http_routes.h"

static const struct route *
find(const char *method, const char *pattern)
{
    for (size_t i = 0; i < http_routes_count; i++)
        if (strcmp(http_routes[i].method, method) == 0 &&
            strcmp(http_routes[i].pattern, pattern) == 0)
            return &http_routes[i];
    return NULL;
}

int
main(void)
{
    const struct route *post = find("POST", "/v1/meetings"), *list = find("GET", "/v1/meetings");

    CHECK(http_routes_count < HTTP_METRICS_ROUTES_MAX, "%zu routes: raise the bound",
          http_routes_count);
    CHECK(post != NULL && list != NULL && post != list, "routes found");
    http_metrics_observe(post, "POST", 201, 3000000);     /* 3 ms */
    http_metrics_observe(list, "POST", 201, 7000000);     /* 7 ms, same label */
    http_metrics_observe(list, "GET", 200, 2000000000LL); /* 2 s */
    http_metrics_observe(NULL, "GET", 404, 100000);       /* no route */
    http_metrics_observe(NULL, "BREW", 405, 100000);      /* an unknown method */
    http_metrics_observe(list, "GET", 299, 100000);       /* never sent by tocsin: 2xx */
    http_metrics_observe(list, "GET", 200, -5);           /* clock trouble: 0 */
    char *t = http_metrics_render();
    CHECK(t != NULL, "render");
    if (t == NULL)
        return 1;
    CHECK(strstr(t, "\ntocsin_http_requests_total{route=\"/v1/meetings\",method=\"POST\","
                    "status=\"201\"} 2\n") != NULL,
          "one label for one pattern:\n%s", t);
    CHECK(strstr(t, "{route=\"/v1/meetings\",method=\"GET\",status=\"200\"} 2\n") != NULL, "GET");
    CHECK(strstr(t, "{route=\"unmatched\",method=\"GET\",status=\"404\"} 1\n") != NULL, "404");
    CHECK(strstr(t, "{route=\"unmatched\",method=\"other\",status=\"405\"} 1\n") != NULL, "other");
    CHECK(strstr(t, "{route=\"/v1/meetings\",method=\"GET\",status=\"2xx\"} 1\n") != NULL, "2xx");
    CHECK(strstr(t, "tocsin_http_request_duration_seconds_bucket{route=\"/v1/meetings\","
                    "le=\"0.005\"} 3\n") != NULL,
          "le=0.005 holds 3 ms and the two tiny ones");
    CHECK(strstr(t, "tocsin_http_request_duration_seconds_bucket{route=\"/v1/meetings\","
                    "le=\"0.01\"} 4\n") != NULL,
          "le=0.01");
    CHECK(strstr(t, "tocsin_http_request_duration_seconds_bucket{route=\"/v1/meetings\","
                    "le=\"1\"} 4\n") != NULL,
          "le=1");
    CHECK(strstr(t, "tocsin_http_request_duration_seconds_bucket{route=\"/v1/meetings\","
                    "le=\"2.5\"} 5\n") != NULL,
          "le=2.5");
    CHECK(strstr(t, "tocsin_http_request_duration_seconds_count{route=\"/v1/meetings\"} 5\n") !=
              NULL,
          "count");
    CHECK(strstr(t, "tocsin_http_request_duration_seconds_sum{route=\"/v1/meetings\"} "
                    "2.010100000\n") != NULL,
          "sum in seconds");
    CHECK(strstr(t, "route=\"/healthz\"") == NULL, "routes never seen are left out");
    CHECK(strstr(t, "# TYPE tocsin_http_requests_total counter\n") != NULL &&
              strstr(t, "# TYPE tocsin_http_request_duration_seconds histogram\n") != NULL,
          "types");
    free(t);
    printf("test_http_metrics: %s\n", fails ? "FAILED" : "ok");
    return fails != 0;
}
