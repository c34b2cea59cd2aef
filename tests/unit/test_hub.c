/* test_hub.c -- the hub without a database (it connects only to read the heads of tenants with
 * streams, and this one's database refuses at once): its two threads carry their names
 * (tocsin-hub, tocsin-hub-tmr, as top -H and gdb show them), and hub_stream_open refuses a
 * subscriber past its bounds, a stream past the replica's or its participant's limit (the
 * replica's checked first), and every stream once draining; a refused open counts nothing. */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "hub.h"
#include "timefmt.h"

#define NAME_MAX_LEN 16 /* the kernel's, with its NUL */
#define STREAMS_MAX 3
#define PER_PARTICIPANT_MAX 2

/* How many of this process's threads are named name (from /proc/self/task/<tid>/comm). */
static int
threads_named(const char *name)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *de;
    int n = 0;

    while (d != NULL && (de = readdir(d)) != NULL) {
        char path[64 + sizeof de->d_name], comm[NAME_MAX_LEN + 2] = "";
        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", de->d_name);
        FILE *f = fopen(path, "r");
        if (f != NULL && fgets(comm, sizeof comm, f) != NULL)
            comm[strcspn(comm, "\n")] = '\0';
        if (f != NULL)
            fclose(f);
        n += strcmp(comm, name) == 0;
    }
    if (d != NULL)
        closedir(d);
    return n;
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

static struct hub *
start_with(size_t per_tenant_max)
{
    struct hub_opts o = {.database_url = "postgresql:///tocsin?host=/nonexistent&connect_timeout=1",
                         .poll_ms = 60000,
                         .heartbeat_ms = 60000,
                         .retry_ms = 1000,
                         .max_age_ms = 600000,
                         .streams_max = STREAMS_MAX,
                         .per_participant_max = PER_PARTICIPANT_MAX,
                         .per_tenant_max = per_tenant_max,
                         .buffer_max = 65536};

    return hub_start(&o);
}

static struct hub *
start(void)
{
    return start_with(0);
}

static void
test_thread_names(void)
{
    struct hub *h = start();

    CHECK(h != NULL, "hub_start");
    /* Each thread names itself first thing: give them a moment to run. */
    for (int i = 0;
         i < 200 && (threads_named("tocsin-hub") < 1 || threads_named("tocsin-hub-tmr") < 1); i++)
        nanosleep(&(struct timespec){.tv_nsec = 10000000L}, NULL);
    CHECK(threads_named("tocsin-hub") == 1, "one hub thread: %d", threads_named("tocsin-hub"));
    CHECK(threads_named("tocsin-hub-tmr") == 1, "one timer thread: %d",
          threads_named("tocsin-hub-tmr"));
    hub_stop(h);
    CHECK(threads_named("tocsin-hub") == 0 && threads_named("tocsin-hub-tmr") == 0,
          "both gone after hub_stop");
}

