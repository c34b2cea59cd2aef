/* test_cors.c -- TOCSIN_CORS_ORIGINS: a table of lists, the ones refused and why (a bracketed host
 * must hold a lower-case IPv6 address, which inet_pton takes), then what the parsed list allows. */
#include <string.h>

#include "check.h"
#include "cors.h"

static const struct {
    const char *list;
    const char *why; /* NULL: accepted; else a part of the reason */
} cases[] = {
    {"", NULL},
    {"*", NULL},
    {"https://app.example.com", NULL},
    {"http://localhost:8080, https://app.example.com", NULL},
    {"http://127.0.0.1:3000", NULL},
    {"http://[::1]", NULL},
    {"http://[::1]:8080", NULL},
    {"https://[2001:db8::42]:443", NULL},
    {"http://[::ffff:192.0.2.1]", NULL},
    {"http://[fe80::1:2:3:4]:1, http://a.test", NULL},
    {"http://[anything]", "IPv6"},
    {"http://[]", "IPv6"},
    {"http://[::1", "IPv6"},
    {"http://[:::1]", "IPv6"},
    {"http://[1:2:3:4:5:6:7:8:9]", "IPv6"},
    {"http://[12345::1]", "IPv6"},
    {"http://[::1%eth0]", "IPv6"},
    {"http://[::G]", "IPv6"},
    {"http://[2001:DB8::1]", "IPv6"}, /* browsers send lower case */
    {"http://[192.0.2.1]", "IPv6"},
    {"http://a.test, http://[x]:80", "IPv6"},
    {"http://[::1]x", "such as https://"},
    {"http://[::1]:", "such as https://"},
    {"http://[::1]:123456", "such as https://"},
    {"http://[::1]/", "such as https://"},
    {"ftp://a.test", "such as https://"},
    {"https://App.test", "such as https://"},
    {"https://a.test/", "such as https://"},
};

static void
check_table(void)
{
    struct cors_origins c;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *why = NULL;
        int r = cors_origins_parse(cases[i].list, &c, &why);
        if (cases[i].why == NULL)
            CHECK(r == 0, "%s: refused (%s)", cases[i].list, why ? why : "");
        else
            CHECK(r == -1 && why != NULL && strstr(why, cases[i].why) != NULL,
                  "%s: want refused with \"%s\", got %d (%s)", cases[i].list, cases[i].why, r,
                  why ? why : "");
    }
}

static void
check_allowed(void)
{
    struct cors_origins c;
    const char *why = NULL;

    CHECK(cors_origins_parse(" http://[::1]:8080 ,https://app.test", &c, &why) == 0, "parse: %s",
          why ? why : "");
    CHECK_EXPR(c.n == 2 && !c.any);
    CHECK_EXPR(cors_origin_allowed(&c, "http://[::1]:8080"));
    CHECK_EXPR(cors_origin_allowed(&c, "https://app.test"));
    CHECK_EXPR(!cors_origin_allowed(&c, "http://[::1]"));
    CHECK_EXPR(!cors_origin_allowed(&c, "null"));
    CHECK_EXPR(!cors_origin_allowed(&c, NULL));
    CHECK(cors_origins_parse("*", &c, &why) == 0, "parse *");
    CHECK_EXPR(cors_origin_allowed(&c, "http://any.test") && !cors_origin_allowed(&c, "null"));
}

int
main(void)
{
    check_table();
    check_allowed();
    return check_summary("test_cors");
}
