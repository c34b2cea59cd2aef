/* itest_mirror.c -- mirror.c against a real Redis (7.0+, for PEXPIRETIME). Needs
 * TOCSIN_TEST_REDIS_URL=redis://host:port/db and fails, never skips, without it. Each run uses its
 * own key prefix. Checks exact expiry times, the horizon, NX, DEL (going on past a refused round,
 * and sent without waiting), the notify setting, run_id, and that a Redis that is not there costs
 * callers almost nothing. Uses hiredis directly to look. */
#include "fixture_redis.h"
#include "mirror.h"
#include "mirror_internal.h"
#include "redis_conn.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HORIZON_MS 3600000
#define DEAD_CALLS 20
#define DEAD_BUDGET_MS 2000

static char prefix[MIRROR_PREFIX_MAX + 1];

static int64_t
now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t
mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Runs a command on the fixture_redis connection and returns its integer reply (INT64_MIN on
 * anything else).
 */
static int64_t
raw_int(int argc, const char **argv)
{
    redisReply *r = redisCommandArgv(fixture_redis, argc, argv, NULL);
    int64_t v = INT64_MIN;

    if (r != NULL && r->type == REDIS_REPLY_INTEGER)
        v = r->integer;
    if (r != NULL)
        freeReplyObject(r);
    return v;
}

static int64_t
pexpiretime(const struct reminder_key *k)
{
    char key[MIRROR_KEY_MAX];
    const char *argv[] = {"PEXPIRETIME", key};

    mirror_key_format(key, sizeof key, prefix, k->reminder_id, k->fire_at_ms);
    return raw_int(2, argv);
}

/* Reads notify-keyspace-events into out; sets it first when set_to is not NULL. */
static int
raw_notify(const char *set_to, char *out, size_t outlen)
{
    redisReply *r;
    int rc = -1;

    if (set_to != NULL) {
        r = redisCommand(fixture_redis, "CONFIG SET notify-keyspace-events %s", set_to);
        if (r != NULL)
            freeReplyObject(r);
    }
    r = redisCommand(fixture_redis, "CONFIG GET notify-keyspace-events");
    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2) {
        snprintf(out, outlen, "%s", r->element[1]->str);
        rc = 0;
    }
    if (r != NULL)
        freeReplyObject(r);
    return rc;
}

static void
test_arm(struct mirror *mi)
{
    int64_t now = now_ms();
    struct reminder_key keys[] = {
        {1, now + 60000},          /* armed */
        {2, now + HORIZON_MS},     /* armed: the horizon is inclusive */
        {3, now + HORIZON_MS + 1}, /* beyond the horizon */
        {4, now},                  /* due now: not armed */
        {5, now - 1},              /* past */
    };
    const int64_t want[] = {now + 60000, now + HORIZON_MS, -2, -2, -2};
    size_t n_set = 0;

    CHECK(mirror_arm_count(mi, keys, 5, now, 0, &n_set) == 0, "mirror_arm failed");
    CHECK(n_set == 2, "n_set %zu, want 2", n_set);
    for (size_t i = 0; i < 5; i++)
        CHECK(pexpiretime(&keys[i]) == want[i], "key %zu: PEXPIRETIME %" PRId64 ", want %" PRId64,
              i, pexpiretime(&keys[i]), want[i]);
    CHECK(mirror_arm(mi, keys, 0, now, 0) == 0, "arming nothing must succeed");
    CHECK(mirror_disarm(mi, keys, 5) == 0, "disarm failed");
}

