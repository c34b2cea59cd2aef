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

#include "log.h"
#include "panic.h"
#include "timefmt.h"

#define WARN_EVERY_MS 10000 /* a failing accept is logged this often at most */

struct http_listener {
    int fd, stop;
    struct MHD_Daemon *daemon;
    unsigned max;
    /* Handed over, not yet started by their thread (one that fails before it starts, out of
     * memory, stays counted). */
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

static bool
room(const struct http_listener *l)
{
    const union MHD_DaemonInfo *i =
        MHD_get_daemon_info(l->daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    long pending = atomic_load(&l->pending);

    return i == NULL || i->num_connections + (unsigned long)(pending > 0 ? pending : 0) < l->max;
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

/* Accepts what waits, up to a batch, while the daemon has room. */
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
        /* Counted first: its thread may start it before MHD_add_connection returns. On failure
         * MHD has closed fd (a bound of its own, per address, refused it). */
        atomic_fetch_add(&l->pending, 1);
        if (MHD_add_connection(l->daemon, fd, (struct sockaddr *)&sa, len) != MHD_YES)
            atomic_fetch_sub(&l->pending, 1);
    }
}

static void *
run(void *arg)
{
    struct http_listener *l = arg;

    for (;;) {
        int64_t now = timefmt_mono_ms();
        bool paused = now < l->paused_until_ms, full = !paused && !room(l);
        struct pollfd p[2] = {{l->stop, POLLIN, 0}, {l->fd, paused || full ? 0 : POLLIN, 0}};
        int wait = paused ? (int)(l->paused_until_ms - now) : full ? HTTP_LISTEN_FULL_POLL_MS : -1;

        if (poll(p, 2, wait) < 0 && errno != EINTR)
            l->paused_until_ms = timefmt_mono_ms() + HTTP_LISTEN_ERROR_PAUSE_MS;
        if (p[0].revents != 0)
            return NULL;
        if (p[1].events != 0 && p[1].revents != 0)
            accept_ready(l);
    }
}

unsigned
http_listen_daemon_limit(unsigned max, unsigned threads)
{
    return 2 * max + threads * HTTP_LISTEN_BATCH_MAX;
}

int
http_listen_start(struct http_listener *l, struct MHD_Daemon *d, unsigned max)
{
    l->daemon = d;
    l->max = max;
    if (pthread_create(&l->thread, NULL, run, l) != 0)
        return -1;
    l->started = true;
    return 0;
}

void
http_listen_started(struct http_listener *l)
{
    atomic_fetch_sub(&l->pending, 1);
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
    free(l);
}
