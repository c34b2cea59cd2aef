/* hub.h -- the live stream hub of one replica: one thread with its own PostgreSQL connection that
 * reads each tenant's new stream events once (on a wake-up from a fire, or its catch-up poll) and
 * fans them out to the open streams that may see them; it also serves each new stream its
 * backlog after the client's cursor (from a ring of recent events, or from PostgreSQL; from the
 * ring hub_stream_open serves it itself, on the HTTP thread). A second thread, which never calls
 * the database, writes the heartbeats, the reauth warnings and the ends, so a call that hangs
 * delays none of them. The HTTP layer (http_stream.c) owns the connections: the hub only appends
 * bytes to a stream's buffer, watches its socket for a closed peer, and asks the connection,
 * through struct hub_conn_ops, to resume (its reader had suspended; a bounded number at once, see
 * wakeq.h) or to be cut. The hub thread also ends, within 2 s, the streams whose token's signing
 * key was revoked (hub_revoke.c).
 *
 * Threads: hub_notify and hub_streams from any thread; hub_stream_open/read/close from the HTTP
 * threads; hub_start, hub_drain and hub_stop from the thread that wires the replica (main.c).
 * Lock order: the hub's lock, then a stream's lock, then the wake queue's. */
#ifndef TOCSIN_HUB_H
#define TOCSIN_HUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "meeting.h"

#define HUB_RING_MAX 1024         /* recent events kept per tenant, replayed without a read */
#define HUB_BACKLOG_MAX 1000      /* events one resume may replay; further behind is a reset */
#define HUB_READ_MAX 500          /* events per read of a tenant's new events */
#define HUB_REAUTH_LEAD_MS 30000  /* event: reauth this long before the token expires */
#define HUB_MAX_AGE_JITTER_PCT 20 /* a stream's lifetime is spread by up to this percentage */
#define HUB_TENANT_IDLE_MS 300000 /* a tenant without streams is forgotten after this */
#define HUB_TICK_MS 250           /* each thread wakes at least this often */
#define HUB_TIMERS_MS 500         /* stream timers (reauth, end, heartbeat) are walked this often */
#define HUB_PEER_CHECK_MS 1000    /* streams' sockets are checked for a closed peer this often */
#define HUB_PEER_EVENTS_MAX 256   /* closed peers per epoll_wait; a check reads until fewer */
#define HUB_DRAIN_CUT_MS 2000     /* after the grace, how long cut streams get to close */
#define HUB_MTG_MAX 100           /* meeting ids a token may limit a stream to */
#define HUB_SUB_MAX 200           /* characters of a participant id (PARTICIPANT_ID_MAX) */
#define HUB_SUB_BYTES_MAX 800     /* its UTF-8: 4 bytes a character at most */
/* The signing keys of the open streams are checked this often for a revocation (hub_revoke.c):
 * with a round at least every HUB_TICK_MS and one read, a revoked key's streams end within 2 s. */
#define HUB_REVOKE_CHECK_MS 1000
#define HUB_REVOKE_BATCH 500 /* signing keys per read of which are still live */

struct hub_opts {
    const char *database_url;
    int64_t poll_ms;      /* catch-up poll of the heads of tenants with streams */
    int64_t heartbeat_ms; /* a comment line this often on every stream */
    int64_t retry_ms;     /* the SSE retry: field sent first */
    int64_t max_age_ms;   /* a stream ends after this (with jitter); the client resumes */
    size_t streams_max;   /* per replica */
    size_t per_participant_max;
    size_t per_tenant_max; /* a tenant's open streams per replica; 0: only streams_max */
    size_t buffer_max;     /* bytes waiting for a reader: past this the stream is cut */
};

/* The connection side of a stream. cut is called with the stream's lock held, fd with the hub's,
 * resume with the lock of the hub's wake queue (wakeq.h: perhaps from the reader of another
 * stream); none after hub_stream_close returned; none may block. */
struct hub_conn_ops {
    void (*resume)(void *conn); /* the reader suspended; there is data or an end now */
    void (*cut)(void *conn); /* close now: a slow reader, a closed peer, shutdown past its grace */
    int (*fd)(void *conn);   /* the socket, watched for a closed peer from open to close */
};

enum hub_cursor { HUB_CURSOR_NONE, HUB_CURSOR_SET, HUB_CURSOR_BAD };

/* Who opens a stream and from where it resumes (copied by hub_stream_open). */
struct hub_subscriber {
    int64_t tenant_id;
    const char *sub;        /* participant id */
    const char *kid;        /* the token's signing key: revoking it ends the stream; NULL: none */
    int64_t expires_ms;     /* the token's exp, wall clock */
    const char *const *mtg; /* meeting ids the token is limited to; n_mtg == 0: any */
    size_t n_mtg;
    enum hub_cursor cursor_kind;
    int64_t cursor; /* with HUB_CURSOR_SET */
};

enum hub_open_status {
    HUB_OPENED,
    HUB_FULL,
    HUB_TENANT_FULL,
    HUB_PARTICIPANT_FULL,
    HUB_STOPPING,
    HUB_NOMEM
};

#define HUB_READ_END (-1) /* the stream ended cleanly: finish the response */
#define HUB_READ_CUT (-2) /* the stream was cut: close the connection */

struct hub;
struct hub_stream;

/* Starts the hub's threads (connecting lazily). opts strings are copied. NULL when out of memory
 * or a thread cannot start. */
struct hub *hub_start(const struct hub_opts *opts);
/* Stops the threads and frees h. No stream may be open: http_server_stop ends them (hub_drain,
 * then MHD_stop_daemon closes what is left). NULL ok. */
void hub_stop(struct hub *h);

/* Registers a stream for conn; the hub writes its first frames soon after. HUB_OPENED with *out,
 * or why not: the replica's, the tenant's or the participant's limit, stopping, out of memory
 * (HUB_NOMEM also for a subscriber past HUB_MTG_MAX or HUB_SUB_BYTES_MAX, or a kid past
 * SIGNING_KEY_ID_MAX). */
enum hub_open_status hub_stream_open(struct hub *h, const struct hub_subscriber *who,
                                     const struct hub_conn_ops *ops, void *conn,
                                     struct hub_stream **out);
/* The stream's reader: copies up to max buffered bytes and returns their count; with nothing
 * buffered calls suspend(conn) under the stream's lock and returns 0 (the hub resumes it when
 * there is more), or returns HUB_READ_END / HUB_READ_CUT. */
long hub_stream_read(struct hub_stream *s, char *buf, size_t max, void (*suspend)(void *conn));
/* The connection is going away (its response is freed): unregisters s. No ops call follows. */
void hub_stream_close(struct hub_stream *s);

/* Tenants' new stream heads (a dispatch_streamed_fn): their streams are read soon. n == 0 asks
 * for a poll of every tenant now (wake-ups may have been lost). Thread-safe, never blocks long. */
void hub_notify(void *hub, const struct stream_head *heads, size_t n);
/* Open streams, for /metrics and /readyz. Thread-safe; 0 for NULL. */
size_t hub_streams(struct hub *h);
/* Shutdown: refuses new streams, ends every open one and waits until they are closed, at most
 * grace_ms; then cuts the rest and waits at most HUB_DRAIN_CUT_MS more. Afterwards no stream's
 * reader is suspended (so MHD_stop_daemon is allowed). */
void hub_drain(struct hub *h, int64_t grace_ms);

#endif
