/* http_client.c -- a request's client (http_client.h): X-Forwarded-For lines gathered from MHD in
 * the order they came, the walk left to forwarded.c, the place to http_listen.c. */
#include "http_client.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "forwarded.h"
#include "http_listen.h"
#include "http_request.h"
#include "log.h"
#include "metrics.h"
#include "panic.h"
#include "timefmt.h"

/* " (and N more in the last S s)" with both numbers at their widest. */
#define HTTP_CLIENT_MORE_MAX 96

/* The X-Forwarded-For lines of a request: the last FORWARDED_FIELDS_MAX in a ring, and how many
 * there were. */
struct xff_lines {
    const char *ring[FORWARDED_FIELDS_MAX];
    size_t seen;
};

static enum MHD_Result
collect(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    struct xff_lines *x = cls;

    (void)kind;
    if (key != NULL && value != NULL && strcasecmp(key, "X-Forwarded-For") == 0)
        x->ring[x->seen++ % FORWARDED_FIELDS_MAX] = value;
    return MHD_YES;
}

/* One line now and then for a trusted proxy whose header could not be read: a misconfigured hop,
 * or a client inside a trusted network writing its own. */
static void
log_malformed(const struct sockaddr *peer)
{
    static struct log_throttle unreadable = LOG_THROTTLE_INIT(HTTP_CLIENT_LOG_EVERY_MS);
    char addr[INET6_ADDRSTRLEN] = "?", more[HTTP_CLIENT_MORE_MAX] = "";
    unsigned long unlogged;
    int64_t since_ms;

    if (!log_enabled(LOG_LEVEL_WARN) ||
        !log_throttle_take(&unreadable, timefmt_mono_ms(), &unlogged, &since_ms))
        return;
    const void *a = peer->sa_family == AF_INET6
                        ? (const void *)&((const struct sockaddr_in6 *)peer)->sin6_addr
                        : (const void *)&((const struct sockaddr_in *)peer)->sin_addr;
    inet_ntop(peer->sa_family, a, addr, sizeof addr);
    if (unlogged > 0)
        snprintf(more, sizeof more, " (and %lu more in the last %lld s)", unlogged,
                 (long long)since_ms / 1000);
    LOG_WARN("http: an X-Forwarded-For from trusted proxy %s cannot be read: the request counts "
             "as the proxy's own%s",
             addr, more);
}

enum api_error
http_client_take(struct request *rq, struct http_listener *l)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(rq->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct forwarded_proxies *trusted = &rq->cfg->trusted_proxies;
    struct xff_lines x = {{0}, 0};
    const char *lines[FORWARDED_FIELDS_MAX];

    /* MHD keeps the address of every connection it was given (http_listen.c hands them over). */
    TOCSIN_ASSERT(ci != NULL && ci->client_addr != NULL);
    const struct sockaddr *peer = ci->client_addr;
    if (!forwarded_trusted(trusted, peer)) { /* its connection holds the place */
        forwarded_client(trusted, peer, NULL, 0, false, &rq->client);
        return API_E_NONE;
    }
    MHD_get_connection_values(rq->conn, MHD_HEADER_KIND, collect, &x);
    size_t n = x.seen < FORWARDED_FIELDS_MAX ? x.seen : FORWARDED_FIELDS_MAX;
    for (size_t i = 0; i < n; i++)
        lines[i] = x.ring[(x.seen - n + i) % FORWARDED_FIELDS_MAX];
    if (forwarded_client(trusted, peer, lines, n, x.seen > n, &rq->client) == FORWARDED_MALFORMED)
        log_malformed(peer);
    if (!http_listen_client_take(l, (const struct sockaddr *)&rq->client)) {
        metrics_add(METRIC_HTTP_ADDR_REFUSED, 1);
        return API_E_TOO_MANY_CONNECTIONS;
    }
    rq->client_held = true;
    return API_E_NONE;
}

void
http_client_give(struct request *rq, struct http_listener *l)
{
    if (rq->client_held)
        http_listen_client_give(l, (const struct sockaddr *)&rq->client);
    rq->client_held = false;
}
