/* http_routes.c -- the API's table of contents: every endpoint, its method, its handler and who
 * may call it (route.h's flags: API keys everywhere but the participant routes; browser tokens
 * with the scope named). */
#include "http_routes.h"

#define BROWSER_STREAM (ROUTE_NOTIFICATIONS | ROUTE_TOKEN_QUERY | ROUTE_ANY_ACCEPT)
#define ASSET (ROUTE_PUBLIC | ROUTE_ANY_ACCEPT)

const struct route http_routes[] = {
    {"GET", "/healthz", handle_healthz, ROUTE_PUBLIC | ROUTE_PROBE},
    {"GET", "/readyz", handle_readyz, ROUTE_PUBLIC | ROUTE_PROBE},
    {"GET", "/metrics", handle_metrics, ROUTE_PUBLIC | ROUTE_ANY_ACCEPT | ROUTE_PROBE},
    {"POST", "/v1/meetings", handle_meetings_post, ROUTE_WRITE},
    {"POST", "/v1/meetings/batch", handle_meetings_batch, ROUTE_API_KEY | ROUTE_BULK},
    {"GET", "/v1/meetings", handle_meetings_list, ROUTE_READ},
    {"GET", "/v1/meetings/{id}", handle_meeting_get, ROUTE_READ},
    {"PUT", "/v1/meetings/{id}", handle_meeting_put, ROUTE_WRITE},
    {"PATCH", "/v1/meetings/{id}", handle_meeting_patch, ROUTE_WRITE},
    {"DELETE", "/v1/meetings/{id}", handle_meeting_delete, ROUTE_WRITE},
    {"GET", "/v1/meetings/{id}/deliveries", handle_meeting_deliveries, ROUTE_API_KEY},
    {"GET", "/v1/meetings/{id}/occurrences", handle_occurrences_list, ROUTE_READ},
    {"PATCH", "/v1/meetings/{id}/occurrences/{original_start}", handle_occurrence_patch,
     ROUTE_WRITE},
    {"GET", "/v1/deliveries", handle_deliveries_list, ROUTE_API_KEY},
    {"GET", "/v1/deliveries/{id}", handle_delivery_get, ROUTE_API_KEY},
    {"POST", "/v1/deliveries/{id}/retry", handle_delivery_retry, ROUTE_API_KEY},
    {"GET", "/v1/stats", handle_stats, ROUTE_API_KEY},
    {"POST", "/v1/webhooks", handle_webhooks_post, ROUTE_API_KEY},
    {"GET", "/v1/webhooks", handle_webhooks_list, ROUTE_API_KEY},
    {"GET", "/v1/webhooks/{id}", handle_webhook_get, ROUTE_API_KEY},
    {"PATCH", "/v1/webhooks/{id}", handle_webhook_patch, ROUTE_API_KEY},
    {"DELETE", "/v1/webhooks/{id}", handle_webhook_delete, ROUTE_API_KEY},
    {"POST", "/v1/webhooks/{id}/recover", handle_webhook_recover, ROUTE_API_KEY},
    {"POST", "/v1/webhooks/{id}/rotate-secret", handle_webhook_rotate, ROUTE_API_KEY},
    {"POST", "/v1/signing-keys", handle_signing_keys_post, ROUTE_API_KEY},
    {"GET", "/v1/signing-keys", handle_signing_keys_list, ROUTE_API_KEY},
    {"DELETE", "/v1/signing-keys/{id}", handle_signing_key_delete, ROUTE_API_KEY},
    {"POST", "/v1/browser-tokens", handle_browser_tokens_post, ROUTE_API_KEY},
    {"GET", "/v1/stream", handle_stream, BROWSER_STREAM},
    {"GET", "/v1/me/notifications", handle_notifications, ROUTE_NOTIFICATIONS},
    {"POST", "/v1/me/notifications/read", handle_inbox_read, ROUTE_NOTIFICATIONS},
    {"PATCH", "/v1/me/notifications/{seq}", handle_inbox_patch, ROUTE_NOTIFICATIONS},
    {"POST", "/v1/me/notifications/{seq}/snooze", handle_inbox_snooze, ROUTE_NOTIFICATIONS},
    {"GET", "/v1/me/preferences", handle_me_prefs_get, ROUTE_NOTIFICATIONS},
    {"PUT", "/v1/me/preferences", handle_me_prefs_put, ROUTE_NOTIFICATIONS},
    {"GET", "/v1/participants/{id}/preferences", handle_participant_prefs_get, ROUTE_API_KEY},
    {"PUT", "/v1/participants/{id}/preferences", handle_participant_prefs_put, ROUTE_API_KEY},
    {"GET", "/v1/unsubscribe", handle_unsubscribe_get, ROUTE_PUBLIC | ROUTE_ANY_ACCEPT},
    {"POST", "/v1/unsubscribe", handle_unsubscribe_post, ROUTE_PUBLIC | ROUTE_ANY_ACCEPT},
    {"GET", "/v1/push/vapid-public-key", handle_push_vapid_key, ROUTE_PUSH | ROUTE_KEY_TOO},
    {"POST", "/v1/push/subscriptions", handle_push_subscriptions_post, ROUTE_PUSH},
    {"DELETE", "/v1/push/subscriptions/{id}", handle_push_subscription_delete, ROUTE_PUSH},
    {"GET", "/v1/client.js", handle_client_js, ASSET},
    {"GET", "/v1/sw.js", handle_sw_js, ASSET},
    {"GET", "/demo", handle_demo, ASSET},
    {"GET", "/console", handle_console, ASSET},
    {"GET", "/console/{file}", handle_console_file, ASSET},
};

const size_t http_routes_count = sizeof(http_routes) / sizeof(http_routes[0]);
