/* http_routes.h -- the route table (defined in http_routes.c) and the handlers it names. */
#ifndef TOCSIN_HTTP_ROUTES_H
#define TOCSIN_HTTP_ROUTES_H

#include "route.h"

extern const struct route http_routes[];
extern const size_t http_routes_count;

int handle_healthz(struct request *rq);
int handle_readyz(struct request *rq);
int handle_metrics(struct request *rq);
int handle_meetings_post(struct request *rq);
int handle_meetings_batch(struct request *rq);
int handle_meetings_list(struct request *rq);
int handle_meeting_get(struct request *rq);
int handle_meeting_put(struct request *rq);
int handle_meeting_patch(struct request *rq);
int handle_meeting_delete(struct request *rq);
int handle_meeting_deliveries(struct request *rq);
int handle_deliveries_list(struct request *rq);
int handle_stats(struct request *rq);
int handle_delivery_get(struct request *rq);
int handle_delivery_retry(struct request *rq);
int handle_webhook_recover(struct request *rq);
int handle_webhook_get(struct request *rq);
int handle_webhook_patch(struct request *rq);
int handle_webhook_rotate(struct request *rq);
int handle_occurrences_list(struct request *rq);
int handle_occurrence_patch(struct request *rq);
int handle_webhooks_post(struct request *rq);
int handle_webhooks_list(struct request *rq);
int handle_webhook_delete(struct request *rq);
int handle_signing_keys_post(struct request *rq);
int handle_signing_keys_list(struct request *rq);
int handle_signing_key_delete(struct request *rq);
int handle_browser_tokens_post(struct request *rq);
int handle_stream(struct request *rq);
int handle_notifications(struct request *rq);
int handle_inbox_patch(struct request *rq);
int handle_inbox_read(struct request *rq);
int handle_inbox_snooze(struct request *rq);
int handle_me_prefs_get(struct request *rq);
int handle_me_prefs_put(struct request *rq);
int handle_participant_prefs_get(struct request *rq);
int handle_participant_prefs_put(struct request *rq);
int handle_unsubscribe_get(struct request *rq);
int handle_unsubscribe_post(struct request *rq);
int handle_client_js(struct request *rq);
int handle_demo(struct request *rq);
int handle_console(struct request *rq);
int handle_console_file(struct request *rq);
int handle_sw_js(struct request *rq);
int handle_push_vapid_key(struct request *rq);
int handle_push_subscriptions_post(struct request *rq);
int handle_push_subscription_delete(struct request *rq);

#endif
