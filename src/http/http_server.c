/* http_server.c -- the MHD daemons (two pools, http_listen.h) and the request life cycle: allocate
 * on the URI-log callback, take or make the request id, collect the body (bounded), route,
 * authenticate, call the handler, log, count and free on completion. Per the known MHD 0.9.75 trap,
 * handlers answer on a later callback than the first, which keeps keep-alive connections open.
 * Errors caught before the body is read are answered at once. While a callback runs for a request,
 * the thread's log context holds its request id and trace id, so every line logged on its behalf
 * carries them. */
#define _GNU_SOURCE /* gettid */
#include "http_server.h"

#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "db.h"
#include "http_accept.h"
#include "http_auth.h"
#include "http_client.h"
#include "http_framing.h"
#include "http_limits.h"
#include "http_listen.h"
#include "http_metrics.h"
#include "http_rate.h"
#include "http_reply.h"
#include "http_request.h"
#include "http_routes.h"
#include "hub.h"
#include "log.h"
#include "mirror.h"
#include "panic.h"
#include "ratelimit.h"
#include "thread.h"
#include "timefmt.h"
#include "trace.h"

/* libmicrohttpd's memory per connection: it holds the request line and headers, and about half
 * of it is touched for every connection, so it is most of what each of thousands of idle streams
 * costs (bench/stream.sh: 128 KiB made 76 KiB a stream, 16 KiB 20.6, 14 KiB 19.6 with 4,000
 * streams and 20.1 with 10,000, over the goal of 20 KiB: hence 13). A request whose line and
 * headers do not fit in it (about 12 KB; a browser token is at most 8 KB, a URL 2 KB) is answered
 * by libmicrohttpd itself, 414 or 431 with its own short HTML body, not problem+json: 0.9.75 has no
 * hook for those answers. */
#define CONNECTION_MEMORY_MAX (13 * 1024)
#define DRAIN_POLL_MS 10   /* how often shutdown checks for in-flight requests */
#define FD_HEADROOM 256    /* descriptors beyond the connections: database, Redis, files, logs */
#define BODY_DETAIL_MAX 64 /* the 413 detail with any int */
/* The stream pool (http_listen.h): one thread for every STREAM_THREADS_SHARE of
 * TOCSIN_HTTP_THREADS, at least STREAM_THREADS_MIN, each STREAM_NICE nice levels below the API's
 * (a nice-5 thread weighs a third of a nice-0 one when both want the CPU). */
#define STREAM_THREADS_SHARE 4
#define STREAM_THREADS_MIN 2
#define STREAM_NICE 5

struct http_server {
    struct MHD_Daemon *pools[HTTP_POOLS];
    const struct config *cfg;
    struct engine *engine;
    struct hub *hub;
    pthread_mutex_t lock; /* guards workers */
    struct http_worker *workers;
    atomic_long inflight; /* requests between their first callback and completion */
    struct http_limits *limits;
    struct http_listener *listener;
    struct ratelimit *tenant_rate; /* TOCSIN_TENANT_RATE's buckets; NULL when it is 0 */
};

static _Thread_local struct http_worker *tl_worker;

static struct http_worker *
worker_get(struct http_server *srv)
{
    if (tl_worker != NULL)
        return tl_worker;
    struct http_worker *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return NULL;
    const struct config *cfg = srv->cfg;
    struct mirror_opts mo = mirror_opts_of(cfg, MIRROR_API_TIMEOUT_MS);
    w->cfg = cfg;
    w->engine = srv->engine;
    w->hub = srv->hub;
    w->mi = mirror_new(&mo);
    if (w->mi == NULL) {
        free(w);
        return NULL;
    }
    pthread_mutex_lock(&srv->lock);
    w->next = srv->workers;
    srv->workers = w;
    pthread_mutex_unlock(&srv->lock);
    tl_worker = w;
    return w;
}

/* MHD calls this first with the full request target; what it returns becomes *con_cls. */
static void *
on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    struct request *rq = calloc(1, sizeof(*rq));
    if (rq == NULL)
        return NULL;
    rq->conn = conn;
    rq->cfg = ((struct http_server *)cls)->cfg;
    rq->start_ns = timefmt_mono_ns();
    atomic_fetch_add(&((struct http_server *)cls)->inflight, 1);
    rq->target_len = strlen(uri);
    rq->target_refusal = http_framing_target_refusal(uri);
    return rq;
}

