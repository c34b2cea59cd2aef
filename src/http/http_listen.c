/* http_listen.c -- the acceptor of http_listen.h. The thread owns the listening socket between
 * http_listen_start and http_listen_stop; the eventfd tells it to stop. */
#define _GNU_SOURCE /* accept4 */
#include "http_listen.h"

#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "addr_count.h"
#include "forwarded.h"
#include "log.h"
#include "metrics.h"
#include "panic.h"
#include "thread.h"
#include "timefmt.h"

#define WARN_EVERY_MS 10000 /* a failing accept is logged this often at most */
#define STREAM_REQUEST "GET /v1/stream"
_Static_assert(sizeof STREAM_REQUEST < HTTP_LISTEN_PEEK_MAX, "the peek holds the request's start");

/* A connection accepted before its first bytes came in (they tell its pool). */
struct waiting {
    int fd; /* -1: handed over already */
    socklen_t len;
    struct sockaddr_storage sa;
    int64_t until_ms; /* monotonic: then it goes to the API pool, bytes or not */
};

struct http_listener {
    int fd, stop;
    struct MHD_Daemon *pools[HTTP_POOLS];
    struct addr_count *per_addr; /* NULL until started */
    const struct forwarded_proxies *trusted;
    unsigned max;
    /* Accepted, waiting for their first bytes: a ring in order of acceptance, so of deadline. */
    struct waiting wait[HTTP_LISTEN_WAIT_MAX];
    size_t wait_head, wait_n;
    /* Handed over, not yet started by their thread (one that fails before it starts, out of
     * memory, stays counted, here and in its address's places). */
    atomic_long pending;
    pthread_t thread;
    bool started, stopped;
    int64_t paused_until_ms, warned_ms; /* monotonic */
};

