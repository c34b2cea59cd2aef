/* test_redis_url.c -- TOCSIN_REDIS_URL through libcurl's URL API: every field, percent-decoding,
 * IPv6, ACL users, rediss:// (TLS), the db bound (at the limit and one past), and the refusals with
 * their reason; the Sentinel form redis[s]-sentinel:// with its host list (up to the bound and one
 * past), master name (its bound too), db and credentials. */
#include <string.h>

#include "check.h"
#include "redis_url.h"

static const struct {
    const char *url;
    const char *host;
    int port, db;
    const char *user, *password;
    int tls;
} good[] = {
    {"redis://127.0.0.1:6379/0", "127.0.0.1", 6379, 0, "", "", 0},
    {"redis://localhost", "localhost", 6379, 0, "", "", 0},
    {"redis://localhost/", "localhost", 6379, 0, "", "", 0},
    {"REDIS://Redis.Example:1/15", "Redis.Example", 1, 15, "", "", 0},
    {"redis://h:65535/3", "h", 65535, 3, "", "", 0},
    {"redis://:secret@h:1/15", "h", 1, 15, "", "secret", 0},
    /* an ACL user: AUTH user password */
    {"redis://tocsin:s3cret@redis:6380/2", "redis", 6380, 2, "tocsin", "s3cret", 0},
    /* percent-encoded: '@' ':' '/' '%' '#' '?' ' ' in the password, '@' in the user */
    {"redis://app%40team:p%40ss%3Aw%2Frd%25%23%3F%20x@h/1", "h", 6379, 1, "app@team",
     "p@ss:w/rd%#? x", 0},
    {"redis://[::1]:6390/4", "::1", 6390, 4, "", "", 0},
    {"redis://[2001:db8::7]/0", "2001:db8::7", 6379, 0, "", "", 0},
    {"redis://:pw@[fe80::1%25eth0]:7000", "fe80::1%eth0", 7000, 0, "", "pw", 0},
    /* rediss:// is TLS, with everything else as for redis:// */
    {"rediss://u:pw@redis.example:6380/2", "redis.example", 6380, 2, "u", "pw", 1},
    {"REDISS://h", "h", 6379, 0, "", "", 1},
};

static const struct {
    const char *url;
    const char *why; /* a word the reason must contain */
} bad[] = {
    {"http://h:1/0", "rediss://"},
    {"redisss://h:1/0", "scheme"},
    {"h:6379", "redis://"},
    {"redis://h:1/16", "/15"},
    {"redis://h%zz:1/0", "valid escape"}, /* libcurl keeps an escape it cannot decode */
    {"redis://h:1/-1", "/15"},
    {"redis://h:1/1/2", "/15"},
    {"redis://h:1/x", "/15"},
    {"redis://h:0/0", "port"},
    {"redis://h:65536/0", ""},
    {"redis://:6379", ""},
    {"redis://", ""},
    {"redis://user@h/0", "colon"},
    {"redis://user:@h/0", "password"},
    {"redis://:p%00w@h/0", "%00"},
    {"redis://h/0?timeout=1", "query"},
    {"redis://h/0#x", "fragment"},
    {"redis://[::1/0", ""},
    {"", ""},
};

/* The Sentinel form: hosts joined with "|" as "host:port", for one comparison. */
static const struct {
    const char *url;
    const char *hosts, *master;
    int db;
    const char *user, *password;
    int tls;
} sentinel_good[] = {
    {"redis-sentinel://10.0.0.1:26379,10.0.0.2:26380,s3/mymaster/2",
     "10.0.0.1:26379|10.0.0.2:26380|s3:26379", "mymaster", 2, "", "", 0},
    {"redis-sentinel://s1/m", "s1:26379", "m", 0, "", "", 0},
    {"redis-sentinel://s1/m/", "s1:26379", "m", 0, "", "", 0},
    {"REDIS-SENTINEL://S1:1/My.Master_1-x/15", "S1:1", "My.Master_1-x", 15, "", "", 0},
    /* the credentials are the data nodes': an ACL user, percent-encoded */
    {"redis-sentinel://app:p%40ss%2C%2Fw@s1,s2/m/1", "s1:26379|s2:26379", "m", 1, "app", "p@ss,/w",
     0},
    {"redis-sentinel://:pw@[::1]:26379,[fe80::1%25eth0]/m", "::1:26379|fe80::1%eth0:26379", "m", 0,
     "", "pw", 0},
    {"rediss-sentinel://u:pw@s1:26390/m/3", "s1:26390", "m", 3, "u", "pw", 1},
};