static int
body_append(struct request *rq, const char *data, size_t n)
{
    if (rq->body_too_large || rq->body_len + n > rq->body_max) {
        rq->body_too_large = true;
        return 0;
    }
    if (rq->body_len + n + 1 > rq->body_cap) {
        size_t cap = rq->body_cap < 1024 ? 1024 : rq->body_cap;
        while (cap < rq->body_len + n + 1)
            cap *= 2;
        char *b = realloc(rq->body, cap);
        if (b == NULL)
            return -1;
        rq->body = b;
        rq->body_cap = cap;
    }
    memcpy(rq->body + rq->body_len, data, n);
    rq->body_len += n;
    rq->body[rq->body_len] = '\0';
    return 0;
}

/* 413, its detail naming the route's bound as HTTP_BODY_MAX or HTTP_BULK_BODY_MAX says it. */
static int
reply_body_too_large(struct request *rq)
{
    char detail[BODY_DETAIL_MAX];

    snprintf(detail, sizeof(detail), "request bodies are limited to %zu bytes", rq->body_max);
    return http_reply_problem(rq, API_E_BODY_TOO_LARGE, detail);
}

/* The body bound of the request's route: only a ROUTE_BULK route takes more than HTTP_BODY_MAX,
 * so an unknown path or method keeps the small one. A ROUTE_BULK route's match is kept in
 * rq->match for early_auth. */
static size_t
body_max_of(struct request *rq)
{
    struct route_match m;

    if (route_find(http_routes, http_routes_count, rq->method, rq->path, &m) == ROUTE_FOUND &&
        (m.route->flags & ROUTE_BULK)) {
        rq->match = m;
        return HTTP_BULK_BODY_MAX;
    }
    return HTTP_BODY_MAX;
}

/* Checks that can be made from the request line and headers alone. Returns 1 when answered. */
static int
early_checks(struct request *rq, const char *version, enum MHD_Result *ret)
{
    const char *cl = http_request_header(rq, MHD_HTTP_HEADER_CONTENT_LENGTH);
    const char *detail;
    enum api_error e =
        http_framing_check(rq->conn, rq->method, version, rq->target_refusal, &detail);
    if (e != API_E_NONE) {
        *ret = (enum MHD_Result)http_reply_problem(rq, e, detail);
        return 1;
    }
    if (rq->target_len > HTTP_URL_MAX) {
        *ret = (enum MHD_Result)http_reply_problem(rq, API_E_URI_TOO_LONG, NULL);
        return 1;
    }
    if (cl != NULL && strtoull(cl, NULL, 10) > rq->body_max) {
        *ret = (enum MHD_Result)reply_body_too_large(rq);
        return 1;
    }
    return 0;
}

/* A ROUTE_BULK route's credentials, read before its body: a client without a valid key must not
 * make a replica read HTTP_BULK_BODY_MAX bytes first. Returns 1 when answered. */
static int
early_auth(struct http_server *srv, struct request *rq, enum MHD_Result *ret)
{
    if (rq->body_max != HTTP_BULK_BODY_MAX) /* body_max_of found the route and kept its match */
        return 0;
    rq->w = worker_get(srv);
    if (rq->w == NULL) {
        *ret = MHD_NO;
        return 1;
    }
    enum api_error e = http_auth_authenticate(rq);
    if (e != API_E_NONE) {
        *ret = (enum MHD_Result)http_reply_problem(rq, e, NULL);
        return 1;
    }
    rq->authenticated = true;
    return 0;
}

