/* redis_bench_tool.c -- what a Redis command costs on each wire tocsin can use, for
 * bench/redis_tls.sh: hiredis's own socket (the path before transport.c), redis_conn over plain
 * TCP, and redis_conn over TLS, one after the other in one process so the noise of a shared
 * machine hits all three alike. Two figures per wire: the round trip of one SET (what a claim or
 * an API write waits for) and the cost per SET in pipelines of PIPE (what arming a batch costs).
 * Usage: redis_bench_tool HOST PLAIN_PORT TLS_PORT CA_FILE N ROUNDS
 * Prints one line per wire and round: "wire=<name> round=<r> rtt_us=<mean> pipelined_us=<mean>". */
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "redis_conn.h"
#include "transport.h"

#define PIPE 256
#define TIMEOUT_MS 2000

static double
now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* One wire: append, flush-and-read-one, free. */
struct wire {
    const char *name;
    void *c;
    int (*append)(void *c, int argc, const char **argv);
    int (*reply)(void *c);
};

static int
hi_append(void *c, int argc, const char **argv)
{
    return redisAppendCommandArgv(c, argc, argv, NULL) == REDIS_OK ? 0 : -1;
}

static int
hi_reply(void *c)
{
    redisReply *r = NULL;

    if (redisGetReply(c, (void **)&r) != REDIS_OK || r == NULL)
        return -1;
    freeReplyObject(r);
    return 0;
}

static int
rc_append(void *c, int argc, const char **argv)
{
    return redis_conn_append(c, argc, argv, NULL);
}

static int
rc_reply(void *c)
{
    redisReply *r = NULL;

    if (redis_conn_reply(c, &r) != 0)
        return -1;
    freeReplyObject(r);
    return 0;
}

/* n SETs one by one, then n SETs in pipelines of PIPE; the mean microseconds of each. */
static int
measure(const struct wire *w, int n, double *rtt_us, double *pipe_us)
{
    char key[32];
    const char *argv[] = {"SET", key, "x"};
    double t0 = now_us();

    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "bench:%d", i % 1000);
        if (w->append(w->c, 3, argv) != 0 || w->reply(w->c) != 0)
            return -1;
    }
    *rtt_us = (now_us() - t0) / n;
    t0 = now_us();
    for (int i = 0; i < n; i += PIPE) {
        int k = n - i < PIPE ? n - i : PIPE;
        for (int j = 0; j < k; j++) {
            snprintf(key, sizeof key, "bench:%d", (i + j) % 1000);
            if (w->append(w->c, 3, argv) != 0)
                return -1;
        }
        for (int j = 0; j < k; j++)
            if (w->reply(w->c) != 0)
                return -1;
    }
    *pipe_us = (now_us() - t0) / n;
    return 0;
}

int
main(int argc, char **argv)
{
    char err[TRANSPORT_ERR_MAX];
    struct transport_tls *tls;
    struct timeval tv = {.tv_sec = TIMEOUT_MS / 1000};

    if (argc != 7) {
        fprintf(stderr, "usage: %s HOST PLAIN_PORT TLS_PORT CA_FILE N ROUNDS\n", argv[0]);
        return 2;
    }
    const char *host = argv[1];
    int plain = atoi(argv[2]), tport = atoi(argv[3]), n = atoi(argv[5]), rounds = atoi(argv[6]);
    tls = transport_tls_new(argv[4], NULL, NULL, err, sizeof err);
    redisContext *hc = redisConnectWithTimeout(host, plain, tv);
    struct redis_conn *pc =
        redis_conn_open(host, plain, NULL, TIMEOUT_MS, TIMEOUT_MS, err, sizeof err);
    struct redis_conn *tc =
        tls ? redis_conn_open(host, tport, tls, TIMEOUT_MS, TIMEOUT_MS, err, sizeof err) : NULL;
    if (hc == NULL || hc->err != 0 || pc == NULL || tc == NULL || n <= 0 || rounds <= 0) {
        fprintf(stderr, "redis_bench_tool: cannot connect: %s\n", err);
        return 1;
    }
    redisSetTimeout(hc, tv);
    const struct wire wires[] = {
        {"hiredis-socket", hc, hi_append, hi_reply},
        {"transport-plain", pc, rc_append, rc_reply},
        {"transport-tls", tc, rc_append, rc_reply},
    };
    /* Rounds interleave the wires, so a burst of noise lands on all of them. */
    for (int r = 0; r < rounds; r++)
        for (size_t i = 0; i < sizeof wires / sizeof wires[0]; i++) {
            double rtt, pipe;
            if (measure(&wires[i], n, &rtt, &pipe) != 0) {
                fprintf(stderr, "redis_bench_tool: %s failed\n", wires[i].name);
                return 1;
            }
            printf("wire=%s round=%d rtt_us=%.2f pipelined_us=%.3f\n", wires[i].name, r, rtt, pipe);
        }
    redisFree(hc);
    redis_conn_free(pc);
    redis_conn_free(tc);
    transport_tls_free(tls);
    return 0;
}
