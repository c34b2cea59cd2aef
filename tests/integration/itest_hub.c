/* itest_hub.c -- the stream hub against a real PostgreSQL reached through a forwarder of this
 * test: once the hub's connection breaks and every new connection is closed at once (a PostgreSQL
 * that went away), the hub tries again at most once per DB_RECONNECT_WAIT_MS, not at every read of
 * the heads (each try may be a connect that blocks for seconds). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include "db.h"
#include "fixture.h"
#include "hub.h"
#include "timefmt.h"

#define PROXY_PAIRS_MAX 16 /* connections forwarded at once */
#define PROXY_POLL_MS 20   /* the forwarder looks at its stop flag this often */
#define PROXY_BUF 16384
#define HUB_POLL_MS 50 /* the hub reads the heads this often */
#define HELLO_WAIT_MS 10000
#define OUTAGE_MS 2000 /* how long every connection is refused */
/* One try at the start of the outage and one per DB_RECONNECT_WAIT_MS (db.h) after it; libpq may
 * open two connections for one try (sslmode=prefer), so twice that. */
#define TRIES_MAX (2 * (OUTAGE_MS / DB_RECONNECT_WAIT_MS + 1))

/* A TCP forwarder to PostgreSQL: forwards both ways until refuse is set; then closes what it
 * forwards and every connection it accepts, counting them in accepted. */
struct proxy {
    int lfd, port;
    struct sockaddr_in target;
    int pairs[PROXY_PAIRS_MAX][2]; /* client side, server side; -1: free */
    atomic_bool refuse, stop;
    atomic_int accepted;
    pthread_t thread;
};

static void
proxy_close_pairs(struct proxy *p)
{
    for (int i = 0; i < PROXY_PAIRS_MAX; i++)
        for (int k = 0; k < 2; k++) {
            if (p->pairs[i][k] >= 0)
                close(p->pairs[i][k]);
            p->pairs[i][k] = -1;
        }
}

static void
proxy_accept(struct proxy *p)
{
    int c = accept(p->lfd, NULL, NULL);

    if (c < 0)
        return;
    atomic_fetch_add(&p->accepted, 1);
    int s = atomic_load(&p->refuse) ? -1 : socket(AF_INET, SOCK_STREAM, 0);
    if (s >= 0 && connect(s, (struct sockaddr *)&p->target, sizeof p->target) == 0) {
        for (int i = 0; i < PROXY_PAIRS_MAX; i++)
            if (p->pairs[i][0] < 0) {
                p->pairs[i][0] = c;
                p->pairs[i][1] = s;
                return;
            }
    }
    if (s >= 0)
        close(s);
    close(c);
}

/* Moves what is readable on one side of pair i to the other; closes the pair at an end. */
static void
proxy_move(struct proxy *p, int i, int from)
{
    char buf[PROXY_BUF];
    ssize_t n = read(p->pairs[i][from], buf, sizeof buf);

    if (n <= 0 || write(p->pairs[i][1 - from], buf, (size_t)n) != n) {
        close(p->pairs[i][0]);
        close(p->pairs[i][1]);
        p->pairs[i][0] = p->pairs[i][1] = -1;
    }
}

static void *
proxy_run(void *arg)
{
    struct proxy *p = arg;
    struct pollfd fds[1 + 2 * PROXY_PAIRS_MAX];

    while (!atomic_load(&p->stop)) {
        if (atomic_load(&p->refuse))
            proxy_close_pairs(p);
        fds[0] = (struct pollfd){.fd = p->lfd, .events = POLLIN};
        for (int i = 0; i < PROXY_PAIRS_MAX; i++)
            for (int k = 0; k < 2; k++)
                fds[1 + 2 * i + k] = (struct pollfd){.fd = p->pairs[i][k], .events = POLLIN};
        if (poll(fds, 1 + 2 * PROXY_PAIRS_MAX, PROXY_POLL_MS) <= 0)
            continue;
        if (fds[0].revents != 0)
            proxy_accept(p);
        for (int i = 0; i < PROXY_PAIRS_MAX; i++)
            for (int k = 0; k < 2; k++)
                if (p->pairs[i][k] >= 0 && fds[1 + 2 * i + k].fd == p->pairs[i][k] &&
                    fds[1 + 2 * i + k].revents != 0)
                    proxy_move(p, i, k);
    }
    proxy_close_pairs(p);
    return NULL;
}

/* Starts a forwarder to host:port (numeric IPv4). 0, or -1. */
static int
proxy_start(struct proxy *p, const char *host, int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;

    memset(p->pairs, -1, sizeof p->pairs);
    p->target = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &p->target.sin_addr) != 1)
        return -1;
    p->lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (p->lfd < 0 || bind(p->lfd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(p->lfd, PROXY_PAIRS_MAX) != 0 ||
        getsockname(p->lfd, (struct sockaddr *)&a, &len) != 0)
        return -1;
    p->port = ntohs(a.sin_port);
    return pthread_create(&p->thread, NULL, proxy_run, p) == 0 ? 0 : -1;
}