static enum MHD_Result
dispatch(struct http_server *srv, struct request *rq, const char *url)
{
    enum route_result found =
        route_find(http_routes, http_routes_count, rq->method, url, &rq->match);

    /* A CORS preflight carries no credentials and asks about any /v1/ path. */
    if (strcmp(rq->method, "OPTIONS") == 0 && strncmp(url, "/v1/", 4) == 0)
        return (enum MHD_Result)http_reply_preflight(rq);
    switch (found) {
    case ROUTE_NOT_FOUND:
        return (enum MHD_Result)http_reply_problem(rq, API_E_NOT_FOUND, NULL);
    case ROUTE_METHOD_NOT_ALLOWED:
        return (enum MHD_Result)http_reply_problem(rq, API_E_METHOD_NOT_ALLOWED, NULL);
    case ROUTE_FOUND:
        break;
    }
    if (rq->body_too_large)
        return (enum MHD_Result)reply_body_too_large(rq);
    if (!(rq->match.route->flags & ROUTE_ANY_ACCEPT) &&
        !http_accept_json(http_request_header(rq, MHD_HTTP_HEADER_ACCEPT)))
        return (enum MHD_Result)http_reply_problem(rq, API_E_NOT_ACCEPTABLE,
                                                   "responses are application/json");
    rq->w = worker_get(srv);
    if (rq->w == NULL)
        return MHD_NO;
    if (!(rq->match.route->flags & ROUTE_PUBLIC)) {
        enum api_error e = rq->authenticated ? API_E_NONE : http_auth_authenticate(rq);
        if (e == API_E_NONE)
            e = http_rate_check(srv->tenant_rate, rq);
        if (e == API_E_NONE)
            e = http_auth_authorize(rq);
        if (e != API_E_NONE)
            return (enum MHD_Result)http_reply_problem(rq, e, NULL);
    }
    enum MHD_Result r = (enum MHD_Result)rq->match.route->fn(rq);
    if (!rq->answered && r == MHD_YES) {
        LOG_ERROR("handler for %s %s returned without answering", rq->method, url);
        r = (enum MHD_Result)http_reply_problem(rq, API_E_INTERNAL, NULL);
    }
    return r;
}

/* The client's X-Request-Id when it is a safe one (trace.h), else a new one; the trace id of a
 * valid traceparent. Both go to the log context and the id to every reply (http_reply.c). */
static void
take_ids(struct request *rq)
{
    const char *id = http_request_header(rq, "X-Request-Id");
    const char *tp = http_request_header(rq, "traceparent");

    if (id != NULL && trace_request_id_valid(id))
        snprintf(rq->request_id, sizeof rq->request_id, "%s", id);
    else if (trace_request_id_make(rq->request_id) != 0)
        snprintf(rq->request_id, sizeof rq->request_id, "-"); /* no random bytes: still a line */
    if (tp == NULL || trace_parent_parse(tp, rq->trace_id, NULL) != 0)
        rq->trace_id[0] = '\0';
    log_context_set(rq->request_id, rq->trace_id[0] ? rq->trace_id : NULL);
}

static enum MHD_Result
handle_call(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
            const char *version, const char *upload_data, size_t *upload_data_size,
            struct request *rq)
{
    enum MHD_Result ret;

    if (rq->method == NULL) { /* first call: headers are in, the body is not */
        rq->method = method;
        rq->path = strdup(url);
        if (rq->path == NULL)
            return MHD_NO;
        take_ids(rq);
        rq->body_max = body_max_of(rq);
        http_limits_body_expected(conn);
        if (http_client_take(rq, ((struct http_server *)cls)->listener) != API_E_NONE)
            return (enum MHD_Result)http_reply_problem_retry(rq, API_E_TOO_MANY_CONNECTIONS, NULL,
                                                             HTTP_CLIENT_RETRY_AFTER_S);
        if (early_checks(rq, version, &ret) || early_auth(cls, rq, &ret))
            return ret;
        return MHD_YES;
    }
    if (rq->answered) { /* answered early: drop whatever body still arrives */
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        if (body_append(rq, upload_data, *upload_data_size) != 0)
            return MHD_NO;
        *upload_data_size = 0;
        return MHD_YES;
    }
    http_limits_received(conn);
    return dispatch(cls, rq, rq->path);
}

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
           const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
    struct request *rq = *con_cls;

    if (rq == NULL)
        return MHD_NO;
    if (rq->method != NULL)
        log_context_set(rq->request_id, rq->trace_id[0] ? rq->trace_id : NULL);
    enum MHD_Result r =
        handle_call(cls, conn, url, method, version, upload_data, upload_data_size, rq);
    log_context_set(NULL, NULL);
    return r;
}

