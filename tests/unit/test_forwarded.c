/* test_forwarded.c -- TOCSIN_TRUSTED_PROXIES (networks only, every refusal naming its entry) and
 * the X-Forwarded-For walk: a table of peers and header lines, each with the client it must give
 * and where that came from (the right-most untrusted address; what a client wrote to the left of
 * it never read; an unreadable element reached, too many hops or a cut list: the peer). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "check.h"
#include "forwarded.h"
#include "sockaddr_text.h"

#define TRUSTED "10.0.0.0/8, fd00::/8, 192.0.2.1"
#define LINES_MAX 10

/* The address of ss as text, "?" for another family. */
static const char *
text_of(const struct sockaddr_storage *ss, char *buf, size_t n)
{
    const void *a = ss->ss_family == AF_INET6
                        ? (const void *)&((const struct sockaddr_in6 *)ss)->sin6_addr
                        : (const void *)&((const struct sockaddr_in *)ss)->sin_addr;
    if ((ss->ss_family != AF_INET && ss->ss_family != AF_INET6) ||
        inet_ntop(ss->ss_family, a, buf, (socklen_t)n) == NULL)
        return "?";
    return buf;
}

static void
check_parse(void)
{
    static const struct {
        const char *list;
        const char *why; /* NULL: accepted; else a part of the reason */
    } cases[] = {
        {"", NULL},
        {"  ", NULL},
        {TRUSTED, NULL},
        {"::1, 127.0.0.1/32", NULL},
        {"10.0.0.0/33", "'10.0.0.0/33'"},
        {"10.0.0.0/8,", "an empty entry"},
        {"lb.internal", "'lb.internal': not an address or CIDR"},
        {"10.0.0.0/8, *.svc", "'*.svc'"},
        {"fd00::/129", "'fd00::/129'"},
    };
    struct forwarded_proxies p;
    char why[256];

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        why[0] = '\0';
        int r = forwarded_proxies_parse(cases[i].list, &p, why, sizeof why);
        if (cases[i].why == NULL)
            CHECK(r == 0, "'%s': refused (%s)", cases[i].list, why);
        else
            CHECK(r == -1 && strstr(why, cases[i].why) != NULL,
                  "'%s': want refused with \"%s\", got %d (%s)", cases[i].list, cases[i].why, r,
                  why);
    }
}

static const struct {
    const char *peer;
    const char *lines[LINES_MAX]; /* NULL ends them */
    bool cut;
    const char *want;
    enum forwarded_source source;
} walks[] = {
    /* Not a trusted peer: its header is never read. */
    {"203.0.113.9", {"198.51.100.7"}, false, "203.0.113.9", FORWARDED_PEER},
    {"203.0.113.9", {"junk"}, false, "203.0.113.9", FORWARDED_PEER},
    /* A trusted peer without a header speaks for itself. */
    {"10.1.1.1", {NULL}, false, "10.1.1.1", FORWARDED_PEER},
    {"10.1.1.1", {"198.51.100.7"}, false, "198.51.100.7", FORWARDED_HEADER},
    {"10.1.1.1", {" 198.51.100.7\t"}, false, "198.51.100.7", FORWARDED_HEADER},
    {"10.1.1.1", {"2001:db8::7"}, false, "2001:db8::7", FORWARDED_HEADER},
    {"fd00::1", {"198.51.100.7"}, false, "198.51.100.7", FORWARDED_HEADER},
    {"::ffff:10.1.1.1", {"198.51.100.7"}, false, "198.51.100.7", FORWARDED_HEADER},
    /* What the client wrote itself is left of the proxy's address and never read. */
    {"10.1.1.1", {"6.6.6.6, 198.51.100.7"}, false, "198.51.100.7", FORWARDED_HEADER},
    {"10.1.1.1", {"junk, ,, 198.51.100.7"}, false, "198.51.100.7", FORWARDED_HEADER},
    {"10.1.1.1", {"junk", "198.51.100.7"}, false, "198.51.100.7", FORWARDED_HEADER},
    {"10.1.1.1", {"junk", "198.51.100.7"}, true, "198.51.100.7", FORWARDED_HEADER},
    /* Trusted hops are walked over, across lines too. */
    {"10.1.1.1", {"198.51.100.7, 10.2.2.2, 192.0.2.1"}, false, "198.51.100.7", FORWARDED_HEADER},
    {"10.1.1.1", {"198.51.100.7", "10.2.2.2"}, false, "198.51.100.7", FORWARDED_HEADER},
    {"10.1.1.1", {"198.51.100.7", "fd00::2, 10.2.2.2"}, false, "198.51.100.7", FORWARDED_HEADER},
    /* All trusted: the client is inside a trusted network, the left-most address. */
    {"10.1.1.1", {"10.9.9.9, 10.2.2.2"}, false, "10.9.9.9", FORWARDED_HEADER},
    {"10.1.1.1", {"10.9.9.9"}, false, "10.9.9.9", FORWARDED_HEADER},
    /* ... but not when earlier lines were left out. */
    {"10.1.1.1", {"10.9.9.9"}, true, "10.1.1.1", FORWARDED_MALFORMED},
    /* Unreadable where the walk reaches it. */
    {"10.1.1.1", {""}, false, "10.1.1.1", FORWARDED_MALFORMED},
    {"10.1.1.1", {"  "}, false, "10.1.1.1", FORWARDED_MALFORMED},
    {"10.1.1.1", {"198.51.100.7,"}, false, "10.1.1.1", FORWARDED_MALFORMED},
    {"10.1.1.1", {"unknown"}, false, "10.1.1.1", FORWARDED_MALFORMED},
    {"10.1.1.1", {"198.51.100.7:4711"}, false, "10.1.1.1", FORWARDED_MALFORMED},
    {"10.1.1.1", {"[2001:db8::7]"}, false, "10.1.1.1", FORWARDED_MALFORMED},
    {"10.1.1.1", {"198.51.100.7 , junk"}, false, "10.1.1.1", FORWARDED_MALFORMED},
    {"10.1.1.1", {"junk, 10.2.2.2"}, false, "10.1.1.1", FORWARDED_MALFORMED},
    {"10.1.1.1", {"198.51.100.7", ""}, false, "10.1.1.1", FORWARDED_MALFORMED},
    {"10.1.1.1", {"1.2.3.4 5.6.7.8"}, false, "10.1.1.1", FORWARDED_MALFORMED},
    {"10.1.1.1", {"1.2.3"}, false, "10.1.1.1", FORWARDED_MALFORMED},
    {"10.1.1.1",
     {"2001:0db8:0000:0000:0000:0000:0000:0007:0000:0000:0000:0000:0000:0000"},
     false,
     "10.1.1.1",
     FORWARDED_MALFORMED},
    /* FORWARDED_HOPS_MAX addresses are read: a client that is the 16th is found, the 17th not. */
    {"10.1.1.1",
     {"198.51.100.7, 10.0.0.1, 10.0.0.2, 10.0.0.3, 10.0.0.4, 10.0.0.5, 10.0.0.6, 10.0.0.7, "
      "10.0.0.8, 10.0.0.9, 10.0.0.10, 10.0.0.11, 10.0.0.12, 10.0.0.13, 10.0.0.14, 10.0.0.15"},
     false,
     "198.51.100.7",
     FORWARDED_HEADER},
    {"10.1.1.1",
     {"198.51.100.7, 10.0.0.1, 10.0.0.2, 10.0.0.3, 10.0.0.4, 10.0.0.5, 10.0.0.6, 10.0.0.7, "
      "10.0.0.8, 10.0.0.9, 10.0.0.10, 10.0.0.11, 10.0.0.12, 10.0.0.13, 10.0.0.14, 10.0.0.15, "
      "10.0.0.16"},
     false,
     "10.1.1.1",
     FORWARDED_MALFORMED},
};

