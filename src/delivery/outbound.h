/* outbound.h -- outgoing requests (libcurl lives only here and in the URL parsing of webhook.c and
 * redis_url.c): many POSTs in flight at once on one thread through libcurl's multi interface,
 * connections kept alive and reused per receiver. The address guard runs where the connection is
 * made (libcurl's open-socket callback), on every address libcurl tries, so neither a DNS answer
 * that changed since registration nor a proxy setting in the environment can lead a request to a
 * private address; proxies are never used. An outbound belongs to one thread, except
 * outbound_wakeup. */
#ifndef TOCSIN_OUTBOUND_H
#define TOCSIN_OUTBOUND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "netguard.h"

#define OUTBOUND_ERR_MAX 160       /* a short reason for the delivery record */
#define OUTBOUND_HEADERS_MAX 8     /* extra request headers */
#define OUTBOUND_HEADER_MAX 512    /* bytes of one "Name: value" */
#define OUTBOUND_RESPONSE_MAX 4096 /* bytes of a receiver's answer read; the rest ends the read */
#define OUTBOUND_RETRY_AFTER_MAX 86400 /* seconds of a Retry-After honoured at most */

struct outbound_request {
    const char *url;
    const char *headers[OUTBOUND_HEADERS_MAX]; /* "Name: value", NULL-terminated when fewer */
    const char *body;                          /* borrowed until the request is done */
    size_t body_len;
    int64_t timeout_ms;
    bool allow_private; /* may connect to loopback, private and link-local addresses */
    const struct netguard_allow *allow; /* or to those in its networks (NULL: none) */
    const char *refused_hint;           /* names the setting that allows a refused address */
    void *tag;                          /* the caller's, handed back in outbound_done */
};

/* One message to send over SMTP (libcurl's smtp:// and smtps://). The server is the operator's
 * own, so the address guard does not apply to it. */
struct outbound_mail {
    const char *url;      /* smtp://host[:port] (STARTTLS when offered) or smtps:// */
    const char *username; /* NULL: no AUTH */
    const char *password;
    bool require_tls; /* smtp://: fail unless STARTTLS works */
    const char *from, *to;
    const char *message; /* borrowed until done; CRLF line ends */
    size_t len;
    int64_t timeout_ms;
    void *tag;
};

struct outbound_done {
    void *tag;
    bool ok;                    /* a 2xx answer (mail: the server took the message) */
    long status;                /* the HTTP status (mail: the SMTP reply code), 0 when none */
    int64_t retry_after_s;      /* from a Retry-After (outbound_retry_after_s), 0 when none */
    char err[OUTBOUND_ERR_MAX]; /* why not ok */
};

struct outbound;

/* The seconds a Retry-After value asks to wait (RFC 9110 10.2.3): delay-seconds, or an HTTP-date
 * taken against now_s (one already past is 0); at most OUTBOUND_RETRY_AFTER_MAX, 0 when the value
 * is neither. value is the field's value, n bytes, not NUL-terminated, trailing CRLF allowed. */
int64_t outbound_retry_after_s(const char *value, size_t n, int64_t now_s);

/* Once per process, before any thread uses libcurl. 0 or -1. */
int outbound_global_init(void);

/* Keeps up to idle_max connections open for reuse once their requests are done. NULL when out of
 * memory. */
struct outbound *outbound_new(size_t idle_max);
/* Aborts what is in flight (no outbound_done for it) and frees o. NULL ok. */
void outbound_free(struct outbound *o);
/* Starts POSTing r. 0, or -1 with a reason in err when it cannot start (out of memory). */
int outbound_start(struct outbound *o, const struct outbound_request *r,
                   char err[OUTBOUND_ERR_MAX]);
/* Starts sending m. 0, or -1 with a reason in err when it cannot start. */
int outbound_start_mail(struct outbound *o, const struct outbound_mail *m,
                        char err[OUTBOUND_ERR_MAX]);
/* Runs the transfers, waiting up to wait_ms for one to make progress or for outbound_wakeup;
 * fills done[0..max) with finished requests and returns their count (the rest are kept for the
 * next call). */
size_t outbound_run(struct outbound *o, int64_t wait_ms, struct outbound_done *done, size_t max);
/* Requests in flight. */
size_t outbound_active(const struct outbound *o);
/* Ends a wait in outbound_run early. Any thread. */
void outbound_wakeup(struct outbound *o);

#endif