/* One line per request: at info, but debug for the probes (health, readiness, metrics), which a
 * load balancer and Prometheus call every few seconds. The text format says it all in the
 * message (as before request ids existed); JSON has each part as a member too. */
static void
log_access(const struct request *rq, const struct route *route, int64_t ns, bool aborted)
{
    char status[16], ms[32];
    enum log_level level =
        route != NULL && (route->flags & ROUTE_PROBE) ? LOG_LEVEL_DEBUG : LOG_LEVEL_INFO;
    const char *path = rq->path ? rq->path : "?";

    if (!log_enabled(level))
        return;
    snprintf(status, sizeof status, "%u", rq->status);
    snprintf(ms, sizeof ms, "%.3f", (double)ns / 1e6);
    struct log_field f[] = {
        {"route", route ? route->pattern : "unmatched", false, false},
        {"location", rq->location[0] ? rq->location : NULL, false, false},
        {"method", rq->method, false, true},
        {"path", path, false, true},
        {"status", status, true, true},
        {"duration_ms", ms, true, true},
        {"aborted", aborted ? "true" : NULL, false, true},
    };
    log_fields(level, f, sizeof f / sizeof f[0], "http %s %.200s %u %.1fms%s", rq->method, path,
               rq->status, (double)ns / 1e6, aborted ? " (aborted)" : "");
}

static void
on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
             enum MHD_RequestTerminationCode toe)
{
    struct request *rq = *con_cls;
    if (rq == NULL)
        return;
    atomic_fetch_sub(&((struct http_server *)cls)->inflight, 1);
    http_client_give(rq, ((struct http_server *)cls)->listener);
    http_limits_head_expected(conn);
    if (rq->method != NULL) {
        const struct route *route = rq->match.path_route;
        struct route_match m;
        int64_t ns = timefmt_mono_ns() - rq->start_ns;
        if (route == NULL && rq->path != NULL) { /* answered before routing: route it now */
            route_find(http_routes, http_routes_count, rq->method, rq->path, &m);
            route = m.path_route;
        }
        http_metrics_observe(route, rq->method, rq->status, ns);
        log_context_set(rq->request_id, rq->trace_id[0] ? rq->trace_id : NULL);
        log_access(rq, route, ns, toe != MHD_REQUEST_TERMINATED_COMPLETED_OK);
        log_context_set(NULL, NULL);
    }
    free(rq->path);
    free(rq->body);
    free(rq);
    *con_cls = NULL;
}

/* MHD passes its own printf format; the attribute tells the compiler so (clang checks it). */
__attribute__((format(printf, 2, 0))) static void
on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    char line[256];
    vsnprintf(line, sizeof(line), fmt, ap);
    line[strcspn(line, "\n")] = '\0';
    LOG_DEBUG("mhd: %s", line);
}

static int
resolve(const struct config *cfg, struct sockaddr_storage *ss, socklen_t *len)
{
    struct addrinfo hints = {0}, *res = NULL;
    char port[8];
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    snprintf(port, sizeof(port), "%d", cfg->http_port);
    if (getaddrinfo(cfg->http_host, port, &hints, &res) != 0 || res == NULL)
        return -1;
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

/* The bound on connections, streams included (http_listen.c keeps it). */
static unsigned
connections_max(const struct config *cfg)
{
    return (unsigned)(cfg->http_connections_max + cfg->streams_max);
}

/* Every connection is a descriptor: the API's, the streams', and some for our own connections. */
static int
raise_fd_limit(const struct config *cfg, char *err, size_t errlen)
{
    struct rlimit rl;
    rlim_t need = (rlim_t)connections_max(cfg) + FD_HEADROOM;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 0;
    if (rl.rlim_cur < need && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max < need ? rl.rlim_max : need;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur >= need)
        return 0;
    snprintf(err, errlen,
             "TOCSIN_STREAMS_MAX: %d streams + %d connections need %llu descriptors, the limit "
             "is %llu (raise ulimit -n or lower them)",
             cfg->streams_max, cfg->http_connections_max, (unsigned long long)need,
             (unsigned long long)rl.rlim_cur);
    return -1;
}

/* Frees what http_server_start made before the daemon ran. */
static void
server_free(struct http_server *srv)
{
    http_listen_free(srv->listener);
    if (srv->limits != NULL)
        http_limits_free(srv->limits);
    ratelimit_free(srv->tenant_rate);
    pthread_mutex_destroy(&srv->lock);
    free(srv);
}

/* MHD_OPTION_NOTIFY_CONNECTION: the acceptor's counts, then the request deadlines. */
static void
on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
              enum MHD_ConnectionNotificationCode toe)
{
    struct http_server *srv = cls;

    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        http_listen_started(srv->listener);
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        /* MHD keeps the address of every connection it was given: never NULL here. */
        TOCSIN_ASSERT(ci != NULL && ci->client_addr != NULL);
        http_listen_closed(srv->listener, ci->client_addr);
    }
    http_limits_on_connection(srv->limits, conn, socket_context, (int)toe);
}