/* With only_missing, an existing key keeps its expiry; without, it is rewritten. */
static void
test_nx(struct mirror *mi)
{
    int64_t now = now_ms();
    struct reminder_key k = {10, now + 120000};
    char key[MIRROR_KEY_MAX], later[32];
    const char *pexpireat[] = {"PEXPIREAT", key, later};
    size_t n_set = 0;

    mirror_key_format(key, sizeof key, prefix, k.reminder_id, k.fire_at_ms);
    snprintf(later, sizeof later, "%" PRId64, k.fire_at_ms + 5000);
    CHECK(mirror_arm(mi, &k, 1, now, 1) == 0, "NX arm of a missing key failed");
    CHECK(pexpiretime(&k) == k.fire_at_ms, "NX arm did not set the key");
    CHECK(raw_int(3, pexpireat) == 1, "PEXPIREAT failed");
    CHECK(mirror_arm_count(mi, &k, 1, now, 1, &n_set) == 0 && n_set == 0, "NX arm: n_set %zu",
          n_set);
    CHECK(pexpiretime(&k) == k.fire_at_ms + 5000, "NX arm changed an existing key's expiry");
    CHECK(mirror_arm(mi, &k, 1, now, 0) == 0, "plain arm failed");
    CHECK(pexpiretime(&k) == k.fire_at_ms, "plain arm did not reset the expiry");
    CHECK(mirror_disarm(mi, &k, 1) == 0, "disarm failed");
    CHECK(pexpiretime(&k) == -2, "disarm left the key");
    CHECK(mirror_disarm(mi, &k, 1) == 0, "disarm of a missing key must succeed");
}

/* DELs sent without waiting: the next command reads their replies first, so it gets its own
 * reply, and by then the keys are gone. */
static void
test_disarm_nowait(struct mirror *mi)
{
    int64_t now = now_ms();
    struct reminder_key keys[] = {{20, now + 60000}, {21, now + 61000}, {22, now + 62000}};
    struct reminder_key next = {23, now + 63000};
    size_t n_set = 0;

    CHECK(mirror_arm(mi, keys, 3, now, 0) == 0, "arm failed");
    CHECK(mirror_disarm_nowait(mi, keys, 3) == 0, "disarm_nowait failed");
    CHECK(mirror_arm_count(mi, &next, 1, now, 1, &n_set) == 0 && n_set == 1,
          "the command after disarm_nowait: n_set %zu, want 1", n_set);
    CHECK(pexpiretime(&next) == next.fire_at_ms, "the command after disarm_nowait did not set");
    for (size_t i = 0; i < 3; i++)
        CHECK(pexpiretime(&keys[i]) == -2, "key %zu left after disarm_nowait", i);
    CHECK(mirror_disarm_nowait(mi, &next, 1) == 0 && mirror_ping(mi) == 0,
          "PING after disarm_nowait failed");
    CHECK(pexpiretime(&next) == -2, "the last key left after disarm_nowait");
}

/* More keys than one pipeline round holds, armed and disarmed in one call each. */
static void
test_many(struct mirror *mi)
{
    enum { N = 700 };
    static struct reminder_key keys[N];
    int64_t now = now_ms();
    size_t n_set = 0, wrong = 0;

    for (size_t i = 0; i < N; i++)
        keys[i] = (struct reminder_key){1000 + (int64_t)i, now + 1000 + (int64_t)i};
    CHECK(mirror_arm_count(mi, keys, N, now, 1, &n_set) == 0 && n_set == N, "n_set %zu", n_set);
    for (size_t i = 0; i < N; i++)
        wrong += pexpiretime(&keys[i]) != keys[i].fire_at_ms;
    CHECK(wrong == 0, "%zu keys with a wrong expiry", wrong);
    CHECK(mirror_disarm(mi, keys, N) == 0, "disarm failed");
    for (size_t i = 0; i < N; i++)
        wrong += pexpiretime(&keys[i]) != -2;
    CHECK(wrong == 0, "%zu keys left after disarm", wrong);
}

/* An error reply in one pipeline round does not stop the others: an ACL user that may touch only
 * the keys of ids 2xxx disarms keys of ids 1xxx (refused, NOPERM) then 2xxx, more than a round
 * each. Every 2xxx key goes, every 1xxx key stays, and the call reports the failure. */
