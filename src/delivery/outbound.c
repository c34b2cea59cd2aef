/* outbound.c -- the multi-interface transfers of outbound.h. Each request is one easy handle with
 * its own small state (Retry-After, bytes read, a refused address); finished handles are kept in
 * a free list so their buffers are reused, while the connection cache lives in the multi handle
 * and outlives them. libcurl is driven by socket events (curl_multi_socket_action on an epoll set
 * that its socket callback keeps): curl_multi_perform runs every transfer in flight on each call,
 * and each that waits for its answer costs a poll(2) of its socket, which in a burst of 50,000
 * was ten polls per delivery with 16 or so requests out per worker. */
#include "outbound.h"

#include <curl/curl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "netguard.h"

#define POLL_SLICE_MS 1000 /* one wait for events lasts at most this */
#define EVENTS_MAX 64      /* socket events taken from one epoll_wait; the rest wait for the next */
/* Bytes of a Retry-After HTTP-date read at most ("Sun, 06 Nov 1994 08:49:37 GMT" is 29). */
#define OUTBOUND_DATE_MAX 64

struct xfer {
    CURL *easy;
    struct curl_slist *headers;
    void *tag;
    size_t got;
    int64_t retry_after_s;
    bool refused; /* the guard refused an address */
    char refused_addr[INET6_ADDRSTRLEN];
    bool trusted; /* private addresses allowed: the operator's SMTP server, or by setting */
    const struct netguard_allow *allow; /* private networks allowed besides (NULL: none) */
    const char *refused_hint;
    bool mail;
    const char *upload; /* SMTP: the message being read by libcurl */
    size_t upload_len, upload_at;
    struct curl_slist *rcpt;
    struct outbound *o;
    struct xfer *prev, *next; /* the active list, or (next only) the free list */
};

struct outbound {
    CURLM *multi;
    int epfd; /* the sockets libcurl asks to be watched, and wake */
    int wake; /* an eventfd: outbound_wakeup */
    size_t active;
    struct xfer *running; /* in flight, so that outbound_free can abort them */
    struct xfer *free;
};

int
outbound_global_init(void)
{
    return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

/* libcurl's socket callback: what to watch on s (in, out, both), or to stop watching it (before
 * libcurl closes it). socketp is set once s is in the epoll set. */
static int
watch(CURL *easy, curl_socket_t s, int what, void *arg, void *socketp)
{
    struct outbound *o = arg;
    struct epoll_event ev = {.data.fd = s};

    (void)easy;
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(o->epfd, EPOLL_CTL_DEL, s, NULL);
        return 0;
    }
    ev.events = ((what & CURL_POLL_IN) ? EPOLLIN : 0) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0);
    int op = socketp != NULL ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    if (epoll_ctl(o->epfd, op, s, &ev) != 0 &&
        epoll_ctl(o->epfd, op == EPOLL_CTL_ADD ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, s, &ev) != 0)
        return -1; /* libcurl fails the transfer */
    if (socketp == NULL)
        curl_multi_assign(o->multi, s, o);
    return 0;
}

struct outbound *
outbound_new(size_t idle_max)
{
    struct outbound *o = calloc(1, sizeof *o);

    if (o == NULL)
        return NULL;
    o->epfd = epoll_create1(EPOLL_CLOEXEC);
    o->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = o->wake};
    if (o->epfd < 0 || o->wake < 0 || epoll_ctl(o->epfd, EPOLL_CTL_ADD, o->wake, &ev) != 0 ||
        (o->multi = curl_multi_init()) == NULL) {
        if (o->epfd >= 0)
            close(o->epfd);
        if (o->wake >= 0)
            close(o->wake);
        free(o);
        return NULL;
    }
    curl_multi_setopt(o->multi, CURLMOPT_SOCKETFUNCTION, watch);
    curl_multi_setopt(o->multi, CURLMOPT_SOCKETDATA, o);
    /* libcurl's default cache holds 4 connections per request added at the moment one is
     * returned: when a wave of requests ends (a receiver's share, answered together) the last
     * ones back found a cache of 4 to 8 and closed the others, and the next wave connected
     * again. */
    curl_multi_setopt(o->multi, CURLMOPT_MAXCONNECTS, (long)idle_max);
    return o;
}