static const struct {
    const char *url;
    const char *why;
} sentinel_bad[] = {
    {"redis-sentinel://s1", "master name"},
    {"redis-sentinel://s1/", "master name"},
    {"redis-sentinel://s1,/m", "empty host"},
    {"redis-sentinel://,s1/m", "empty host"},
    {"redis-sentinel:///m", "empty host"},
    {"redis-sentinel://s1:0/m", "port"},
    {"redis-sentinel://s1:65536/m", "port"},
    {"redis-sentinel://s1/m/16", "0..15"},
    {"redis-sentinel://s1/m/x", "0..15"},
    {"redis-sentinel://s1/m/1/2", "0..15"},
    {"redis-sentinel://s1/m%20x", "[A-Za-z0-9_.-]"},
    {"redis-sentinel://s1/m?x=1", "query"},
    {"redis-sentinel://s1/m#x", "fragment"},
    {"redis-sentinel://user@s1/m", "colon"},
    {"redis-sentinel://:p%00w@s1/m", "%00"},
    {"redis-sentinel://s 1/m", "host[:port]"},
    {"redis-sentinels://s1/m", "scheme"},
};

static void
check_sentinel_good(void)
{
    struct redis_url u;
    char err[256], hosts[1024];

    for (size_t i = 0; i < sizeof sentinel_good / sizeof sentinel_good[0]; i++) {
        int rc = redis_url_parse(sentinel_good[i].url, &u, err, sizeof err);
        size_t n = 0;

        CHECK(rc == 0, "%s refused: %s", sentinel_good[i].url, err);
        if (rc != 0)
            continue;
        hosts[0] = '\0';
        for (size_t k = 0; k < u.n_sentinels; k++)
            n += (size_t)snprintf(hosts + n, sizeof hosts - n, "%s%s:%d", k ? "|" : "",
                                  u.sentinels[k].host, u.sentinels[k].port);
        CHECK(u.sentinel == 1 && u.host[0] == '\0', "%s: not the Sentinel form",
              sentinel_good[i].url);
        CHECK(strcmp(hosts, sentinel_good[i].hosts) == 0, "%s: hosts %s", sentinel_good[i].url,
              hosts);
        CHECK(strcmp(u.master, sentinel_good[i].master) == 0, "%s: master %s", sentinel_good[i].url,
              u.master);
        CHECK(u.db == sentinel_good[i].db, "%s: db %d", sentinel_good[i].url, u.db);
        CHECK(strcmp(u.user, sentinel_good[i].user) == 0, "%s: user %s", sentinel_good[i].url,
              u.user);
        CHECK(strcmp(u.password, sentinel_good[i].password) == 0, "%s: password %s",
              sentinel_good[i].url, u.password);
        CHECK(u.tls == sentinel_good[i].tls, "%s: tls %d", sentinel_good[i].url, u.tls);
    }
}

static void
check_sentinel_bad(void)
{
    struct redis_url u;
    char err[256];

    for (size_t i = 0; i < sizeof sentinel_bad / sizeof sentinel_bad[0]; i++) {
        err[0] = '\0';
        CHECK(redis_url_parse(sentinel_bad[i].url, &u, err, sizeof err) != 0, "%s accepted",
              sentinel_bad[i].url);
        CHECK(err[0] != '\0' && strstr(err, sentinel_bad[i].why) != NULL, "%s: reason \"%s\"",
              sentinel_bad[i].url, err);
    }
}

/* REDIS_URL_SENTINELS_MAX hosts fit, one more does not; a master name of
 * REDIS_URL_MASTER_MAX - 1 bytes fits, one more does not. */
static void
check_sentinel_bounds(void)
{
    struct redis_url u;
    char url[2048] = "redis-sentinel://", err[256];
    size_t n = strlen(url);

    for (int i = 0; i < REDIS_URL_SENTINELS_MAX; i++)
        n += (size_t)snprintf(url + n, sizeof url - n, "%ss%d", i ? "," : "", i);
    strcpy(url + n, "/m");
    CHECK(redis_url_parse(url, &u, err, sizeof err) == 0 &&
              u.n_sentinels == REDIS_URL_SENTINELS_MAX,
          "%d Sentinels: %s", REDIS_URL_SENTINELS_MAX, err);
    strcpy(url + n, ",one-more/m");
    CHECK(redis_url_parse(url, &u, err, sizeof err) != 0 && strstr(err, "16") != NULL,
          "%d Sentinels accepted", REDIS_URL_SENTINELS_MAX + 1);
    n = (size_t)snprintf(url, sizeof url, "redis-sentinel://s1/");
    memset(url + n, 'm', REDIS_URL_MASTER_MAX - 1);
    strcpy(url + n + REDIS_URL_MASTER_MAX - 1, "/0");
    CHECK(redis_url_parse(url, &u, err, sizeof err) == 0 &&
              strlen(u.master) == REDIS_URL_MASTER_MAX - 1,
          "a %d-byte master name: %s", REDIS_URL_MASTER_MAX - 1, err);
    memset(url + n, 'm', REDIS_URL_MASTER_MAX);
    strcpy(url + n + REDIS_URL_MASTER_MAX, "/0");
    CHECK(redis_url_parse(url, &u, err, sizeof err) != 0 && strstr(err, "64") != NULL,
          "a %d-byte master name accepted", REDIS_URL_MASTER_MAX);
}

