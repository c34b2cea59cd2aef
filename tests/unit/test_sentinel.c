/* test_sentinel.c -- the pure parts of sentinel.c: the +switch-master message (ours, another
 * master's, malformed, a host at its bound and one past), and the master epoch, which moves only
 * when the noted address changes and counts each change as one failover. */
#include <string.h>

#include "check.h"
#include "metrics.h"
#include "sentinel.h"

static void
check_switch(void)
{
    static const struct {
        const char *msg;
        const char *host; /* NULL = refused */
        int port;
    } cases[] = {
        {"mymaster 127.0.0.1 6379 127.0.0.1 6380", "127.0.0.1", 6380},
        {"mymaster 10.0.0.1 6379 redis-2.internal 7000", "redis-2.internal", 7000},
        {"mymaster ::1 6379 ::2 6380", "::2", 6380},
        {"other 127.0.0.1 6379 127.0.0.1 6380", NULL, 0},
        {"mymasterx 127.0.0.1 6379 127.0.0.1 6380", NULL, 0},
        {"mymaster 127.0.0.1 6379 127.0.0.1", NULL, 0},
        {"mymaster 127.0.0.1 6379 127.0.0.1 6380 extra", NULL, 0},
        {"mymaster 127.0.0.1 6379 127.0.0.1 0", NULL, 0},
        {"mymaster 127.0.0.1 6379 127.0.0.1 65536", NULL, 0},
        {"mymaster 127.0.0.1 6379 127.0.0.1 63x0", NULL, 0},
        {"mymaster 127.0.0.1 6379  6380", NULL, 0},
        {"", NULL, 0},
    };
    char host[REDIS_URL_HOST_MAX], msg[2 * REDIS_URL_HOST_MAX];
    int port;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = sentinel_parse_switch(cases[i].msg, strlen(cases[i].msg), "mymaster", host, &port);
        if (cases[i].host == NULL) {
            CHECK(rc != 0, "\"%s\" accepted", cases[i].msg);
            continue;
        }
        CHECK(rc == 0 && strcmp(host, cases[i].host) == 0 && port == cases[i].port,
              "\"%s\": %d %s:%d", cases[i].msg, rc, host, port);
    }
    /* A new host of REDIS_URL_HOST_MAX - 1 bytes fits; one more does not. */
    size_t n = (size_t)snprintf(msg, sizeof msg, "mymaster a 1 ");
    memset(msg + n, 'h', REDIS_URL_HOST_MAX - 1);
    strcpy(msg + n + REDIS_URL_HOST_MAX - 1, " 2");
    CHECK(sentinel_parse_switch(msg, strlen(msg), "mymaster", host, &port) == 0 &&
              strlen(host) == REDIS_URL_HOST_MAX - 1,
          "a %d-byte host refused", REDIS_URL_HOST_MAX - 1);
    memset(msg + n, 'h', REDIS_URL_HOST_MAX);
    strcpy(msg + n + REDIS_URL_HOST_MAX, " 2");
    CHECK(sentinel_parse_switch(msg, strlen(msg), "mymaster", host, &port) != 0,
          "a %d-byte host accepted", REDIS_URL_HOST_MAX);
}

static void
check_epoch(void)
{
    uint64_t e0 = sentinel_epoch(), f0 = metrics_get(METRIC_REDIS_FAILOVERS);

    CHECK(sentinel_note_master("10.0.0.1", 6379) == e0, "the first address is no failover");
    CHECK(sentinel_note_master("10.0.0.1", 6379) == e0, "the same address again is none");
    CHECK(metrics_get(METRIC_REDIS_FAILOVERS) == f0, "nothing counted yet");
    CHECK(sentinel_note_master("10.0.0.1", 6380) == e0 + 1, "another port moves the epoch");
    CHECK(sentinel_note_master("10.0.0.2", 6380) == e0 + 2, "another host moves it");
    CHECK(sentinel_note_master("10.0.0.2", 6380) == e0 + 2, "and the same stays");
    CHECK(sentinel_epoch() == e0 + 2, "sentinel_epoch says so");
    CHECK(metrics_get(METRIC_REDIS_FAILOVERS) == f0 + 2, "two failovers counted");
}

int
main(void)
{
    check_switch();
    check_epoch();
    printf("test_sentinel: %d failure(s)\n", fails);
    return fails != 0;
}