static void
xfer_free(struct xfer *x)
{
    curl_easy_cleanup(x->easy);
    curl_slist_free_all(x->headers);
    curl_slist_free_all(x->rcpt);
    free(x);
}

void
outbound_free(struct outbound *o)
{
    if (o == NULL)
        return;
    while (o->running != NULL) {
        struct xfer *x = o->running;
        o->running = x->next;
        curl_multi_remove_handle(o->multi, x->easy);
        xfer_free(x);
    }
    while (o->free != NULL) {
        struct xfer *x = o->free;
        o->free = x->next;
        xfer_free(x);
    }
    curl_multi_cleanup(o->multi); /* may still call watch: the epoll set closes after it */
    close(o->epfd);
    close(o->wake);
    free(o);
}

/* The guard, where libcurl opens each socket: every address it tries is judged. */
static curl_socket_t
open_socket(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
    struct xfer *x = arg;

    if (purpose == CURLSOCKTYPE_IPCXN && !x->trusted && !netguard_allowed(x->allow, &a->addr)) {
        x->refused = true;
        getnameinfo(&a->addr, a->addrlen, x->refused_addr, sizeof x->refused_addr, NULL, 0,
                    NI_NUMERICHOST);
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype, a->protocol);
}

/* Answers are not used: read at most OUTBOUND_RESPONSE_MAX bytes, then stop. */
static size_t
discard(char *ptr, size_t size, size_t nmemb, void *arg)
{
    struct xfer *x = arg;

    (void)ptr;
    x->got += size * nmemb;
    return x->got > OUTBOUND_RESPONSE_MAX ? 0 : size * nmemb;
}

int64_t
outbound_retry_after_s(const char *value, size_t n, int64_t now_s)
{
    char date[OUTBOUND_DATE_MAX + 1];
    int64_t v = 0;
    size_t i = 0;

    while (i < n && (value[i] == ' ' || value[i] == '\t'))
        i++;
    while (n > i && (value[n - 1] == '\r' || value[n - 1] == '\n' || value[n - 1] == ' ' ||
                     value[n - 1] == '\t'))
        n--;
    if (i < n && value[i] >= '0' && value[i] <= '9') {
        for (; i < n && value[i] >= '0' && value[i] <= '9' && v <= OUTBOUND_RETRY_AFTER_MAX; i++)
            v = v * 10 + (value[i] - '0');
    } else if (n - i > 0 && n - i <= OUTBOUND_DATE_MAX) {
        memcpy(date, value + i, n - i);
        date[n - i] = '\0';
        time_t t = curl_getdate(date, NULL); /* the three date forms HTTP allows, and more */
        v = t == (time_t)-1 || (int64_t)t <= now_s ? 0 : (int64_t)t - now_s;
    }
    return v > OUTBOUND_RETRY_AFTER_MAX ? OUTBOUND_RETRY_AFTER_MAX : v;
}

/* Keeps a Retry-After: how long the receiver asked to be left alone. */
static size_t
header(char *line, size_t size, size_t nitems, void *arg)
{
    struct xfer *x = arg;
    size_t n = size * nitems;
    static const char name[] = "retry-after:";

    if (n > sizeof name && strncasecmp(line, name, sizeof name - 1) == 0)
        x->retry_after_s = outbound_retry_after_s(line + sizeof name - 1, n - (sizeof name - 1),
                                                  (int64_t)time(NULL));
    return n;
}

static struct xfer *
xfer_get(struct outbound *o)
{
    struct xfer *x = o->free;

    if (x != NULL) {
        o->free = x->next;
        curl_easy_reset(x->easy);
    } else if ((x = calloc(1, sizeof *x)) == NULL || (x->easy = curl_easy_init()) == NULL) {
        free(x);
        return NULL;
    }
    curl_slist_free_all(x->headers);
    curl_slist_free_all(x->rcpt);
    x->headers = x->rcpt = NULL;
    x->got = 0;
    x->retry_after_s = 0;
    x->refused = x->trusted = x->mail = false;
    x->refused_addr[0] = '\0';
    x->allow = NULL;
    x->refused_hint = NULL;
    x->upload = NULL;
    x->upload_len = x->upload_at = 0;
    x->o = o;
    return x;
}

static void
xfer_put(struct outbound *o, struct xfer *x)
{
    x->next = o->free;
    o->free = x;
}

