/* webhook.c -- libcurl behind webhook.h. The URL is parsed with curl's own URL API so the host we
 * check is the host curl connects to; resolution is ours (getaddrinfo) so we can judge every
 * address, and CURLOPT_RESOLVE then pins curl to the first address we judged. */
#include "webhook.h"

#include <curl/curl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "netguard.h"

#define HOST_PIN_MAX 400 /* "host:port:[address]" */

struct webhook_client {
    CURL *curl;
    int64_t timeout_ms;
    bool allow_private;
    size_t got; /* response bytes seen */
    webhook_tick_fn tick;
    void *tick_arg;
};

int
webhook_global_init(void)
{
    return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

struct target {
    char host[256];
    char port[8];
    char addr[64]; /* the first address the host resolved to, numeric */
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

/* Resolves t->host; unless allow_private, refuses when any address is not public. Keeps the first
 * address in t->addr. */
static int
resolve(struct target *t, bool allow_private, char *why, size_t whylen)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc = 0;

    if (getaddrinfo(t->host, t->port, &hints, &res) != 0 || res == NULL)
        return say(why, whylen, "host does not resolve");
    for (struct addrinfo *ai = res; ai != NULL && rc == 0; ai = ai->ai_next)
        if (!allow_private && !netguard_public(ai->ai_addr))
            rc = say(why, whylen,
                     "resolves to a loopback, private or link-local address (set "
                     "TOCSIN_WEBHOOK_ALLOW_PRIVATE=1 to allow)");
    if (rc == 0 && getnameinfo(res->ai_addr, res->ai_addrlen, t->addr, sizeof t->addr, NULL, 0,
                               NI_NUMERICHOST) != 0)
        rc = say(why, whylen, "host does not resolve");
    freeaddrinfo(res);
    return rc;
}

int
webhook_url_check(const char *url, bool allow_private, char *why, size_t whylen)
{
    struct target t;

    if (parse(url, &t, why, whylen) != 0)
        return -1;
    return allow_private ? 0 : resolve(&t, false, why, whylen);
}

struct webhook_client *
webhook_client_new(int64_t timeout_ms, bool allow_private)
{
    struct webhook_client *wc = calloc(1, sizeof *wc);

    if (wc == NULL || (wc->curl = curl_easy_init()) == NULL) {
        free(wc);
        return NULL;
    }
    wc->timeout_ms = timeout_ms;
    wc->allow_private = allow_private;
    return wc;
}

void
webhook_client_free(struct webhook_client *wc)
{
    if (wc == NULL)
        return;
    curl_easy_cleanup(wc->curl);
    free(wc);
}

void
webhook_client_on_tick(struct webhook_client *wc, webhook_tick_fn fn, void *arg)
{
    wc->tick = fn;
    wc->tick_arg = arg;
}

/* libcurl's progress callback: runs often during a transfer, idle or not. */
static int
progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
    struct webhook_client *wc = arg;

    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    if (wc->tick != NULL)
        wc->tick(wc->tick_arg);
    return 0;
}

/* Receivers' answers are not used: read at most WEBHOOK_RESPONSE_MAX bytes, then stop. */
static size_t
discard(char *ptr, size_t size, size_t nmemb, void *arg)
{
    struct webhook_client *wc = arg;

    (void)ptr;
    wc->got += size * nmemb;
    return wc->got > WEBHOOK_RESPONSE_MAX ? 0 : size * nmemb;
}

static struct curl_slist *
headers_of(const struct webhook_message *m)
{
    char line[WEBHOOK_ERR_MAX + 64];
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");

    snprintf(line, sizeof line, "webhook-id: %s", m->id);
    h = curl_slist_append(h, line);
    snprintf(line, sizeof line, "webhook-timestamp: %lld", (long long)m->timestamp_s);
    h = curl_slist_append(h, line);
    snprintf(line, sizeof line, "webhook-signature: %s", m->signature);
    h = curl_slist_append(h, line);
    h = curl_slist_append(h, "Expect:"); /* no 100-continue round trip */
    return curl_slist_append(h, "User-Agent: tocsin");
}

int
webhook_post(struct webhook_client *wc, const struct webhook_message *m, long *status,
             char err[WEBHOOK_ERR_MAX])
{
    struct target t;
    char pin[HOST_PIN_MAX];
    struct curl_slist *pins = NULL, *hdrs;
    CURL *c = wc->curl;
    CURLcode cc;

    *status = 0;
    if (parse(m->url, &t, err, WEBHOOK_ERR_MAX) != 0 ||
        resolve(&t, wc->allow_private, err, WEBHOOK_ERR_MAX) != 0)
        return -1;
    snprintf(pin, sizeof pin, "%s:%s:%s%s%s", t.host, t.port, strchr(t.addr, ':') ? "[" : "",
             t.addr, strchr(t.addr, ':') ? "]" : "");
    pins = curl_slist_append(NULL, pin);
    hdrs = headers_of(m);
    wc->got = 0;
    curl_easy_setopt(c, CURLOPT_URL, m->url);
    curl_easy_setopt(c, CURLOPT_RESOLVE, pins);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)wc->timeout_ms);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, m->body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)m->body_len);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, wc);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, wc->tick == NULL ? 1L : 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, wc);
    cc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    curl_easy_setopt(c, CURLOPT_RESOLVE, NULL);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(pins);
    curl_slist_free_all(hdrs);
    if (cc != CURLE_OK && !(cc == CURLE_WRITE_ERROR && *status >= 200 && *status < 300)) {
        snprintf(err, WEBHOOK_ERR_MAX, "%s", curl_easy_strerror(cc));
        return -1;
    }
    if (*status < 200 || *status > 299) {
        snprintf(err, WEBHOOK_ERR_MAX, "HTTP %ld", *status);
        return -1;
    }
    return 0;
}