/* One pool's daemon with threads threads. The per-address bound is the acceptor's, over both
 * pools (0: MHD keeps none of its own). */
static struct MHD_Daemon *
daemon_start(struct http_server *srv, unsigned threads)
{
    const struct config *cfg = srv->cfg;
    /* No listening socket of MHD's own: http_listen.c accepts and hands connections over. */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG |
                     MHD_ALLOW_SUSPEND_RESUME | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC;

    return MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, srv, MHD_OPTION_THREAD_POOL_SIZE, threads,
        MHD_OPTION_CONNECTION_LIMIT, http_listen_daemon_limit(connections_max(cfg), threads),
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->http_timeout_s,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONNECTION_MEMORY_MAX,
        MHD_OPTION_URI_LOG_CALLBACK, on_uri, srv, MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
        MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, srv, MHD_OPTION_PER_IP_CONNECTION_LIMIT, 0u,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv, MHD_OPTION_END);
}

static unsigned
stream_threads(const struct config *cfg)
{
    unsigned n = (unsigned)cfg->http_threads / STREAM_THREADS_SHARE;

    return n > STREAM_THREADS_MIN ? n : STREAM_THREADS_MIN;
}

/* How a pool's daemon is started: from a thread of its own, because a thread starts with its
 * creator's name and nice value, so the pool's threads, which MHD_start_daemon creates, carry the
 * name given here (top -H tells the pools apart) and the stream pool's run STREAM_NICE below the
 * API's. */
struct pool_start {
    struct http_server *srv;
    enum http_pool pool;
    unsigned threads;
    const char *name;
    int nice;
};

static void *
pool_starter(void *arg)
{
    struct pool_start *p = arg;
    pid_t tid = gettid();

    thread_set_name(p->name);
    errno = 0;
    int nice = p->nice == 0 ? 0 : getpriority(PRIO_PROCESS, (id_t)tid);
    if (p->nice != 0 && (errno != 0 || setpriority(PRIO_PROCESS, (id_t)tid, nice + p->nice) != 0))
        LOG_WARN("http: cannot lower the %s threads' priority (%s): they run at the API's", p->name,
                 strerror(errno));
    p->srv->pools[p->pool] = daemon_start(p->srv, p->threads);
    return NULL;
}

/* Starts one pool (pool_starter says why on a thread); srv->pools[pool] is NULL if it failed. */
static void
pool_start(struct http_server *srv, enum http_pool pool, unsigned threads, const char *name,
           int nice)
{
    struct pool_start p = {srv, pool, threads, name, nice};
    pthread_t th;

    srv->pools[pool] = NULL;
    if (pthread_create(&th, NULL, pool_starter, &p) == 0)
        pthread_join(th, NULL);
}

/* Both pools' daemons; 0, or -1 with none left running. */
static int
pools_start(struct http_server *srv)
{
    pool_start(srv, HTTP_POOL_API, (unsigned)srv->cfg->http_threads, "tocsin-http", 0);
    if (srv->pools[HTTP_POOL_API] != NULL)
        pool_start(srv, HTTP_POOL_STREAMS, stream_threads(srv->cfg), "tocsin-stream", STREAM_NICE);
    if (srv->pools[HTTP_POOL_STREAMS] != NULL)
        return 0;
    if (srv->pools[HTTP_POOL_API] != NULL)
        MHD_stop_daemon(srv->pools[HTTP_POOL_API]);
    srv->pools[HTTP_POOL_API] = NULL;
    return -1;
}