static void
running_add(struct outbound *o, struct xfer *x)
{
    x->prev = NULL;
    x->next = o->running;
    if (o->running != NULL)
        o->running->prev = x;
    o->running = x;
    o->active++;
}

static void
running_remove(struct outbound *o, struct xfer *x)
{
    if (x->prev != NULL)
        x->prev->next = x->next;
    else
        o->running = x->next;
    if (x->next != NULL)
        x->next->prev = x->prev;
    o->active--;
}

static void
setup(struct xfer *x, const struct outbound_request *r)
{
    CURL *c = x->easy;

    curl_easy_setopt(c, CURLOPT_URL, r->url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_PROXY, ""); /* never a proxy, whatever the environment says */
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)r->timeout_ms);
    curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, open_socket);
    curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, x);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, x->headers);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, r->body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(c, CURLOPT_PRIVATE, x);
}

int
outbound_start(struct outbound *o, const struct outbound_request *r, char err[OUTBOUND_ERR_MAX])
{
    struct xfer *x = xfer_get(o);
    bool bad = x == NULL;

    for (size_t i = 0; !bad && i < OUTBOUND_HEADERS_MAX && r->headers[i] != NULL; i++) {
        struct curl_slist *h = curl_slist_append(x->headers, r->headers[i]);
        bad = h == NULL;
        x->headers = bad ? x->headers : h;
    }
    if (!bad) {
        struct curl_slist *h = curl_slist_append(x->headers, "Expect:"); /* no 100-continue */
        bad = h == NULL || (h = curl_slist_append(x->headers = h, "User-Agent: tocsin")) == NULL;
        x->headers = bad ? x->headers : h;
    }
    if (!bad) {
        x->tag = r->tag;
        x->trusted = r->allow_private;
        x->allow = r->allow;
        x->refused_hint = r->refused_hint;
        setup(x, r);
        bad = curl_multi_add_handle(o->multi, x->easy) != CURLM_OK;
    }
    if (bad) {
        snprintf(err, OUTBOUND_ERR_MAX, "out of memory starting a request");
        if (x != NULL)
            xfer_put(o, x);
        return -1;
    }
    running_add(o, x);
    return 0;
}

/* libcurl reads the SMTP message from here. */
static size_t
read_upload(char *buf, size_t size, size_t nitems, void *arg)
{
    struct xfer *x = arg;
    size_t n = x->upload_len - x->upload_at;

    if (n > size * nitems)
        n = size * nitems;
    memcpy(buf, x->upload + x->upload_at, n);
    x->upload_at += n;
    return n;
}

int
outbound_start_mail(struct outbound *o, const struct outbound_mail *m, char err[OUTBOUND_ERR_MAX])
{
    struct xfer *x = xfer_get(o);
    CURL *c;

    if (x == NULL || (x->rcpt = curl_slist_append(NULL, m->to)) == NULL) {
        snprintf(err, OUTBOUND_ERR_MAX, "out of memory starting a message");
        if (x != NULL)
            xfer_put(o, x);
        return -1;
    }
    c = x->easy;
    x->tag = m->tag;
    x->trusted = x->mail = true;
    x->upload = m->message;
    x->upload_len = m->len;
    curl_easy_setopt(c, CURLOPT_URL, m->url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "smtp,smtps");
    curl_easy_setopt(c, CURLOPT_PROXY, "");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)m->timeout_ms);
    curl_easy_setopt(c, CURLOPT_USE_SSL, (long)(m->require_tls ? CURLUSESSL_ALL : CURLUSESSL_TRY));
    if (m->username != NULL) {
        curl_easy_setopt(c, CURLOPT_USERNAME, m->username);
        curl_easy_setopt(c, CURLOPT_PASSWORD, m->password ? m->password : "");
    }
    curl_easy_setopt(c, CURLOPT_MAIL_FROM, m->from);
    curl_easy_setopt(c, CURLOPT_MAIL_RCPT, x->rcpt);
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)m->len);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, read_upload);
    curl_easy_setopt(c, CURLOPT_READDATA, x);
    curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, open_socket);
    curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, x);
    curl_easy_setopt(c, CURLOPT_PRIVATE, x);
    if (curl_multi_add_handle(o->multi, c) != CURLM_OK) {
        snprintf(err, OUTBOUND_ERR_MAX, "cannot start a message");
        xfer_put(o, x);
        return -1;
    }
    running_add(o, x);
    return 0;
}

