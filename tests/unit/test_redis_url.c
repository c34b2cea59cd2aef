/* test_redis_url.c -- TOCSIN_REDIS_URL through libcurl's URL API: every field, percent-decoding,
 * IPv6, ACL users, rediss:// (TLS), the db bound (at the limit and one past), and the refusals with
 * their reason. */
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
    printf("test_redis_url: %d failure(s)\n", fails);
    return fails != 0;
}
