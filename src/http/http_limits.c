/* http_limits.c -- per-connection receive deadlines (http_limits.h). Every open connection has an
 * entry, and the entries with a deadline are in one list, the only one the deadline thread walks:
 * a connection whose request is in (an API request being answered, and every open stream) costs
 * its tick nothing, where walking 10,000 idle streams four times a second was a third of an idle
 * replica's CPU. The lock guards the list and the deadlines: MHD's pool threads take it for each
 * phase change, the deadline thread holds it while it shuts sockets down, and MHD's "closed"
 * notification, which comes before MHD closes the socket, takes it to unlink the entry, so a
 * socket number is never shut down after MHD let go of it. */
#include "http_limits.h"

#include <microhttpd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "cond.h"
#include "log.h"
#include "thread.h"
#include "timefmt.h"

struct conn_entry {
    struct conn_entry *prev, *next; /* in the list while deadline_ms != 0 */
    struct http_limits *owner;
    int fd;
    int64_t deadline_ms; /* monotonic; 0 = none */
};

struct http_limits {
    pthread_mutex_t lock; /* guards the list (head), every entry's deadline and links, and stop */
    pthread_cond_t wake;
    struct conn_entry head; /* sentinel of a circular list */
    bool stop;
    pthread_t thread;
    int64_t head_ms, body_ms;
};

/* Sets e's deadline (0: none), in or out of the list to match. l->lock held. */
static void
set_deadline(struct http_limits *l, struct conn_entry *e, int64_t deadline_ms)
{
    bool listed = e->deadline_ms != 0;

    e->deadline_ms = deadline_ms;
    if (listed && deadline_ms == 0) {
        e->prev->next = e->next;
        e->next->prev = e->prev;
        e->prev = e->next = NULL;
    } else if (!listed && deadline_ms != 0) {
        e->next = l->head.next;
        e->prev = &l->head;
        l->head.next->prev = e;
        l->head.next = e;
    }
}

static void
sweep(struct http_limits *l, int64_t now)
{
    struct conn_entry *next;

    for (struct conn_entry *e = l->head.next; e != &l->head; e = next) {
        next = e->next;
        if (now < e->deadline_ms)
            continue;
        set_deadline(l, e, 0);
        shutdown(e->fd, SHUT_RDWR);
        LOG_DEBUG("http: closed a connection that did not send its request in time");
    }
}

static void *
limits_thread(void *arg)
{
    struct http_limits *l = arg;
    struct timespec until;

    thread_set_name("tocsin-deadline");

    pthread_mutex_lock(&l->lock);
    while (!l->stop) {
        sweep(l, timefmt_mono_ms());
        until = cond_deadline(HTTP_LIMITS_TICK_MS);
        pthread_cond_timedwait(&l->wake, &l->lock, &until);
    }
    pthread_mutex_unlock(&l->lock);
    return NULL;
}

struct http_limits *
http_limits_new(int head_timeout_s, int body_timeout_s)
{
    struct http_limits *l = calloc(1, sizeof(*l));

    if (l == NULL)
        return NULL;
    l->head.next = l->head.prev = &l->head;
    l->head_ms = (int64_t)head_timeout_s * 1000;
    l->body_ms = (int64_t)body_timeout_s * 1000;
    pthread_mutex_init(&l->lock, NULL);
    cond_init_monotonic(&l->wake);
    if (pthread_create(&l->thread, NULL, limits_thread, l) != 0) {
        pthread_cond_destroy(&l->wake);
        pthread_mutex_destroy(&l->lock);
        free(l);
        return NULL;
    }
    return l;
}

/* Entries left are connections MHD never reported closed, which MHD_stop_daemon rules out. */
void
http_limits_free(struct http_limits *l)
{
    if (l == NULL)
        return;
    pthread_mutex_lock(&l->lock);
    l->stop = true;
    pthread_cond_signal(&l->wake);
    pthread_mutex_unlock(&l->lock);
    pthread_join(l->thread, NULL);
    pthread_cond_destroy(&l->wake);
    pthread_mutex_destroy(&l->lock);
    free(l);
}

void
http_limits_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context, int toe)
{
    struct http_limits *l = cls;
    struct conn_entry *e = *socket_context;

    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (ci == NULL || (e = calloc(1, sizeof(*e))) == NULL)
            return; /* this one connection goes without deadlines */
        e->owner = l;
        e->fd = ci->connect_fd;
        pthread_mutex_lock(&l->lock);
        set_deadline(l, e, timefmt_mono_ms() + l->head_ms);
        pthread_mutex_unlock(&l->lock);
        *socket_context = e;
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED && e != NULL) {
        pthread_mutex_lock(&l->lock);
        set_deadline(l, e, 0);
        pthread_mutex_unlock(&l->lock);
        free(e);
        *socket_context = NULL;
    }
}

enum phase { AWAIT_HEAD, AWAIT_BODY, RECEIVED };

/* Moves conn's entry to a phase: its deadline from now, or none. */
static void
enter(struct MHD_Connection *conn, enum phase ph)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    struct conn_entry *e = ci != NULL ? ci->socket_context : NULL;

    if (e == NULL)
        return;
    struct http_limits *l = e->owner;
    int64_t ms = ph == AWAIT_HEAD ? l->head_ms : ph == AWAIT_BODY ? l->body_ms : 0;
    pthread_mutex_lock(&l->lock);
    set_deadline(l, e, ms == 0 ? 0 : timefmt_mono_ms() + ms);
    pthread_mutex_unlock(&l->lock);
}

void
http_limits_body_expected(struct MHD_Connection *conn)
{
    enter(conn, AWAIT_BODY);
}

void
http_limits_received(struct MHD_Connection *conn)
{
    enter(conn, RECEIVED);
}

void
http_limits_head_expected(struct MHD_Connection *conn)
{
    enter(conn, AWAIT_HEAD);
}