static void
proxy_stop(struct proxy *p)
{
    atomic_store(&p->stop, true);
    pthread_join(p->thread, NULL);
    close(p->lfd);
}

/* url's connection options with host and port replaced by the forwarder's, as key=value. */
static int
url_through(const char *url, int port, char *out, size_t max, char *host, int *target_port)
{
    PQconninfoOption *opts = PQconninfoParse(url, NULL);
    size_t n = (size_t)snprintf(out, max, "host=127.0.0.1 port=%d sslmode=disable", port);

    if (opts == NULL)
        return -1;
    snprintf(host, 64, "127.0.0.1");
    *target_port = 5432;
    for (PQconninfoOption *o = opts; o->keyword != NULL; o++) {
        if (o->val == NULL || o->val[0] == '\0')
            continue;
        if (strcmp(o->keyword, "host") == 0)
            snprintf(host, 64, "%s", o->val);
        else if (strcmp(o->keyword, "port") == 0)
            *target_port = atoi(o->val);
        else if (strcmp(o->keyword, "dbname") == 0 || strcmp(o->keyword, "user") == 0 ||
                 strcmp(o->keyword, "password") == 0)
            n += (size_t)snprintf(out + n, n < max ? max - n : 0, " %s='%s'", o->keyword, o->val);
    }
    PQconninfoFree(opts);
    return n < max ? 0 : -1;
}

static void
conn_resume(void *conn)
{
    (void)conn;
}

static void
conn_cut(void *conn)
{
    (void)conn;
}

static int
conn_fd(void *conn)
{
    (void)conn;
    return -1;
}

static const struct hub_conn_ops ops = {conn_resume, conn_cut, conn_fd};

static void
suspend(void *conn)
{
    (void)conn;
}

static void
sleep_ms(int64_t ms)
{
    nanosleep(&(struct timespec){.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L}, NULL);
}

/* Reads s until its hello came (the hub has read the heads through the forwarder). */
static bool
await_hello(struct hub_stream *s)
{
    char buf[1024], all[4096] = "";

    for (int64_t waited = 0; waited < HELLO_WAIT_MS; waited += PROXY_POLL_MS) {
        long n = hub_stream_read(s, buf, sizeof buf - 1, suspend);
        if (n > 0 && strlen(all) + (size_t)n < sizeof all)
            strncat(all, buf, (size_t)n);
        if (strstr(all, "event: hello") != NULL)
            return true;
        sleep_ms(PROXY_POLL_MS);
    }
    return false;
}

static void
test_retry_gate(const char *url)
{
    struct proxy p = {0};
    char through[FIXTURE_URL_MAX], host[64];
    int port;

    CHECK(url_through(url, 0, through, sizeof through, host, &port) == 0, "url %s", url);
    CHECK(proxy_start(&p, host, port) == 0, "forwarder to %s:%d", host, port);
    if (fails > 0)
        return;
    url_through(url, p.port, through, sizeof through, host, &port);
    struct hub_opts o = {.database_url = through,
                         .poll_ms = HUB_POLL_MS,
                         .heartbeat_ms = 60000,
                         .retry_ms = 0,
                         .max_age_ms = 600000,
                         .streams_max = 4,
                         .per_participant_max = 4,
                         .buffer_max = 65536};
    struct hub *h = hub_start(&o);
    struct hub_subscriber who = {.tenant_id = 1,
                                 .sub = "u1",
                                 .expires_ms = timefmt_now_ms() + 600000,
                                 .cursor_kind = HUB_CURSOR_NONE};
    struct hub_stream *s = NULL;
    CHECK(h != NULL && hub_stream_open(h, &who, &ops, NULL, &s) == HUB_OPENED, "hub and stream");
    if (s != NULL) {
        CHECK(await_hello(s), "no hello within %d ms", HELLO_WAIT_MS);
        atomic_store(&p.refuse, true);
        sleep_ms(PROXY_POLL_MS * 2); /* the forwarder closed the hub's connection */
        atomic_store(&p.accepted, 0);
        sleep_ms(OUTAGE_MS);
        int tries = atomic_load(&p.accepted);
        printf("connections tried by the hub in %d ms of outage: %d\n", OUTAGE_MS, tries);
        CHECK(tries <= TRIES_MAX, "%d connections in %d ms (at most %d)", tries, OUTAGE_MS,
              TRIES_MAX);
        hub_stream_close(s);
    }
    hub_stop(h);
    proxy_stop(&p);
}

static void
run(const char *url)
{
    char err[DB_ERR_MAX];
    struct db *db = db_open(url, err, sizeof err);

    CHECK(db != NULL && db_migrate(db, err, sizeof err) == 0, "migrate: %s", err);
    db_close(db);
    if (fails == 0)
        test_retry_gate(url);
}

int
main(void)
{
    return fixture_main("itest_hub", run);
}