/* redis[s]-cluster://: seeds with the data port as default, db 0 only, no master. */
static void
check_cluster(void)
{
    static const struct {
        const char *url;
        const char *why; /* NULL = accepted */
    } cases[] = {
        {"redis-cluster://127.0.0.1:7100,127.0.0.1:7101,[::1]:7102/", NULL},
        {"rediss-cluster://u:p%40ss@cache.example", NULL},
        {"redis-cluster://h1:7000/0", NULL},
        {"redis-cluster://h1:7000/1", "db 0 only"},
        {"redis-cluster://h1:7000/mymaster", "db 0 only"},
        {"redis-cluster://h1,,h2", "empty host"},
        {"redis-cluster://h1:0", "1..65535"},
        {"redis-cluster://h1?x=1", "query"},
    };
    struct redis_url u;
    char err[256];

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = redis_url_parse(cases[i].url, &u, err, sizeof err);
        if (cases[i].why != NULL) {
            CHECK(rc != 0 && strstr(err, cases[i].why) != NULL, "%s: rc %d, \"%s\"", cases[i].url,
                  rc, err);
            continue;
        }
        CHECK(rc == 0 && u.cluster == 1 && u.sentinel == 0 && u.host[0] == '\0' && u.db == 0 &&
                  u.master[0] == '\0',
              "%s: rc %d %s", cases[i].url, rc, err);
    }
    CHECK(redis_url_parse(cases[0].url, &u, err, sizeof err) == 0 && u.n_sentinels == 3 &&
              strcmp(u.sentinels[2].host, "::1") == 0 && u.sentinels[2].port == 7102 && !u.tls,
          "seed list");
    CHECK(redis_url_parse(cases[1].url, &u, err, sizeof err) == 0 && u.tls &&
              u.sentinels[0].port == REDIS_URL_PORT_DEFAULT && strcmp(u.password, "p@ss") == 0 &&
              strcmp(u.user, "u") == 0,
          "TLS seed with credentials");
}

int
main(void)
{
    struct redis_url u;
    char err[256];
    char longpw[600] = "redis://:";

    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        int rc = redis_url_parse(good[i].url, &u, err, sizeof err);
        CHECK(rc == 0, "%s refused: %s", good[i].url, err);
        if (rc != 0)
            continue;
        CHECK(strcmp(u.host, good[i].host) == 0, "%s: host %s", good[i].url, u.host);
        CHECK(u.port == good[i].port, "%s: port %d", good[i].url, u.port);
        CHECK(u.db == good[i].db, "%s: db %d", good[i].url, u.db);
        CHECK(strcmp(u.user, good[i].user) == 0, "%s: user %s", good[i].url, u.user);
        CHECK(strcmp(u.password, good[i].password) == 0, "%s: password %s", good[i].url,
              u.password);
        CHECK(u.tls == good[i].tls, "%s: tls %d", good[i].url, u.tls);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        CHECK(redis_url_parse(bad[i].url, &u, err, sizeof err) != 0, "%s accepted", bad[i].url);
        CHECK(err[0] != '\0' && strstr(err, bad[i].why) != NULL, "%s: reason \"%s\"", bad[i].url,
              err);
    }
    /* A password of REDIS_URL_CRED_MAX - 1 bytes fits; one more does not. */
    memset(longpw + 9, 'p', REDIS_URL_CRED_MAX - 1);
    strcpy(longpw + 9 + REDIS_URL_CRED_MAX - 1, "@h/0");
    CHECK(redis_url_parse(longpw, &u, err, sizeof err) == 0 &&
              strlen(u.password) == REDIS_URL_CRED_MAX - 1,
          "a %d-byte password: %s", REDIS_URL_CRED_MAX - 1, err);
    memset(longpw + 9, 'p', REDIS_URL_CRED_MAX);
    strcpy(longpw + 9 + REDIS_URL_CRED_MAX, "@h/0");
    CHECK(redis_url_parse(longpw, &u, err, sizeof err) != 0 && strstr(err, "255") != NULL,
          "a %d-byte password accepted", REDIS_URL_CRED_MAX);
    /* The reason never repeats the password. */
    CHECK(redis_url_parse("redis://:hunter2@h:0/0", &u, err, sizeof err) != 0 &&
              strstr(err, "hunter2") == NULL,
          "reason names the password: %s", err);
    check_sentinel_good();
    check_cluster();
    check_sentinel_bad();
    check_sentinel_bounds();
    /* Nor does the Sentinel form's. */
    CHECK(redis_url_parse("redis-sentinel://:hunter2@s1:0/m", &u, err, sizeof err) != 0 &&
              strstr(err, "hunter2") == NULL,
          "reason names the password: %s", err);
    printf("test_redis_url: %d failure(s)\n", fails);
    return fails != 0;
}
