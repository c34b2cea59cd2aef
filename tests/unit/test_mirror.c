/* test_mirror.c -- the Redis key schema: mirror_key_format and mirror_key_parse, no Redis needed.
 * A table of key names with the expected parse result, plus format/parse round trips. */
#include "mirror.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

static const struct {
    const char *key;
    int want; /* 0 = parses, -1 = not ours */
    int64_t id, fire_at;
} cases[] = {
    {"tocsin:rem:1:2", 0, 1, 2},
    {"tocsin:rem:42:1767225600000", 0, 42, 1767225600000},
    {"tocsin:rem:0:0", 0, 0, 0},
    {"tocsin:rem:9223372036854775807:9223372036854775807", 0, INT64_MAX, INT64_MAX},
    {"tocsin:rem:9223372036854775808:1", -1, 0, 0}, /* id overflows */
    {"tocsin:rem:1:9223372036854775808", -1, 0, 0}, /* fire_at overflows */
    {"tocsin:rem:1:99999999999999999999", -1, 0, 0},
    {"other:rem:1:2", -1, 0, 0},   /* other prefix */
    {"tocsinx:rem:1:2", -1, 0, 0}, /* prefix must match exactly */
    {"tocsi:rem:1:2", -1, 0, 0},
    {"Tocsin:rem:1:2", -1, 0, 0},
    {"tocsin:claim:1:2", -1, 0, 0}, /* a claim key is not a reminder key */
    {"tocsin:recon:marker:replica-1", -1, 0, 0},
    {"tocsin:rem:", -1, 0, 0},
    {"tocsin:rem::", -1, 0, 0},
    {"tocsin:rem::2", -1, 0, 0}, /* empty id */
    {"tocsin:rem:1:", -1, 0, 0}, /* empty fire_at */
    {"tocsin:rem:1", -1, 0, 0},  /* no second part */
    {"tocsin:rem:1:2:3", -1, 0, 0},
    {"tocsin:rem:+1:2", -1, 0, 0},
    {"tocsin:rem:-1:2", -1, 0, 0},
    {"tocsin:rem:1:-2", -1, 0, 0},
    {"tocsin:rem: 1:2", -1, 0, 0},
    {"tocsin:rem:1:2 ", -1, 0, 0},
    {"tocsin:rem:1a:2", -1, 0, 0},
    {"tocsin:rem:1:0x2", -1, 0, 0},
    {"tocsin:rem:01:2", -1, 0, 0}, /* padding is never written, so not ours */
    {"tocsin:rem:1:02", -1, 0, 0},
    {"tocsin", -1, 0, 0},
    {"", -1, 0, 0},
    /* The Cluster form: the shard tag must be the reminder's (id % 256). */
    {"tocsin:{s1}:rem:257:2", 0, 257, 2},
    {"tocsin:{s0}:rem:256:2", 0, 256, 2},
    {"tocsin:{s2}:rem:257:2", -1, 0, 0},
    {"tocsin:{s01}:rem:257:2", -1, 0, 0},
    {"tocsin:{s1:rem:257:2", -1, 0, 0},
    {"tocsin:{s1}:claim:257:2", -1, 0, 0},
    {"tocsin:{s}:rem:0:2", -1, 0, 0},
};

static const struct {
    const char *prefix;
    int64_t id, fire_at;
} trips[] = {
    {"tocsin", 1, 1767225600000},
    {"t", 0, 0},
    {"a.b-c_d", 123456789, 1},
    {"tocsin", INT64_MAX, INT64_MAX},
    {"0123456789012345678901234567890123456789012345678901234567890123", INT64_MAX, INT64_MAX},
};

static void
check_parse(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t id = -7, at = -7;
        int got = mirror_key_parse(cases[i].key, strlen(cases[i].key), "tocsin", &id, &at);

        CHECK(got == cases[i].want && (got != 0 || (id == cases[i].id && at == cases[i].fire_at)),
              "parse %zu \"%s\": got %d id=%" PRId64 " at=%" PRId64, i, cases[i].key, got, id, at);
    }
}

/* The length argument bounds the parse: a longer buffer's tail must not be read. */
static void
check_len(void)
{
    const char *key = "tocsin:rem:12:34XYZ";
    int64_t id = 0, at = 0;

    CHECK(mirror_key_parse(key, strlen(key) - 3, "tocsin", &id, &at) == 0 && id == 12 && at == 34,
          "parse with explicit length");
}

static void
check_trips(void)
{
    for (size_t i = 0; i < sizeof trips / sizeof trips[0]; i++) {
        char key[MIRROR_KEY_MAX];
        int64_t id = -1, at = -1;
        size_t n =
            mirror_key_format(key, sizeof key, trips[i].prefix, trips[i].id, trips[i].fire_at);

        CHECK(n != 0 && n == strlen(key) &&
                  mirror_key_parse(key, n, trips[i].prefix, &id, &at) == 0 && id == trips[i].id &&
                  at == trips[i].fire_at,
              "round trip %zu \"%s\"", i, key);
    }
}

static void
check_format(void)
{
    char key[MIRROR_KEY_MAX], small[8];

    CHECK(mirror_key_format(key, sizeof key, "tocsin", 7, 1767225600000) == 26 &&
              strcmp(key, "tocsin:rem:7:1767225600000") == 0,
          "format: \"%s\"", key);
    CHECK(mirror_key_format(small, sizeof small, "tocsin", 7, 1) == 0,
          "format into a short buffer must return 0");
}

int
main(void)
{
    check_parse();
    check_len();
    check_trips();
    check_format();
    return check_summary("test_mirror");
}