static void
pools_stop(struct http_server *srv)
{
    for (int p = 0; p < HTTP_POOLS; p++)
        MHD_stop_daemon(srv->pools[p]); /* joins the pool: no worker is in use past this line */
}

struct http_server *
http_server_start(const struct config *cfg, struct engine *engine, struct hub *hub, char *err,
                  size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t len = 0;
    char why[128];

    if (raise_fd_limit(cfg, err, errlen) != 0)
        return NULL;
    struct http_server *srv = calloc(1, sizeof(*srv));

    if (srv == NULL || resolve(cfg, &ss, &len) != 0) {
        snprintf(err, errlen, "TOCSIN_HTTP_ADDR: cannot resolve %s", cfg->http_host);
        free(srv);
        return NULL;
    }
    srv->cfg = cfg;
    srv->engine = engine;
    srv->hub = hub;
    pthread_mutex_init(&srv->lock, NULL);
    srv->listener = http_listen_open((struct sockaddr *)&ss, len, why, sizeof why);
    if (srv->listener == NULL) {
        snprintf(err, errlen, "TOCSIN_HTTP_ADDR: cannot listen on %s:%d: %s", cfg->http_host,
                 cfg->http_port, why);
        server_free(srv);
        return NULL;
    }
    srv->limits = http_limits_new(cfg->http_header_timeout_s, cfg->http_body_timeout_s);
    if (srv->limits == NULL) {
        snprintf(err, errlen, "http: cannot start the request deadline thread");
        server_free(srv);
        return NULL;
    }
    if (cfg->tenant_rate > 0 &&
        (srv->tenant_rate = ratelimit_new(cfg->tenant_rate, cfg->tenant_burst)) == NULL) {
        snprintf(err, errlen, "TOCSIN_TENANT_RATE: out of memory for its buckets");
        server_free(srv);
        return NULL;
    }
    if (pools_start(srv) != 0) {
        snprintf(err, errlen, "http: cannot start the HTTP threads");
        server_free(srv);
        return NULL;
    }
    if (http_listen_start(srv->listener, srv->pools, connections_max(cfg),
                          (unsigned)cfg->http_connections_per_addr, &cfg->trusted_proxies) != 0) {
        snprintf(err, errlen, "http: cannot start the accepting thread");
        pools_stop(srv);
        server_free(srv);
        return NULL;
    }
    return srv;
}

/* Stops accepting, ends the streams (a stream is a request that never finishes by itself, and
 * MHD must not be stopped with a suspended one), then gives requests already under way up to
 * grace_ms to finish. Idle keep-alive connections do not count: MHD_stop_daemon closes them. */
static void
drain(struct http_server *srv, int64_t grace_ms)
{
    struct timespec pause = {0, DRAIN_POLL_MS * 1000000L};
    int64_t deadline = timefmt_mono_ms() + grace_ms;
    http_listen_stop(srv->listener);
    hub_drain(srv->hub, grace_ms);
    while (atomic_load(&srv->inflight) > 0 && timefmt_mono_ms() < deadline)
        nanosleep(&pause, NULL);
    if (atomic_load(&srv->inflight) > 0)
        LOG_WARN("shutdown: %ld requests still in flight after %lld ms",
                 atomic_load(&srv->inflight), (long long)grace_ms);
}

void
http_server_stop(struct http_server *srv)
{
    if (srv == NULL)
        return;
    drain(srv, srv->cfg->shutdown_grace_ms);
    pools_stop(srv);
    http_listen_free(srv->listener);
    http_limits_free(srv->limits);
    ratelimit_free(srv->tenant_rate);
    struct http_worker *w = srv->workers;
    while (w != NULL) {
        struct http_worker *next = w->next;
        db_close(w->db);
        mirror_free(w->mi);
        free(w);
        w = next;
    }
    pthread_mutex_destroy(&srv->lock);
    free(srv);
}
