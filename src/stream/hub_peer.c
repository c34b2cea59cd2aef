/* hub_peer.c -- the sockets of the hub's streams, watched for a closed peer (hub_internal.h):
 * libmicrohttpd does not watch a suspended connection, so without this a closed stream would hold
 * its slot (and its participant's) until a heartbeat write failed, 20 to 40 s later at the default
 * TOCSIN_STREAM_HEARTBEAT_MS. Each stream's socket is in one epoll set (h->epfd) from open to
 * close, so a check costs what has closed, not what is open (a poll(2) over 10,000 idle streams
 * every second was a core's 1 to 2 percent). The set changes under h->mu, and the sockets stay
 * open while it is held (hub_stream_close takes it, and leaves the set, before the connection
 * closes). */
#define _GNU_SOURCE /* EPOLLRDHUP: the peer closed its end */
#include "hub_internal.h"

#include <sys/epoll.h>

#include "panic.h"

void
hub_peer_watch(struct hub *h, struct hub_stream *s)
{
    int fd = s->ops->fd(s->conn);
    struct epoll_event ev = {.events = EPOLLRDHUP, .data.ptr = s};

    TOCSIN_ASSERT(hub_lock_held(&h->mu) && !s->watched);
    s->watched = h->epfd >= 0 && fd >= 0 && epoll_ctl(h->epfd, EPOLL_CTL_ADD, fd, &ev) == 0;
}

void
hub_peer_unwatch(struct hub *h, struct hub_stream *s)
{
    TOCSIN_ASSERT(hub_lock_held(&h->mu));
    if (s->watched)
        epoll_ctl(h->epfd, EPOLL_CTL_DEL, s->ops->fd(s->conn), NULL);
    s->watched = false;
}

/* Timer thread, every HUB_PEER_CHECK_MS. */
void
hub_peer_check(struct hub *h)
{
    struct epoll_event ev[HUB_PEER_EVENTS_MAX];
    int n = HUB_PEER_EVENTS_MAX;

    TOCSIN_ASSERT(hub_lock_held(&h->mu));
    /* A reported socket leaves the set at once: the set is level-triggered, so a stream cut but
     * not closed yet would be reported again and again and crowd out the others. */
    while (h->epfd >= 0 && n == HUB_PEER_EVENTS_MAX &&
           (n = epoll_wait(h->epfd, ev, HUB_PEER_EVENTS_MAX, 0)) > 0) {
        for (int i = 0; i < n; i++) {
            struct hub_stream *s = ev[i].data.ptr;
            hub_peer_unwatch(h, s);
            hub_lock_acquire(&s->mu);
            if (!s->conn_gone && !s->cut)
                hub_stream_cut_locked(s);
            hub_lock_release(&s->mu);
        }
    }
}
