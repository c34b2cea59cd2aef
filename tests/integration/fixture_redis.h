/* fixture_redis.h -- what the Redis integration tests share: TOCSIN_TEST_REDIS_URL
 * (redis://host:port[/db]) taken apart, and a raw hiredis connection on that db for looking at
 * and deleting keys. Header-only like fixture.h. Fails, never skips, without a server. */
#ifndef TOCSIN_TESTS_FIXTURE_REDIS_H
#define TOCSIN_TESTS_FIXTURE_REDIS_H

#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

#define FIXTURE_REDIS_HOST_MAX 256

static redisContext *fixture_redis;
static char fixture_redis_host[FIXTURE_REDIS_HOST_MAX];
static int fixture_redis_port, fixture_redis_db;

/* Parses TOCSIN_TEST_REDIS_URL, connects and selects its db. 0, or -1 after a failed CHECK. */
static int
fixture_redis_open(void)
{
    const char *url = getenv("TOCSIN_TEST_REDIS_URL");
    redisReply *sel = NULL;

    signal(SIGPIPE, SIG_IGN);
    CHECK(url != NULL && sscanf(url, "redis://%255[^:/]:%d/%d", fixture_redis_host,
                                &fixture_redis_port, &fixture_redis_db) >= 2,
          "TOCSIN_TEST_REDIS_URL must be set to redis://host:port[/db]");
    if (fails > 0)
        return -1;
    fixture_redis = redisConnect(fixture_redis_host, fixture_redis_port);
    CHECK(fixture_redis != NULL && fixture_redis->err == 0, "cannot connect to Redis at %s", url);
    if (fails == 0) {
        sel = redisCommand(fixture_redis, "SELECT %d", fixture_redis_db);
        CHECK(sel != NULL && sel->type != REDIS_REPLY_ERROR, "SELECT %d", fixture_redis_db);
    }
    if (sel != NULL)
        freeReplyObject(sel);
    return fails > 0 ? -1 : 0;
}

static void
fixture_redis_close(void)
{
    redisFree(fixture_redis);
    fixture_redis = NULL;
}

#endif
