/* test_addr_count.c -- per-address places: an address takes up to the bound and no more, a place
 * given back can be taken again, ports do not make addresses different, IPv4 and IPv6 addresses
 * and families do (an IPv6 client is its /64, a mapped IPv4 address its IPv4 one), and an address
 * whose places all came back is forgotten. */
#include "addr_count.h"
#include "check.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

static struct sockaddr_in
v4(const char *ip, unsigned short port)
{
    struct sockaddr_in sa;

    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    inet_pton(AF_INET, ip, &sa.sin_addr);
    return sa;
}

static struct sockaddr_in6
v6(const char *ip, unsigned short port)
{
    struct sockaddr_in6 sa;

    memset(&sa, 0, sizeof sa);
    sa.sin6_family = AF_INET6;
    sa.sin6_port = htons(port);
    inet_pton(AF_INET6, ip, &sa.sin6_addr);
    return sa;
}

#define SA(x) ((const struct sockaddr *)&(x)), sizeof(x)

static void
test_bound(void)
{
    struct addr_count *ac = addr_count_new(3);
    struct sockaddr_in a1 = v4("10.0.0.1", 1000), a2 = v4("10.0.0.1", 2000),
                       b = v4("10.0.0.2", 1000);

    CHECK(ac != NULL, "addr_count_new");
    CHECK(addr_count_take(ac, SA(a1)) && addr_count_take(ac, SA(a2)) && addr_count_take(ac, SA(a1)),
          "three places for one address, from any port");
    CHECK(!addr_count_take(ac, SA(a2)), "a fourth place was given");
    CHECK(addr_count_held(ac, SA(a1)) == 3, "held %u", addr_count_held(ac, SA(a1)));
    CHECK(addr_count_take(ac, SA(b)), "another address is not bound by the first's places");
    addr_count_give(ac, SA(a2));
    CHECK(addr_count_take(ac, SA(a1)), "a place given back is taken again");
    CHECK(!addr_count_take(ac, SA(a1)), "and the bound holds again");
    for (int i = 0; i < 3; i++)
        addr_count_give(ac, SA(a1));
    addr_count_give(ac, SA(b));
    CHECK(addr_count_held(ac, SA(a1)) == 0 && addr_count_held(ac, SA(b)) == 0, "all given back");
    addr_count_free(ac);
}

static void
test_families(void)
{
    struct addr_count *ac = addr_count_new(1);
    struct sockaddr_in a = v4("127.0.0.1", 1);
    struct sockaddr_in6 m = v6("::ffff:127.0.0.1", 1), l = v6("::1", 1);
    struct sockaddr un = {.sa_family = AF_UNIX};

    CHECK(addr_count_take(ac, SA(a)) && addr_count_take(ac, SA(l)),
          "an IPv4 address and ::1 are two clients");
    CHECK(!addr_count_take(ac, SA(m)) && addr_count_held(ac, SA(m)) == 1,
          "the IPv6 address mapping an IPv4 one is that IPv4 client");
    CHECK(addr_count_take(ac, SA(un)) && !addr_count_take(ac, SA(un)),
          "a socket without an address is one address");
    CHECK(!addr_count_take(ac, SA(l)), "::1 took a second place");
    addr_count_free(ac); /* frees entries still held */
}

/* IPv6 clients are counted by /64: any two addresses of one share its places, whatever the
 * interface part, and the next /64 has its own. */
static void
test_ipv6_networks(void)
{
    struct addr_count *ac = addr_count_new(2);
    struct sockaddr_in6 a = v6("2001:db8:1:2::1", 1), b = v6("2001:db8:1:2:ffff:ffff:ffff:ffff", 2),
                        c = v6("2001:db8:1:2:8000::7", 3), d = v6("2001:db8:1:3::1", 1),
                        e = v6("2001:db8:1:2::1", 4);

    CHECK(addr_count_take(ac, SA(a)) && addr_count_take(ac, SA(b)), "two places in one /64");
    CHECK(!addr_count_take(ac, SA(c)) && addr_count_held(ac, SA(c)) == 2,
          "a third address of the same /64 got a place");
    CHECK(addr_count_take(ac, SA(d)) && addr_count_held(ac, SA(d)) == 1,
          "the next /64 is another client");
    addr_count_give(ac, SA(b));
    CHECK(addr_count_take(ac, SA(e)), "a place given back by one address serves another");
    addr_count_free(ac);
}

/* Many addresses in the table at once: each keeps its own count through the hash chains. */
static void
test_many(void)
{
    enum { N = 3 * ADDR_COUNT_BUCKETS };
    struct addr_count *ac = addr_count_new(2);
    struct sockaddr_in a;
    bool ok = true;

    for (int k = 0; k < 2; k++)
        for (unsigned i = 0; i < N; i++) {
            a = v4("10.0.0.0", 0);
            a.sin_addr.s_addr = htonl(0x0a000000u + i);
            ok = ok && addr_count_take(ac, SA(a));
        }
    CHECK(ok, "two places each for %d addresses", N);
    for (unsigned i = 0; i < N; i++) {
        a.sin_addr.s_addr = htonl(0x0a000000u + i);
        ok = ok && !addr_count_take(ac, SA(a)) && addr_count_held(ac, SA(a)) == 2;
        addr_count_give(ac, SA(a));
        addr_count_give(ac, SA(a));
        ok = ok && addr_count_held(ac, SA(a)) == 0;
    }
    CHECK(ok, "each address at its bound, then forgotten");
    addr_count_free(ac);
}

int
main(void)
{
    test_bound();
    test_families();
    test_ipv6_networks();
    test_many();
    return check_summary("test_addr_count");
}
