/* test_cluster_slot.c -- the pure parts of the Cluster router (cluster_slot.h): key slots against
 * the specification's vector and its hash tag rules, the tags of tocsin's keys, MOVED and ASK
 * replies, the slot map of a CLUSTER SLOTS reply, and the redirect state machine up to its bound.
 */
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cluster_slot.h"

static unsigned
slot(const char *k)
{
    return cluster_key_slot(k, strlen(k));
}

static void
check_slots(void)
{
    /* The specification's example: CRC16 of "123456789" is 0x31C3 = 12739. */
    CHECK(slot("123456789") == 12739, "123456789 -> %u", slot("123456789"));
    CHECK(slot("") == 0, "empty key -> %u", slot(""));
    /* {user1000}.following and .followers share user1000's slot. */
    CHECK(slot("{user1000}.following") == slot("user1000") &&
              slot("{user1000}.followers") == slot("user1000"),
          "hash tag not used");
    /* foo{}{bar}: the first {} is empty, so the whole key is hashed. */
    CHECK(slot("foo{}{bar}") == cluster_key_slot("foo{}{bar}", 10) &&
              slot("foo{}{bar}") != slot("bar"),
          "an empty first tag must hash the whole key");
    /* foo{{bar}}zap: the tag is "{bar" (from the first { to the first } after it). */
    CHECK(slot("foo{{bar}}zap") == slot("{bar"), "nested braces");
    /* foo{bar}{zap}: only the first tag counts. */
    CHECK(slot("foo{bar}{zap}") == slot("bar"), "second tag used");
    CHECK(slot("{unclosed") == cluster_key_slot("{unclosed", 9) && slot("a}b{c") == slot("a}b{c"),
          "no closing brace");
    /* tocsin's keys: a reminder key and its claim share the shard tag's slot. */
    CHECK(slot("t:{s17}:rem:273:1700000000000") == slot("s17") &&
              slot("t:{s17}:claim:273:1700000000000") == slot("s17"),
          "rem and claim keys must share the slot");
    for (const char *k = "abc"; *k; k++)
        CHECK(slot(k) < CLUSTER_SLOTS, "slot out of range");
}

