/* http_routes.c -- the API's table of contents: every endpoint, its method and its handler. */
#include "http_routes.h"

const struct route http_routes[] = {
    {"GET", "/healthz", handle_healthz, ROUTE_PUBLIC},
    {"GET", "/readyz", handle_readyz, ROUTE_PUBLIC},
    {"GET", "/metrics", handle_metrics, ROUTE_PUBLIC},
    {"POST", "/v1/meetings", handle_meetings_post, 0},
    {"GET", "/v1/meetings", handle_meetings_list, 0},
    {"GET", "/v1/meetings/{id}", handle_meeting_get, 0},
    {"PUT", "/v1/meetings/{id}", handle_meeting_put, 0},
    {"PATCH", "/v1/meetings/{id}", handle_meeting_patch, 0},
    {"DELETE", "/v1/meetings/{id}", handle_meeting_delete, 0},
    {"GET", "/v1/meetings/{id}/deliveries", handle_meeting_deliveries, 0},
    {"POST", "/v1/webhooks", handle_webhooks_post, 0},
    {"GET", "/v1/webhooks", handle_webhooks_list, 0},
    {"DELETE", "/v1/webhooks/{id}", handle_webhook_delete, 0},
};

const size_t http_routes_count = sizeof(http_routes) / sizeof(http_routes[0]);