struct http_listener *
http_listen_open(const struct sockaddr *sa, socklen_t len, char *err, size_t errlen)
{
    struct http_listener *l = calloc(1, sizeof *l);
    int one = 1;

    if (l == NULL) {
        snprintf(err, errlen, "http: out of memory");
        return NULL;
    }
    l->stop = eventfd(0, EFD_CLOEXEC);
    l->fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (l->fd >= 0) {
        /* As MHD did: restart at once on a port with connections in TIME_WAIT, and an IPv6
         * address takes IPv6 only. */
        setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (sa->sa_family == AF_INET6)
            setsockopt(l->fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    }
    if (l->stop < 0 || l->fd < 0 || bind(l->fd, sa, len) != 0 || listen(l->fd, SOMAXCONN) != 0) {
        snprintf(err, errlen, "%s", strerror(errno));
        http_listen_free(l);
        return NULL;
    }
    return l;
}

/* A connection's place in its address's count. A trusted proxy's connections take none: they
 * carry many clients, and each of its requests takes a place for the client it names instead
 * (http_listen_client_take). */
static bool
place_take(struct http_listener *l, const struct sockaddr *sa, socklen_t len)
{
    return forwarded_trusted(l->trusted, sa) || addr_count_take(l->per_addr, sa, len);
}

static void
place_give(struct http_listener *l, const struct sockaddr *sa, socklen_t len)
{
    if (!forwarded_trusted(l->trusted, sa))
        addr_count_give(l->per_addr, sa, len);
}

static bool
room(const struct http_listener *l)
{
    long pending = atomic_load(&l->pending);
    unsigned long open = (unsigned long)(pending > 0 ? pending : 0);

    for (int p = 0; p < HTTP_POOLS; p++) {
        const union MHD_DaemonInfo *i =
            MHD_get_daemon_info(l->pools[p], MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
        open += i != NULL ? i->num_connections : 0;
    }
    return open < l->max;
}

enum http_pool
http_listen_route(const char *head, size_t n)
{
    size_t k = sizeof STREAM_REQUEST - 1;

    return n > k && memcmp(head, STREAM_REQUEST, k) == 0 && (head[k] == ' ' || head[k] == '?')
               ? HTTP_POOL_STREAMS
               : HTTP_POOL_API;
}

/* An accept4 error that concerns one connection only: the client gave up before it was
 * accepted, a signal, or a network error already pending on it (accept(2) passes those on). */
static bool
transient(int e)
{
    switch (e) {
    case ECONNABORTED:
    case EINTR:
    case EPROTO:
    case EPERM:
    case ENETDOWN:
    case ENOPROTOOPT:
    case EHOSTDOWN:
    case ENONET:
    case EHOSTUNREACH:
    case EOPNOTSUPP:
    case ENETUNREACH:
        return true;
    default:
        return false;
    }
}

/* accept4 failed with errno. Anything but a transient error (out of descriptors or memory, most
 * likely) pauses accepting: the socket stays readable, so polling it again at once would spin. */
static void
accept_failed(struct http_listener *l)
{
    int e = errno;
    int64_t now = timefmt_mono_ms();

    if (transient(e))
        return;
    l->paused_until_ms = now + HTTP_LISTEN_ERROR_PAUSE_MS;
    if (now - l->warned_ms >= WARN_EVERY_MS) {
        l->warned_ms = now;
        LOG_WARN("http: cannot accept connections: %s (raise ulimit -n or lower "
                 "TOCSIN_HTTP_CONNECTIONS_MAX / TOCSIN_STREAMS_MAX)",
                 strerror(e));
    }
}

/* The first bytes fd has sent, up to HTTP_LISTEN_PEEK_MAX, left for MHD to read; 0 when none yet
 * (or the peer closed: MHD finds out). */
static size_t
peek(int fd, char head[HTTP_LISTEN_PEEK_MAX])
{
    ssize_t n = recv(fd, head, HTTP_LISTEN_PEEK_MAX, MSG_PEEK | MSG_DONTWAIT);

    return n > 0 ? (size_t)n : 0;
}

/* Hands a connection the acceptor counted (pending, its address's place) to the pool its first
 * bytes (head, n of them: what peek read) name. */
static void
hand_over(struct http_listener *l, int fd, const struct sockaddr_storage *sa, socklen_t len,
          const char *head, size_t n)
{
    enum http_pool pool = http_listen_route(head, n);

    if (pool == HTTP_POOL_STREAMS)
        metrics_add(METRIC_HTTP_STREAM_POOL, 1);
    /* On failure MHD has closed fd (out of memory). */
    if (MHD_add_connection(l->pools[pool], fd, (const struct sockaddr *)sa, len) != MHD_YES) {
        atomic_fetch_sub(&l->pending, 1);
        place_give(l, (const struct sockaddr *)sa, len);
    }
}

static struct waiting *
wait_at(struct http_listener *l, size_t k)
{
    return &l->wait[(l->wait_head + k) % HTTP_LISTEN_WAIT_MAX];
}

/* Drops the handed-over entries at the front of the ring. */
static void
wait_trim(struct http_listener *l)
{
    while (l->wait_n > 0 && wait_at(l, 0)->fd < 0) {
        l->wait_head = (l->wait_head + 1) % HTTP_LISTEN_WAIT_MAX;
        l->wait_n--;
    }
}

/* A new connection: handed over now when its first bytes are in or no place is left to wait,
 * else it waits for them. */
static void
arrived(struct http_listener *l, int fd, const struct sockaddr_storage *sa, socklen_t len)
{
    char head[HTTP_LISTEN_PEEK_MAX];

    /* Counted from here: its thread may start it before MHD_add_connection returns. */
    atomic_fetch_add(&l->pending, 1);
    size_t n = peek(fd, head);
    if (n > 0 || l->wait_n == HTTP_LISTEN_WAIT_MAX) {
        hand_over(l, fd, sa, len, head, n);
        return;
    }
    struct waiting *w = wait_at(l, l->wait_n++);
    w->fd = fd;
    w->sa = *sa;
    w->len = len;
    w->until_ms = timefmt_mono_ms() + HTTP_LISTEN_WAIT_MS;
}

/* Hands over the waiting connections whose bytes came in (ready[k]: the k-th waiting one's poll
 * result) and those whose wait is over. */
static void
wait_done(struct http_listener *l, const struct pollfd *ready, size_t n_ready)
{
    int64_t now = timefmt_mono_ms();
    char head[HTTP_LISTEN_PEEK_MAX];

    for (size_t k = 0; k < l->wait_n; k++) {
        struct waiting *w = wait_at(l, k);
        if (w->fd >= 0 && ((k < n_ready && ready[k].revents != 0) || now >= w->until_ms)) {
            size_t n = peek(w->fd, head);
            hand_over(l, w->fd, &w->sa, w->len, head, n);
            w->fd = -1;
        }
    }
    wait_trim(l);
}

/* Accepts what waits, up to a batch, while the daemons have room. */
static void
accept_ready(struct http_listener *l)
{
    for (int n = 0; n < HTTP_LISTEN_BATCH_MAX && room(l); n++) {
        struct sockaddr_storage sa;
        socklen_t len = sizeof sa;
        int fd = accept4(l->fd, (struct sockaddr *)&sa, &len, SOCK_CLOEXEC | SOCK_NONBLOCK);

        if (fd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                accept_failed(l);
            return;
        }
        if (!place_take(l, (struct sockaddr *)&sa, len)) {
            metrics_add(METRIC_HTTP_ADDR_REFUSED, 1);
            close(fd);
            continue;
        }
        arrived(l, fd, &sa, len);
    }
}

/* On stop: the connections still waiting are closed unanswered, as those in the backlog are. */
static void
wait_close_all(struct http_listener *l)
{
    for (size_t k = 0; k < l->wait_n; k++) {
        struct waiting *w = wait_at(l, k);
        if (w->fd >= 0) {
            close(w->fd);
            atomic_fetch_sub(&l->pending, 1);
            place_give(l, (struct sockaddr *)&w->sa, w->len);
            w->fd = -1;
        }
    }
    wait_trim(l);
}

/* How long the thread may sleep: until a pause ends, room is checked again, or a wait is over. */
static int
sleep_ms(const struct http_listener *l, int64_t now, bool paused, bool full)
{
    int64_t until = paused ? l->paused_until_ms : full ? now + HTTP_LISTEN_FULL_POLL_MS : -1;

    if (l->wait_n > 0) {
        int64_t first = l->wait[l->wait_head].until_ms;
        until = until < 0 || first < until ? first : until;
    }
    return until < 0 ? -1 : until <= now ? 0 : (int)(until - now);
}

static void *
listen_thread(void *arg)
{
    struct http_listener *l = arg;
    struct pollfd p[2 + HTTP_LISTEN_WAIT_MAX];

    thread_set_name("tocsin-accept");

    for (;;) {
        int64_t now = timefmt_mono_ms();
        bool paused = now < l->paused_until_ms, full = !paused && !room(l);
        p[0] = (struct pollfd){l->stop, POLLIN, 0};
        /* Not watched at all while paused or full: poll reports errors even with no events. */
        p[1] = (struct pollfd){paused || full ? -1 : l->fd, POLLIN, 0};
        for (size_t k = 0; k < l->wait_n; k++)
            p[2 + k] = (struct pollfd){wait_at(l, k)->fd, POLLIN | POLLRDHUP, 0};
        size_t n_wait = l->wait_n;

        if (poll(p, 2 + n_wait, sleep_ms(l, now, paused, full)) < 0 && errno != EINTR)
            l->paused_until_ms = timefmt_mono_ms() + HTTP_LISTEN_ERROR_PAUSE_MS;
        if (p[0].revents != 0) {
            wait_close_all(l);
            return NULL;
        }
        wait_done(l, p + 2, n_wait);
        if (p[1].fd >= 0 && p[1].revents != 0)
            accept_ready(l);
    }
}

unsigned
http_listen_daemon_limit(unsigned max, unsigned threads)
{
    return threads * (max + HTTP_LISTEN_BATCH_MAX);
}

int
http_listen_start(struct http_listener *l, struct MHD_Daemon *const pools[HTTP_POOLS], unsigned max,
                  unsigned per_addr, const struct forwarded_proxies *trusted)
{
    memcpy(l->pools, pools, sizeof l->pools);
    l->max = max;
    l->trusted = trusted;
    l->per_addr = addr_count_new(per_addr);
    if (l->per_addr == NULL || pthread_create(&l->thread, NULL, listen_thread, l) != 0)
        return -1;
    l->started = true;
    return 0;
}

void
http_listen_started(struct http_listener *l)
{
    atomic_fetch_sub(&l->pending, 1);
}

/* The length of an address the listener saw or a request named (IPv4 or IPv6). */
static socklen_t
len_of(const struct sockaddr *sa)
{
    return sa->sa_family == AF_INET6 ? (socklen_t)sizeof(struct sockaddr_in6)
                                     : (socklen_t)sizeof(struct sockaddr_in);
}

void
http_listen_closed(struct http_listener *l, const struct sockaddr *sa)
{
    place_give(l, sa, len_of(sa));
}

bool
http_listen_client_take(struct http_listener *l, const struct sockaddr *client)
{
    return addr_count_take(l->per_addr, client, len_of(client));
}

void
http_listen_client_give(struct http_listener *l, const struct sockaddr *client)
{
    addr_count_give(l->per_addr, client, len_of(client));
}

void
http_listen_stop(struct http_listener *l)
{
    uint64_t one = 1;
    ssize_t n;

    if (l == NULL || l->stopped)
        return;
    l->stopped = true;
    if (l->started) {
        while ((n = write(l->stop, &one, sizeof one)) < 0 && errno == EINTR)
            ;
        /* An eventfd counter of 1 cannot overflow: failing here, the thread would go on
         * handing connections to a daemon about to stop. */
        TOCSIN_ASSERT(n == (ssize_t)sizeof one);
        pthread_join(l->thread, NULL);
    }
    if (l->fd >= 0)
        close(l->fd);
    if (l->stop >= 0)
        close(l->stop);
    l->fd = l->stop = -1;
}

void
http_listen_free(struct http_listener *l)
{
    if (l == NULL)
        return;
    http_listen_stop(l);
    addr_count_free(l->per_addr);
    free(l);
}