static void
check_redirects(void)
{
    struct cluster_redirect r;

    CHECK(cluster_redirect_parse("MOVED 3999 127.0.0.1:6381", 25, &r) == 0 &&
              r.kind == CLUSTER_REDIRECT_MOVED && r.slot == 3999 &&
              strcmp(r.to.host, "127.0.0.1") == 0 && r.to.port == 6381,
          "MOVED not parsed");
    CHECK(cluster_redirect_parse("ASK 16383 ::1:7002", 18, &r) == 0 &&
              r.kind == CLUSTER_REDIRECT_ASK && r.slot == 16383 && strcmp(r.to.host, "::1") == 0 &&
              r.to.port == 7002,
          "ASK with an IPv6 host not parsed");
    static const char *bad[] = {"MOVED 16384 h:1",
                                "MOVED 1 h:0",
                                "MOVED 1 h",
                                "MOVED 1 :6379",
                                "MOVED x h:1",
                                "ASK 1 h:65536",
                                "ERR wrong",
                                "MOVED  h:1",
                                "TRYAGAIN Multiple keys request during rehashing of slot"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(cluster_redirect_parse(bad[i], strlen(bad[i]), &r) != 0, "accepted \"%s\"", bad[i]);
}

/* A reply object built by hand, as hiredis's reader would build it. */
static redisReply *
reply(int type, const char *str, long long integer, size_t n)
{
    redisReply *r = calloc(1, sizeof *r);

    r->type = type;
    r->integer = integer;
    if (str != NULL) {
        r->str = strdup(str);
        r->len = strlen(str);
    }
    r->elements = n;
    if (n > 0)
        r->element = calloc(n, sizeof *r->element);
    return r;
}

static redisReply *
range(long long lo, long long hi, const char *host, long long port)
{
    redisReply *e = reply(REDIS_REPLY_ARRAY, NULL, 0, 4), *m = reply(REDIS_REPLY_ARRAY, NULL, 0, 3);

    e->element[0] = reply(REDIS_REPLY_INTEGER, NULL, lo, 0);
    e->element[1] = reply(REDIS_REPLY_INTEGER, NULL, hi, 0);
    m->element[0] = reply(REDIS_REPLY_STRING, host, 0, 0);
    m->element[1] = reply(REDIS_REPLY_INTEGER, NULL, port, 0);
    m->element[2] = reply(REDIS_REPLY_STRING, "nodeid", 0, 0);
    e->element[2] = m;
    e->element[3] = reply(REDIS_REPLY_ARRAY, NULL, 0, 0); /* a replica: not routed to */
    return e;
}

static void
check_map(void)
{
    static struct cluster_map m;
    redisReply *r = reply(REDIS_REPLY_ARRAY, NULL, 0, 4);
    char tag[24];

    r->element[0] = range(0, 5460, "127.0.0.1", 7100);
    r->element[1] = range(5461, 10922, "127.0.0.1", 7101);
    r->element[2] = range(10923, 16383, "", 7102);      /* unknown endpoint: the node asked */
    r->element[3] = range(100, 100, "127.0.0.1", 7101); /* a slot migrated alone */
    CHECK(cluster_map_parse(r, "10.0.0.9", &m) == 0 && m.n == 3, "map not parsed");
    CHECK(m.slot[0] == 0 && m.slot[5460] == 0 && m.slot[100] == 1 && m.slot[5461] == 1 &&
              m.slot[16383] == 2,
          "slots misassigned");
    CHECK(strcmp(m.node[2].host, "10.0.0.9") == 0 && cluster_map_find(&m, "127.0.0.1", 7101) == 1 &&
              cluster_map_find(&m, "127.0.0.1", 7103) == -1,
          "hosts");
    for (size_t i = 0; i < 3; i++)
        CHECK(cluster_tag_for(&m, i, 'p', tag, sizeof tag) == 0 &&
                  m.slot[cluster_key_slot(tag, strlen(tag))] == i,
              "no tag for master %zu", i);
    r->element[3]->element[1]->integer = 16384;
    CHECK(cluster_map_parse(r, "h", &m) != 0, "slot 16384 accepted");
    freeReplyObject(r);
    r = reply(REDIS_REPLY_ERROR, "ERR This instance has cluster support disabled", 0, 0);
    CHECK(cluster_map_parse(r, "h", &m) != 0, "an error reply accepted");
    freeReplyObject(r);
}

static void
check_steps(void)
{
    struct cluster_try t = {0};
    struct cluster_redirect to;
    redisReply *ok = reply(REDIS_REPLY_STATUS, "OK", 0, 0);
    redisReply *moved = reply(REDIS_REPLY_ERROR, "MOVED 12 127.0.0.1:7101", 0, 0);
    redisReply *ask = reply(REDIS_REPLY_ERROR, "ASK 12 127.0.0.1:7102", 0, 0);
    redisReply *err = reply(REDIS_REPLY_ERROR, "CLUSTERDOWN The cluster is down", 0, 0);

    CHECK(cluster_try_next(&t, ok, &to) == CLUSTER_STEP_DONE, "OK is the answer");
    CHECK(cluster_try_next(&t, err, &to) == CLUSTER_STEP_DONE && t.redirects == 0,
          "a plain error reply is the answer");
    CHECK(cluster_try_next(&t, NULL, &to) == CLUSTER_STEP_GIVE_UP, "no reply");
    CHECK(cluster_try_next(&t, moved, &to) == CLUSTER_STEP_MOVED && to.to.port == 7101 &&
              t.redirects == 1,
          "MOVED");
    CHECK(cluster_try_next(&t, ask, &to) == CLUSTER_STEP_ASK && to.to.port == 7102 &&
              t.redirects == 2,
          "ASK");
    while (t.redirects < CLUSTER_REDIRECTS_MAX)
        CHECK(cluster_try_next(&t, moved, &to) == CLUSTER_STEP_MOVED, "MOVED within the bound");
    CHECK(cluster_try_next(&t, moved, &to) == CLUSTER_STEP_GIVE_UP,
          "a redirect past CLUSTER_REDIRECTS_MAX must give up");
    freeReplyObject(ok);
    freeReplyObject(moved);
    freeReplyObject(ask);
    freeReplyObject(err);
}

int
main(void)
{
    check_slots();
    check_redirects();
    check_map();
    check_steps();
    printf("test_cluster_slot: %d failure(s)\n", fails);
    return fails != 0;
}
