/* http_request.h -- the per-request object and the per-thread worker that handlers receive.
 * One struct request per HTTP request, allocated on its first callback and freed only in MHD's
 * completion callback. A struct http_worker belongs to one MHD pool thread and owns that thread's
 * PostgreSQL and Redis connections (neither library's connections are thread-safe). The request's
 * accessors at the end are http_request.c's. */
#ifndef TOCSIN_HTTP_REQUEST_H
#define TOCSIN_HTTP_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "config.h"
#include "db.h"
#include "db_signing_key.h"
#include "meeting.h"
#include "route.h"
#include "trace.h"

#define HTTP_BODY_MAX 65536 /* request bodies above this get 413 */
/* The bound of a ROUTE_BULK route (POST /v1/meetings/batch: DB_MEETING_BATCH_MAX meetings). */
#define HTTP_BULK_BODY_MAX (8 * 1024 * 1024)
#define HTTP_URL_MAX 2048      /* request targets above this get 414 */
#define HTTP_LOCATION_MAX 128  /* "/v1/meetings/<uuid>" and the like */
#define AUTH_CACHE_SLOTS 64    /* API keys, per thread */
#define SIGNING_CACHE_SLOTS 16 /* signing keys of browser tokens, per thread */

struct db;
struct engine;
struct hub;
struct mirror;
struct MHD_Connection;

#define PRINCIPAL_SUB_MAX 800 /* bytes: 200 characters of UTF-8 */
#define PRINCIPAL_MTG_MAX 100 /* meeting ids a browser token may be limited to */

/* Browser token scopes (docs/design.md section 7). */
enum scope {
    SCOPE_MEETINGS_READ = 1,
    SCOPE_MEETINGS_WRITE = 2,
    SCOPE_NOTIFICATIONS = 4,
    SCOPE_PUSH = 8,
};

/* Who makes a request: a tenant's API key (a server), or a browser token for one participant. */
struct principal {
    bool browser;    /* a browser token; false: an API key */
    unsigned scopes; /* enum scope bits (browser tokens only) */
    char sub[PRINCIPAL_SUB_MAX + 1];
    char kid[SIGNING_KEY_ID_MAX + 1]; /* the token's signing key */
    int64_t expires_ms;               /* the token's exp */
    size_t n_mtg;                     /* 0: any meeting */
    char mtg[PRINCIPAL_MTG_MAX][MEETING_ID_LEN + 1];
};

struct auth_cache_slot {
    uint8_t hash[32];
    int64_t tenant_id;
    int64_t expires_ms; /* monotonic */
};

struct signing_cache_slot {
    char kid[SIGNING_KEY_ID_MAX + 1];
    char secret[SIGNING_KEY_SECRET_MAX + 1];
    int64_t tenant_id;
    int64_t expires_ms; /* monotonic */
};

struct http_worker {
    const struct config *cfg;
    struct db *db;                /* NULL until the first successful connect */
    int64_t db_retry_ms;          /* monotonic time before which db_open is not retried */
    char db_open_err[DB_ERR_MAX]; /* why the last db_open failed (for /readyz) */
    struct mirror *mi;
    struct engine *engine; /* the replica's reminder engine (thread-safe calls), or NULL */
    struct hub *hub;       /* the replica's stream hub (thread-safe calls) */
    struct auth_cache_slot auth[AUTH_CACHE_SLOTS];
    unsigned auth_next;
    struct signing_cache_slot signing[SIGNING_CACHE_SLOTS];
    unsigned signing_next;
    struct http_worker *next; /* registry list, guarded by the server's registry lock */
};

struct request {
    struct MHD_Connection *conn;
    const struct config *cfg;
    struct http_worker *w;
    const char *method;
    char *path; /* malloc'ed copy, query string excluded */
    struct route_match match;
    char *body; /* malloc'ed, NUL-terminated for convenience; body_len excludes the NUL */
    size_t body_len;
    size_t body_cap;
    size_t body_max; /* HTTP_BODY_MAX, or HTTP_BULK_BODY_MAX on a ROUTE_BULK route */
    bool body_too_large;
    bool authenticated; /* rq->who was read before the body (a ROUTE_BULK route) */
    bool answered;
    int64_t tenant_id;
    struct principal who;       /* filled by authentication */
    size_t target_len;          /* bytes of the raw request target, query included */
    const char *target_refusal; /* why the raw target is refused, or NULL (http_framing.h) */
    int64_t start_ns;
    unsigned status;         /* for the access log */
    unsigned retry_after_s;  /* a Retry-After for the problem reply, 0 = none */
    const char *page_policy; /* a page's Content-Security-Policy (static text), or NULL */
    char request_id[TRACE_REQUEST_ID_MAX + 1]; /* the client's X-Request-Id, or one we made */
    char trace_id[TRACE_ID_LEN + 1];           /* from a valid traceparent, or "" */
    char location[HTTP_LOCATION_MAX + 1];      /* a Location replied, for the access log */
    struct sockaddr_storage client; /* the peer, or whom a trusted proxy named (http_client.h) */
    bool client_held;               /* a place in client's per-address bound is held */
};

/* The value of request header name, or NULL. Borrowed from MHD, valid during the request. */
const char *http_request_header(struct request *rq, const char *name);
/* The value of query argument name, or NULL. Borrowed from MHD, valid during the request. */
const char *http_request_query(struct request *rq, const char *name);
/* The worker's database, connecting on demand; NULL (and a 503 is the caller's to send) when
 * PostgreSQL cannot be reached. */
struct db *http_request_db(struct request *rq);

#endif