static void
test_open_limits(void)
{
    static char long_sub[HUB_SUB_BYTES_MAX + 2];
    static const char *mtg[HUB_MTG_MAX + 1];
    static const struct {
        int64_t tenant;
        const char *sub; /* NULL: long_sub */
        size_t n_mtg;
        enum hub_open_status want;
    } cases[] = {
        {1, "a", 0, HUB_OPENED},
        {1, "a", HUB_MTG_MAX, HUB_OPENED},
        {1, "a", 0, HUB_PARTICIPANT_FULL}, /* a's third */
        {2, "a", 0, HUB_OPENED},           /* another tenant's a */
        {1, "b", 0, HUB_FULL},             /* STREAMS_MAX open */
        {1, "b", HUB_MTG_MAX + 1, HUB_NOMEM},
        {1, NULL, 0, HUB_NOMEM}, /* a sub past HUB_SUB_BYTES_MAX */
    };
    struct hub_stream *open[sizeof cases / sizeof *cases] = {0};
    struct hub *h = start();

    memset(long_sub, 'x', sizeof long_sub - 1);
    for (size_t i = 0; i < sizeof mtg / sizeof *mtg; i++)
        mtg[i] = "00000000-0000-4000-8000-000000000000";
    CHECK(h != NULL && hub_streams(h) == 0, "hub_start");
    for (size_t i = 0; h != NULL && i < sizeof cases / sizeof *cases; i++) {
        struct hub_subscriber who = {.tenant_id = cases[i].tenant,
                                     .sub = cases[i].sub != NULL ? cases[i].sub : long_sub,
                                     .expires_ms = timefmt_now_ms() + 600000,
                                     .mtg = mtg,
                                     .n_mtg = cases[i].n_mtg,
                                     .cursor_kind = HUB_CURSOR_NONE};
        size_t before = hub_streams(h);
        enum hub_open_status st = hub_stream_open(h, &who, &ops, NULL, &open[i]);
        CHECK(st == cases[i].want, "case %zu: status %d, want %d", i, st, cases[i].want);
        CHECK((st == HUB_OPENED) == (open[i] != NULL), "case %zu: a stream iff opened", i);
        CHECK(hub_streams(h) == before + (st == HUB_OPENED), "case %zu: %zu streams", i,
              hub_streams(h));
    }
    for (size_t i = 0; i < sizeof open / sizeof *open; i++)
        if (open[i] != NULL)
            hub_stream_close(open[i]);
    CHECK(h == NULL || hub_streams(h) == 0, "all closed");
    if (h != NULL) {
        struct hub_subscriber who = {.tenant_id = 1, .sub = "a", .cursor_kind = HUB_CURSOR_NONE};
        struct hub_stream *s = NULL;
        hub_drain(h, 0);
        CHECK(hub_stream_open(h, &who, &ops, NULL, &s) == HUB_STOPPING && s == NULL,
              "refused once draining");
    }
    hub_stop(h);
    CHECK(hub_streams(NULL) == 0, "hub_streams(NULL)");
}

/* A tenant's share: its next stream is refused while other tenants open theirs, until the
 * replica's own bound; a closed stream gives its place back. */
static void
test_tenant_share(void)
{
    static const struct {
        int64_t tenant;
        const char *sub;
        enum hub_open_status want;
    } cases[] = {
        {1, "a", HUB_OPENED}, {1, "b", HUB_OPENED}, {1, "c", HUB_TENANT_FULL},
        {2, "a", HUB_OPENED}, {2, "b", HUB_FULL}, /* STREAMS_MAX open: the replica's bound */
    };
    struct hub_stream *open[sizeof cases / sizeof *cases] = {0};
    struct hub *h = start_with(2);

    _Static_assert(STREAMS_MAX == 3, "tenant 2's second stream finds the replica full");
    CHECK(h != NULL, "hub_start");
    for (size_t i = 0; h != NULL && i < sizeof cases / sizeof *cases; i++) {
        struct hub_subscriber who = {.tenant_id = cases[i].tenant,
                                     .sub = cases[i].sub,
                                     .kid = "sk_test",
                                     .expires_ms = timefmt_now_ms() + 600000,
                                     .cursor_kind = HUB_CURSOR_NONE};
        enum hub_open_status st = hub_stream_open(h, &who, &ops, NULL, &open[i]);
        CHECK(st == cases[i].want, "share case %zu: status %d, want %d", i, st, cases[i].want);
    }
    if (h != NULL) {
        struct hub_subscriber who = {.tenant_id = 1, .sub = "c", .cursor_kind = HUB_CURSOR_NONE};
        struct hub_stream *s = NULL;
        hub_stream_close(open[0]);
        open[0] = NULL;
        CHECK(hub_stream_open(h, &who, &ops, NULL, &s) == HUB_OPENED, "a closed one's place");
        if (s != NULL)
            hub_stream_close(s);
    }
    for (size_t i = 0; i < sizeof open / sizeof *open; i++)
        if (open[i] != NULL)
            hub_stream_close(open[i]);
    CHECK(h == NULL || hub_streams(h) == 0, "all closed");
    hub_stop(h);
}

int
main(void)
{
    test_thread_names();
    test_open_limits();
    test_tenant_share();
    return check_summary("test_hub");
}
