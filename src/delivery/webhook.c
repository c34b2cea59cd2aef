/* webhook.c -- webhook.h's URL check and request shape. The URL is parsed with curl's own URL API
 * so the host we check is the host curl connects to; at registration every address it resolves to
 * is judged (getaddrinfo); at delivery outbound.c judges the address of each connection. */
#include "webhook.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "netguard.h"

struct target {
    char host[256];
    char port[8];
};

static int
say(char *why, size_t whylen, const char *text)
{
    snprintf(why, whylen, "%s", text);
    return -1;
}

/* Splits url into host and port with curl's parser, checking the shape. */
static int
parse(const char *url, struct target *t, char *why, size_t whylen)
{
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *port = NULL, *user = NULL;
    int rc = -1;

    if (strlen(url) > WEBHOOK_URL_MAX)
        rc = say(why, whylen, "must be at most 2048 bytes");
    else if (u == NULL || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK)
        rc = say(why, whylen, "must be an absolute http or https URL");
    else if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
             (strcasecmp(scheme, "http") != 0 && strcasecmp(scheme, "https") != 0))
        rc = say(why, whylen, "scheme must be http or https");
    else if (curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK)
        rc = say(why, whylen, "must not contain user information");
    else if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || host[0] == '\0' ||
             strlen(host) >= sizeof t->host)
        rc = say(why, whylen, "must name a host");
    else if (curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK)
        rc = say(why, whylen, "has an invalid port");
    else {
        /* IPv6 literals come back bracketed; getaddrinfo wants them bare. */
        size_t hl = strlen(host);
        if (host[0] == '[' && hl > 2)
            snprintf(t->host, sizeof t->host, "%.*s", (int)(hl - 2), host + 1);
        else
            snprintf(t->host, sizeof t->host, "%s", host);
        snprintf(t->port, sizeof t->port, "%s", port);
        rc = 0;
    }
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(user);
    curl_url_cleanup(u);
    return rc;
}

/* Resolves t->host and refuses it when any of its addresses is not allowed (netguard_allowed),
 * naming the address; hint, when not NULL, says which setting would allow it. */
static int
resolve_allowed(const struct target *t, const struct netguard_allow *allow, const char *hint,
                char *why, size_t whylen)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    char addr[INET6_ADDRSTRLEN] = "";
    int rc = 0;

    if (getaddrinfo(t->host, t->port, &hints, &res) != 0 || res == NULL)
        return say(why, whylen, "host does not resolve");
    for (struct addrinfo *ai = res; ai != NULL && rc == 0; ai = ai->ai_next) {
        if (netguard_allowed(allow, ai->ai_addr))
            continue;
        getnameinfo(ai->ai_addr, ai->ai_addrlen, addr, sizeof addr, NULL, 0, NI_NUMERICHOST);
        snprintf(why, whylen, "resolves to %s, a loopback, private or reserved address%s%s%s", addr,
                 hint ? " (allow it with " : "", hint ? hint : "", hint ? ")" : "");
        rc = -1;
    }
    freeaddrinfo(res);
    return rc;
}

int
webhook_url_check(const char *url, bool allow_private, char *why, size_t whylen)
{
    struct target t;

    if (parse(url, &t, why, whylen) != 0)
        return -1;
    return allow_private ? 0 : resolve_allowed(&t, NULL, NULL, why, whylen);
}

int
webhook_target_check(const char *url, const struct netguard_allow *allow, char *why, size_t whylen)
{
    struct target t;

    if (parse(url, &t, why, whylen) != 0)
        return -1;
    if ((allow != NULL && allow->all) || netguard_allow_host(allow, t.host))
        return 0;
    return resolve_allowed(&t, allow, "TOCSIN_WEBHOOK_ALLOW_NETS", why, whylen);
}

int
webhook_host(const char *url, char *host, size_t hostlen)
{
    struct target t;
    char why[WEBHOOK_ERR_MAX];

    if (parse(url, &t, why, sizeof why) != 0 || strlen(t.host) >= hostlen)
        return -1;
    memcpy(host, t.host, strlen(t.host) + 1);
    return 0;
}

/* The header lines fit any id shorter than WEBHOOK_ID_MAX (an occurrence id is, channel.c), any
 * int64 timestamp and a signature; a longer id may be signed and still not fit its line. */
#define INT64_TEXT_MAX 20 /* "-9223372036854775808" */
#define BUF_FITS(member, prefix, text_max)                                                         \
    _Static_assert(sizeof(((struct webhook_request_buf *)0)->member) >=                            \
                       sizeof(prefix) + (text_max),                                                \
                   "a " prefix "line fits")
BUF_FITS(id, "webhook-id: ", WEBHOOK_ID_MAX - 1);
BUF_FITS(timestamp, "webhook-timestamp: ", INT64_TEXT_MAX);
BUF_FITS(signature, "webhook-signature: ", WEBHOOK_SIGNATURES_LEN);

int
webhook_request(const struct webhook_message *m, struct webhook_request_buf *b,
                struct outbound_request *r, int64_t timeout_ms)
{
    int n1 = snprintf(b->id, sizeof b->id, "webhook-id: %s", m->id);
    int n2 = snprintf(b->timestamp, sizeof b->timestamp, "webhook-timestamp: %lld",
                      (long long)m->timestamp_s);
    int n3 = snprintf(b->signature, sizeof b->signature, "webhook-signature: %s", m->signature);
    char tp[TRACE_PARENT_LEN + 1];

    if (n1 < 0 || (size_t)n1 >= sizeof b->id || n2 < 0 || (size_t)n2 >= sizeof b->timestamp ||
        n3 < 0 || (size_t)n3 >= sizeof b->signature)
        return -1;
    /* Without random bytes there is no span id: the request goes without a traceparent. */
    if (trace_parent_for(m->id, tp) == 0)
        snprintf(b->traceparent, sizeof b->traceparent, "traceparent: %s", tp);
    else
        b->traceparent[0] = '\0';
    *r = (struct outbound_request){.url = m->url,
                                   .headers = {"Content-Type: application/json", b->id,
                                               b->timestamp, b->signature,
                                               b->traceparent[0] ? b->traceparent : NULL, NULL},
                                   .body = m->body,
                                   .body_len = m->body_len,
                                   .timeout_ms = timeout_ms};
    return 0;
}