_Static_assert(FORWARDED_HOPS_MAX == 16, "the two cases above are written for 16 hops");

static void
check_walks(void)
{
    struct forwarded_proxies p;
    char why[256], got[INET6_ADDRSTRLEN], want[INET6_ADDRSTRLEN];

    CHECK(forwarded_proxies_parse(TRUSTED, &p, why, sizeof why) == 0, "%s", why);
    for (size_t i = 0; i < sizeof walks / sizeof walks[0]; i++) {
        struct sockaddr_storage peer, client, w;
        size_t n = 0;
        while (n < LINES_MAX && walks[i].lines[n] != NULL)
            n++;
        CHECK(to_sockaddr(walks[i].peer, &peer) == 0 && to_sockaddr(walks[i].want, &w) == 0,
              "walk %zu: bad test addresses", i);
        enum forwarded_source s = forwarded_client(&p, (const struct sockaddr *)&peer,
                                                   walks[i].lines, n, walks[i].cut, &client);
        text_of(&client, got, sizeof got);
        text_of(&w, want, sizeof want);
        CHECK(s == walks[i].source && strcmp(got, want) == 0,
              "walk %zu (peer %s, %s...): got %s from %d, want %s from %d", i, walks[i].peer,
              n > 0 ? walks[i].lines[n - 1] : "(none)", got, (int)s, want, (int)walks[i].source);
    }
}

/* Nobody trusted (the default): every header is ignored, the peer is the client. */
static void
check_nobody(void)
{
    struct forwarded_proxies p;
    struct sockaddr_storage peer, client;
    char why[256], got[INET6_ADDRSTRLEN];
    const char *lines[] = {"198.51.100.7"};

    CHECK(forwarded_proxies_parse("", &p, why, sizeof why) == 0, "%s", why);
    to_sockaddr("10.1.1.1", &peer);
    CHECK(!forwarded_trusted(&p, (const struct sockaddr *)&peer), "trusted by an empty list");
    CHECK(forwarded_client(&p, (const struct sockaddr *)&peer, lines, 1, false, &client) ==
                  FORWARDED_PEER &&
              strcmp(text_of(&client, got, sizeof got), "10.1.1.1") == 0,
          "an untrusted peer's header was read: %s", got);
}

int
main(void)
{
    check_parse();
    check_walks();
    check_nobody();
    return check_summary("test_forwarded");
}