static void
test_disarm_goes_on(struct mirror *mi)
{
    enum { HALF = 300 };
    static struct reminder_key keys[2 * HALF];
    char user[64], pattern[MIRROR_PREFIX_MAX + 16];
    const char *setuser[] = {"ACL", "SETUSER", user, "on", ">disarm-pw", pattern, "+@all"};
    const char *deluser[] = {"ACL", "DELUSER", user};
    int64_t now = now_ms();
    size_t left[2] = {0, 0};

    snprintf(user, sizeof user, "itest_mirror_%ld", (long)getpid());
    snprintf(pattern, sizeof pattern, "~%s:rem:2*", prefix);
    for (size_t i = 0; i < HALF; i++) {
        keys[i] = (struct reminder_key){1000 + (int64_t)i, now + 60000};
        keys[HALF + i] = (struct reminder_key){2000 + (int64_t)i, now + 60000};
    }
    redisReply *r = redisCommandArgv(fixture_redis, 7, setuser, NULL);
    CHECK(r != NULL && r->type == REDIS_REPLY_STATUS, "ACL SETUSER failed");
    if (r != NULL)
        freeReplyObject(r);
    struct mirror_opts o = {.host = fixture_redis_host,
                            .port = fixture_redis_port,
                            .db = fixture_redis_db,
                            .user = user,
                            .password = "disarm-pw",
                            .prefix = prefix,
                            .horizon_ms = HORIZON_MS};
    struct mirror *limited = mirror_new(&o);
    CHECK(mirror_arm(mi, keys, 2 * HALF, now, 0) == 0, "arm failed");
    CHECK(limited != NULL && mirror_disarm(limited, keys, 2 * HALF) == -1,
          "a disarm with refused keys must report it");
    for (size_t i = 0; i < 2 * HALF; i++)
        left[i / HALF] += pexpiretime(&keys[i]) != -2;
    CHECK(left[0] == HALF && left[1] == 0, "left after disarm: %zu refused of %d, %zu allowed",
          left[0], HALF, left[1]);
    mirror_free(limited);
    CHECK(mirror_disarm(mi, keys, 2 * HALF) == 0, "cleanup disarm failed");
    raw_int(3, deluser);
}

static void
test_notify(struct mirror *mi)
{
    char before[64], got[64], err[256] = "";

    CHECK(raw_notify(NULL, before, sizeof before) == 0, "CONFIG GET failed");
    CHECK(raw_notify("", got, sizeof got) == 0 && got[0] == '\0', "could not clear the setting");
    CHECK(mirror_ensure_notify(mi, err, sizeof err) == 0, "ensure_notify: %s", err);
    CHECK(raw_notify(NULL, got, sizeof got) == 0 && strchr(got, 'E') && strchr(got, 'x'),
          "after ensure_notify: \"%s\"", got);
    CHECK(raw_notify("Kg", got, sizeof got) == 0, "CONFIG SET Kg failed");
    CHECK(mirror_ensure_notify(mi, err, sizeof err) == 0, "ensure_notify: %s", err);
    CHECK(raw_notify(NULL, got, sizeof got) == 0 && strchr(got, 'E') && strchr(got, 'x') &&
              strchr(got, 'K') && strchr(got, 'g'),
          "existing flags must stay: \"%s\"", got);
    CHECK(raw_notify("EA", got, sizeof got) == 0, "CONFIG SET EA failed");
    CHECK(mirror_ensure_notify(mi, err, sizeof err) == 0, "ensure_notify with EA: %s", err);
    raw_notify(before, got, sizeof got);
}

