/* webhook.h -- the HTTP side of webhooks: checking a receiver URL at registration, and the shape of
 * the signed POST that outbound.h sends. Targets that resolve to non-public addresses are refused
 * unless allowed (netguard.h), at registration here and again on every connection in outbound.c,
 * so a DNS answer that changes in between cannot redirect a delivery. */
#ifndef TOCSIN_WEBHOOK_H
#define TOCSIN_WEBHOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "netguard.h"
#include "outbound.h"
#include "trace.h"
#include "webhook_sign.h"

#define WEBHOOK_URL_MAX 2048
#define WEBHOOK_ERR_MAX 160 /* = CODEC_MESSAGE_MAX: a reason fits a field error */

/* Checks a receiver URL: absolute http or https, a host, no user info, at most WEBHOOK_URL_MAX
 * bytes; unless allow_private, every address the host resolves to must be public. 0, or -1 with
 * a sentence for the client in why. May block on DNS. */
int webhook_url_check(const char *url, bool allow_private, char *why, size_t whylen);
/* The same for a webhook target under an allow-list (TOCSIN_WEBHOOK_ALLOW_NETS): a host among
 * allow's names passes whatever it resolves to; otherwise every address it resolves to must be
 * public or in allow's networks (all of them when allow->all). */
int webhook_target_check(const char *url, const struct netguard_allow *allow, char *why,
                         size_t whylen);
/* The host of url as libcurl connects to it (an IPv6 literal without brackets) into host: 0, or
 * -1 when url is not one webhook_url_check would take or the host does not fit in hostlen. */
int webhook_host(const char *url, char *host, size_t hostlen);

struct webhook_message {
    const char *url;
    const char *id;        /* webhook-id */
    int64_t timestamp_s;   /* webhook-timestamp */
    const char *signature; /* webhook-signature */
    const char *body;
    size_t body_len;
};

/* Storage for a request's header lines, owned by the caller while the request runs. */
struct webhook_request_buf {
    char id[WEBHOOK_ID_MAX + 16];
    char timestamp[48];
    char signature[WEBHOOK_SIGNATURES_LEN + 24];
    char traceparent[TRACE_PARENT_LEN + 16];
};
/* Fills r with the Standard Webhooks POST of m (header lines in b; r borrows m's strings and b),
 * with a traceparent whose trace id is derived from the webhook-id: every attempt of one
 * delivery, from any replica, carries the same trace id and a span id of its own (trace.h).
 * 0, or -1 when a header does not fit. */
int webhook_request(const struct webhook_message *m, struct webhook_request_buf *b,
                    struct outbound_request *r, int64_t timeout_ms);

#endif
