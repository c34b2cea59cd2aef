/* webhook.h -- the HTTP side of webhooks (libcurl lives only here): checking a receiver URL, and
 * POSTing one signed notification. Refuses targets that resolve to non-public addresses unless
 * allowed (netguard.h), at registration and again at every delivery, and pins the connection to
 * the address it checked so a DNS answer that changes in between cannot redirect it. */
#ifndef TOCSIN_WEBHOOK_H
#define TOCSIN_WEBHOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WEBHOOK_URL_MAX 2048
#define WEBHOOK_ERR_MAX 160       /* = CODEC_MESSAGE_MAX: a reason fits a field error */
#define WEBHOOK_RESPONSE_MAX 4096 /* bytes of a receiver's answer read, the rest discarded */

/* Once per process, before any thread uses libcurl. 0 or -1. */
int webhook_global_init(void);

/* Checks a receiver URL: absolute http or https, a host, no user info, at most WEBHOOK_URL_MAX
 * bytes; unless allow_private, every address the host resolves to must be public. 0, or -1 with
 * a sentence for the client in why. May block on DNS. */
int webhook_url_check(const char *url, bool allow_private, char *why, size_t whylen);

struct webhook_client;

/* One per delivery thread (keeps connections alive across POSTs). NULL when out of memory. */
struct webhook_client *webhook_client_new(int64_t timeout_ms, bool allow_private);
void webhook_client_free(struct webhook_client *wc);
/* Called on the posting thread during every request, at least about once a second, so that the
 * caller can do periodic work (renew its leases) while a slow receiver keeps it waiting. */
typedef void (*webhook_tick_fn)(void *arg);
void webhook_client_on_tick(struct webhook_client *wc, webhook_tick_fn fn, void *arg);

struct webhook_message {
    const char *url;
    const char *id;        /* webhook-id */
    int64_t timestamp_s;   /* webhook-timestamp */
    const char *signature; /* webhook-signature */
    const char *body;
    size_t body_len;
};

/* POSTs m. Returns 0 on a 2xx answer; -1 otherwise, with *status the HTTP status (0 when there
 * was none) and err a short reason for the delivery record. Never follows redirects. */
int webhook_post(struct webhook_client *wc, const struct webhook_message *m, long *status,
                 char err[WEBHOOK_ERR_MAX]);

#endif