static void
test_identity(struct mirror *mi)
{
    char id[MIRROR_RUN_ID_MAX + 1] = "", key[MIRROR_KEY_MAX];
    const char *del[] = {"DEL", key};
    size_t hex = 0;

    CHECK(mirror_ping(mi) == 0, "PING failed");
    /* Every connection keeps TCP keepalive: the subscriber, which only reads, notices a Redis
     * host gone without a reset. */
    int keepalive = 0;
    socklen_t len = sizeof keepalive;
    struct redis_conn *c = mirror_conn(mi);
    CHECK(c != NULL &&
              getsockopt(redis_conn_fd(c), SOL_SOCKET, SO_KEEPALIVE, &keepalive, &len) == 0 &&
              keepalive == 1,
          "SO_KEEPALIVE on the connection");
    CHECK(mirror_run_id(mi, id) == 0, "run_id failed");
    for (const char *p = id; *p != '\0'; p++)
        hex += isxdigit((unsigned char)*p) != 0;
    CHECK(strlen(id) == 40 && hex == 40, "run_id \"%s\"", id);
    snprintf(key, sizeof key, "%s:recon:marker:one", prefix);
    CHECK(mirror_marker_ensure(mi, "one") == 1, "marker must be missing in a fresh prefix");
    CHECK(mirror_marker_ensure(mi, "one") == 0, "marker must be there now");
    CHECK(mirror_marker_ensure(mi, "two") == 1, "another replica's marker is its own");
    const char *pttl[] = {"PTTL", key};
    long long left = raw_int(2, pttl);
    CHECK(left > MIRROR_MARKER_TTL_MS - 60000 && left <= MIRROR_MARKER_TTL_MS,
          "the marker lives MIRROR_MARKER_TTL_MS, refreshed: %lld ms left", left);
    CHECK(raw_int(2, del) == 1, "DEL marker failed");
    CHECK(mirror_marker_ensure(mi, "one") == 1, "deleted marker must be reported missing");
    raw_int(2, del);
    snprintf(key, sizeof key, "%s:recon:marker:two", prefix);
    raw_int(2, del);
}

/* A port nothing listens on: bind an ephemeral one, then close it. */
static int
closed_port(void)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

    if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
        port = ntohs(sa.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

static void
test_dead(void)
{
    struct mirror_opts o = {
        .host = "127.0.0.1", .port = closed_port(), .prefix = prefix, .horizon_ms = HORIZON_MS};
    struct mirror *mi = mirror_new(&o);
    int64_t now = now_ms(), t0 = mono_ms(), elapsed;
    struct reminder_key k = {1, now + 60000};
    char err[256] = "", id[MIRROR_RUN_ID_MAX + 1];
    int ok = 0;

    CHECK(mi != NULL && o.port > 0, "setup failed");
    for (int i = 0; i < DEAD_CALLS; i++)
        ok += mirror_arm(mi, &k, 1, now, 1) == 0 || mirror_disarm(mi, &k, 1) == 0 ||
              mirror_ping(mi) == 0 || mirror_run_id(mi, id) == 0 ||
              mirror_marker_ensure(mi, "one") >= 0;
    CHECK(ok == 0, "%d calls against a closed port succeeded", ok);
    CHECK(mirror_ensure_notify(mi, err, sizeof err) == -1 && strstr(err, "notify-keyspace-events"),
          "err \"%s\"", err);
    elapsed = mono_ms() - t0;
    CHECK(elapsed < DEAD_BUDGET_MS, "%d rounds against a closed port took %" PRId64 " ms",
          DEAD_CALLS, elapsed);
    mirror_free(mi);
}

int
main(void)
{
    struct mirror *mi;

    if (fixture_redis_open() != 0) {
        fixture_redis_close();
        return check_summary("itest_mirror");
    }
    snprintf(prefix, sizeof prefix, "itest_mirror_%ld_%" PRId64, (long)getpid(), now_ms());
    struct mirror_opts o = {.host = fixture_redis_host,
                            .port = fixture_redis_port,
                            .db = fixture_redis_db,
                            .prefix = prefix,
                            .horizon_ms = HORIZON_MS};
    mi = mirror_new(&o);
    CHECK(mi != NULL && mirror_ping(mi) == 0, "mirror cannot reach Redis at %s:%d",
          fixture_redis_host, fixture_redis_port);
    if (fails > 0) {
        mirror_free(mi);
        fixture_redis_close();
        return check_summary("itest_mirror");
    }
    test_identity(mi);
    test_arm(mi);
    test_nx(mi);
    test_disarm_nowait(mi);
    test_many(mi);
    test_disarm_goes_on(mi);
    test_notify(mi);
    test_dead();
    mirror_free(mi);
    fixture_redis_close();
    return check_summary("itest_mirror");
}
