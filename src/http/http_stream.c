/* http_stream.c -- the stream responses of http_stream.h. The hub calls resume and cut from its
 * own thread or from another stream's reader: MHD_resume_connection is safe from any thread, and
 * shutdown(2) on the socket makes the connection's next read or write fail so that MHD closes it
 * in its own thread. Neither happens after hub_stream_close, which runs when MHD frees the
 * response, before it closes the socket; so the hub may also keep the socket in its epoll set (MHD
 * does not watch a suspended connection, and would notice a client that went away only at the next
 * write). */
#include "http_stream.h"

#include <microhttpd.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "http_reply.h"
#include "log.h"
#include "metrics.h"

/* What MHD asks the reader for at most: a buffer of this size is allocated with each stream's
 * response, so it is most of what an idle stream costs beyond its connection; a larger frame
 * takes a few more calls. */
#define STREAM_BLOCK_SIZE 2048
#define STREAM_RETRY_AFTER_S 10 /* for a refused stream: the client backs off */
/* hub_stream_open refuses a subscriber with more than HUB_MTG_MAX meeting ids. */
_Static_assert(PRINCIPAL_MTG_MAX <= HUB_MTG_MAX, "a token's meeting list fits a stream");
_Static_assert(PRINCIPAL_SUB_MAX <= 4 * HUB_SUB_MAX,
               "a token's sub (bytes) fits a stream's (UTF-8)");

struct conn {
    struct MHD_Connection *mhd;
    int fd;
    struct hub_stream *s;
};

static void
suspend_cb(void *arg)
{
    MHD_suspend_connection(((struct conn *)arg)->mhd);
}

static void
resume_cb(void *arg)
{
    MHD_resume_connection(((struct conn *)arg)->mhd);
}

static void
cut_cb(void *arg)
{
    shutdown(((struct conn *)arg)->fd, SHUT_RDWR);
}

static int
fd_cb(void *arg)
{
    return ((struct conn *)arg)->fd;
}

static const struct hub_conn_ops conn_ops = {resume_cb, cut_cb, fd_cb};

static ssize_t
reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct conn *c = cls;
    long n = hub_stream_read(c->s, buf, max, suspend_cb);

    (void)pos;
    if (n == HUB_READ_END)
        return MHD_CONTENT_READER_END_OF_STREAM;
    if (n == HUB_READ_CUT)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    return (ssize_t)n;
}

static void
release(void *cls)
{
    struct conn *c = cls;

    hub_stream_close(c->s);
    free(c);
}

static int
refuse(struct request *rq, enum hub_open_status st)
{
    switch (st) {
    case HUB_PARTICIPANT_FULL:
        return http_reply_problem_retry(rq, API_E_TOO_MANY_STREAMS,
                                        "close another stream of this participant first",
                                        STREAM_RETRY_AFTER_S);
    case HUB_TENANT_FULL:
        metrics_add(METRIC_STREAMS_TENANT_FULL, 1);
        return http_reply_problem_retry(rq, API_E_TOO_MANY_TENANT_STREAMS,
                                        "this tenant holds TOCSIN_STREAMS_PER_TENANT streams on "
                                        "this replica",
                                        STREAM_RETRY_AFTER_S);
    case HUB_FULL:
        return http_reply_problem_retry(rq, API_E_STREAMS_UNAVAILABLE,
                                        "this replica holds TOCSIN_STREAMS_MAX streams",
                                        STREAM_RETRY_AFTER_S);
    case HUB_STOPPING:
        return http_reply_problem_retry(rq, API_E_STREAMS_UNAVAILABLE, "this replica is stopping",
                                        STREAM_RETRY_AFTER_S);
    case HUB_NOMEM:
    case HUB_OPENED:
        break;
    }
    return http_reply_problem_retry(rq, API_E_STREAMS_UNAVAILABLE, NULL, STREAM_RETRY_AFTER_S);
}

int
http_stream_start(struct request *rq, const struct hub_subscriber *who)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(rq->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    struct conn *c = calloc(1, sizeof *c);
    enum hub_open_status st = HUB_NOMEM;

    if (c != NULL && ci != NULL) {
        c->mhd = rq->conn;
        c->fd = ci->connect_fd;
        st = hub_stream_open(rq->w->hub, who, &conn_ops, c, &c->s);
    }
    if (st != HUB_OPENED) {
        free(c);
        return refuse(rq, st);
    }
    struct MHD_Response *resp =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, STREAM_BLOCK_SIZE, reader, c, release);
    if (resp == NULL) {
        release(c);
        return http_reply_problem(rq, API_E_STREAMS_UNAVAILABLE, NULL);
    }
    MHD_add_response_header(resp, "Content-Type", "text/event-stream; charset=utf-8");
    MHD_add_response_header(resp, "X-Accel-Buffering", "no");        /* proxies: do not buffer */
    MHD_add_response_header(resp, "Referrer-Policy", "no-referrer"); /* a token may be in the URL */
    MHD_set_connection_option(rq->conn, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned)0);
    return http_reply_response(rq, MHD_HTTP_OK, resp);
}