static void
finish(struct outbound *o, CURLMsg *m, struct outbound_done *d)
{
    struct xfer *x = NULL;
    CURLcode cc = m->data.result;

    curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
    *d = (struct outbound_done){.tag = x->tag, .retry_after_s = x->retry_after_s};
    curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE, &d->status);
    /* A final status line that came is the receiver's answer, whatever became of the body after
     * it (cut, timed out, or a long one this side stopped reading): a 2xx took the delivery, and
     * sending it again would repeat it. An interim one (1xx) answers nothing. */
    bool answered = cc == CURLE_OK || d->status >= 200;
    if (!answered)
        d->status = 0;
    d->ok = x->mail ? cc == CURLE_OK : answered && d->status >= 200 && d->status <= 299;
    if (x->refused)
        snprintf(d->err, sizeof d->err,
                 "refused: the host resolves to %s, a loopback, private or reserved address%s%s",
                 x->refused_addr[0] ? x->refused_addr : "an address",
                 x->refused_hint ? " not allowed by " : "", x->refused_hint ? x->refused_hint : "");
    else if (x->mail && !d->ok)
        snprintf(d->err, sizeof d->err, "SMTP %ld: %s", d->status, curl_easy_strerror(cc));
    else if (!answered)
        snprintf(d->err, sizeof d->err, "%s", curl_easy_strerror(cc));
    else if (!d->ok)
        snprintf(d->err, sizeof d->err, "HTTP %ld", d->status);
    curl_multi_remove_handle(o->multi, m->easy_handle);
    running_remove(o, x);
    xfer_put(o, x);
}

/* Finished transfers into done[0..max); the rest stay queued in libcurl for the next call. */
static size_t
collect(struct outbound *o, struct outbound_done *done, size_t max)
{
    int left = 0;
    size_t n = 0;
    CURLMsg *m;

    while (n < max && (m = curl_multi_info_read(o->multi, &left)) != NULL)
        if (m->msg == CURLMSG_DONE)
            finish(o, m, &done[n++]);
    return n;
}

/* Runs libcurl's timeouts when one is due (a request just added is one, due at once), and
 * returns how long until the next (-1: none). */
static long
run_timeouts(struct outbound *o)
{
    long t = -1;
    int running;

    curl_multi_timeout(o->multi, &t);
    if (t == 0) {
        curl_multi_socket_action(o->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        curl_multi_timeout(o->multi, &t);
    }
    return t;
}

size_t
outbound_run(struct outbound *o, int64_t wait_ms, struct outbound_done *done, size_t max)
{
    struct epoll_event ev[EVENTS_MAX];
    int wait = wait_ms > POLL_SLICE_MS ? POLL_SLICE_MS : wait_ms < 0 ? 0 : (int)wait_ms;
    int running;
    size_t n;
    long t;

    if ((n = collect(o, done, max)) > 0)
        return n;
    t = run_timeouts(o);
    if ((n = collect(o, done, max)) > 0)
        return n;
    if (t >= 0 && t < wait)
        wait = (int)t;
    int k = epoll_wait(o->epfd, ev, EVENTS_MAX, wait);
    for (int i = 0; i < k; i++) {
        if (ev[i].data.fd == o->wake) {
            uint64_t v;
            ssize_t got = read(o->wake, &v, sizeof v); /* zeroes the count (EAGAIN: zero already) */
            (void)got;
            continue;
        }
        int bits = ((ev[i].events & EPOLLIN) ? CURL_CSELECT_IN : 0) |
                   ((ev[i].events & EPOLLOUT) ? CURL_CSELECT_OUT : 0) |
                   ((ev[i].events & (EPOLLERR | EPOLLHUP)) ? CURL_CSELECT_ERR : 0);
        curl_multi_socket_action(o->multi, ev[i].data.fd, bits, &running);
    }
    run_timeouts(o);
    return collect(o, done, max);
}

size_t
outbound_active(const struct outbound *o)
{
    return o->active;
}

void
outbound_wakeup(struct outbound *o)
{
    uint64_t one = 1;
    ssize_t put = write(o->wake, &one, sizeof one); /* fails only when full: woken either way */

    (void)put;
}
