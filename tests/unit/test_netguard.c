/* test_netguard.c -- the address guard's IPv6 special-purpose ranges (IANA registry) and IPv4
 * additions, and TOCSIN_WEBHOOK_ALLOW_NETS: parsing (CIDRs, addresses, names, wildcards, every
 * refusal with the entry named), matching addresses (v4, v6, v4-mapped v6, prefix edges) and
 * host names (case, trailing dot, "*." suffixes). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "check.h"
#include "netguard.h"
#include "sockaddr_text.h"

static void
test_ranges(void)
{
    static const struct {
        const char *addr;
        bool public;
    } table[] = {
        {"::", false},                 /* ::/128 unspecified */
        {"::1", false},                /* ::1/128 loopback */
        {"::ffff:192.168.0.1", false}, /* ::ffff:0:0/96 mapped */
        {"::ffff:0:a00:1", false},     /* ::ffff:0:0:0/96 SIIT translated */
        {"64:ff9b::a00:1", false},     /* 64:ff9b::/96 with a private IPv4 */
        {"64:ff9b::102:304", true},    /* ... with a public one */
        {"64:ff9b:1::1", false},       /* 64:ff9b:1::/48 local-use NAT64 */
        {"64:ff9b:1::102:304", false}, /* ... refused whole, even with a public IPv4 */
        {"64:ff9b:2::1", false},       /* outside 2000::/3 */
        {"100::1", false},             /* 100::/64 discard-only */
        {"100:0:0:1::1", false},       /* 100:0:0:1::/64 dummy prefix */
        {"2001:1::1", false},          /* 2001::/23 IETF protocol assignments */
        {"2001:2::1", false},          /* 2001:2::/48 benchmarking */
        {"2001:10::1", false},         /* ORCHID (deprecated) */
        {"2001:20::1", false},         /* ORCHIDv2 */
        {"2001:1ff:ffff::1", false},   /* the /23's last address */
        {"2001:200::1", true},         /* just past it: allocated global unicast */
        {"2001:db8::1", false},        /* 2001:db8::/32 documentation */
        {"2001:db9::1", true},         /* just past it */
        {"3fff::1", false},            /* 3fff::/20 documentation */
        {"3fff:fff::1", false},        /* its last /32 */
        {"3fff:1000::1", true},        /* just past it */
        {"5f00::1", false},            /* 5f00::/16 SRv6 SIDs */
        {"fc00::1", false},            /* fc00::/7 unique local */
        {"fdff:ffff::1", false},
        {"fe80::1", false}, /* fe80::/10 link-local */
        {"febf::1", false},
        {"fec0::1", false},      /* fec0::/10 site-local */
        {"ff00::1", false},      /* ff00::/8 multicast */
        {"4000::1", false},      /* unallocated, outside 2000::/3 */
        {"1fff:ffff::1", false}, /* just below 2000::/3 */
        {"2000::1", true},       /* its first /16 */
        {"3ffe:ffff::1", true},  /* 3ffe::/16 (6bone, returned): unicast space */
        {"2606:4700::1111", true},
        {"2620:4f:8000::1", true}, /* AS112 direct delegation: globally reachable */
        {"192.88.99.1", false},    /* 6to4 relay anycast */
        {"192.0.0.9", false},      /* 192.0.0/24 */
        {"198.19.255.255", false}, /* benchmarking's last */
        {"198.20.0.1", true},
        {"9.255.255.255", true},
        {"11.0.0.0", true},
    };
    struct sockaddr_storage ss;

    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        CHECK(to_sockaddr(table[i].addr, &ss) == 0, "%s parses", table[i].addr);
        CHECK(netguard_public((struct sockaddr *)&ss) == table[i].public, "%s: public %d",
              table[i].addr, !table[i].public);
    }
}

static void
test_parse(void)
{
    static const struct {
        const char *list;
        int want;
        size_t nets, names;
    } table[] = {
        {"", 0, 0, 0},
        {"  ", 0, 0, 0},
        {"127.0.0.0/8,::1", 0, 2, 0},
        {" 10.0.0.0/8 , fd00::/8 ,hooks.internal ", 0, 2, 1},
        {"*.svc.cluster.local,localhost,receiver.", 0, 0, 3},
        {"192.168.1.7", 0, 1, 0},
        {"10.1.2.3/8", 0, 1, 0}, /* host bits cleared */
        {"0.0.0.0/0", 0, 1, 0},
        {"::/0", 0, 1, 0},
        {"10.0.0.0/33", -1, 0, 0},
        {"fd00::/129", -1, 0, 0},
        {"10.0.0.0/", -1, 0, 0},
        {"10.0.0.0/x", -1, 0, 0},
        {"10.0.0.0/-1", -1, 0, 0},
        {"10.0.0", -1, 0, 0},
        {"300.0.0.1", -1, 0, 0},
        {"fd00::zz/8", -1, 0, 0},
        {"10.0.0.0/8,", -1, 0, 0},
        {",10.0.0.0/8", -1, 0, 0},
        {"10.0.0.0/8,,::1", -1, 0, 0},
        {"bad_name", -1, 0, 0},
        {"-lead.example", -1, 0, 0},
        {"trail-.example", -1, 0, 0},
        {"a..b", -1, 0, 0},
        {"*.", -1, 0, 0},
        {"*", -1, 0, 0},
        {"a.*.b", -1, 0, 0},
        {"http://x", -1, 0, 0},
        {"sp ace", -1, 0, 0},
    };
    struct netguard_allow a;
    char why[128];

    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        why[0] = '\0';
        int got = netguard_allow_parse(table[i].list, &a, why, sizeof why);
        CHECK(got == table[i].want, "'%s': %d, want %d (%s)", table[i].list, got, table[i].want,
              why);
        if (got == 0)
            CHECK(a.n_nets == table[i].nets && a.n_names == table[i].names && !a.all,
                  "'%s': %zu nets, %zu names", table[i].list, a.n_nets, a.n_names);
        else
            CHECK(why[0] == '\'', "'%s' refused without naming the entry: %s", table[i].list, why);
    }
    /* Bounds: NETGUARD_ALLOW_MAX entries pass, one more does not. */
    char list[NETGUARD_ALLOW_MAX * 16 + 16] = "";
    for (int i = 0; i < NETGUARD_ALLOW_MAX; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s10.%d.0.0/16", i ? "," : "",
                 i);
    CHECK(netguard_allow_parse(list, &a, why, sizeof why) == 0 && a.n_nets == NETGUARD_ALLOW_MAX,
          "%d entries", NETGUARD_ALLOW_MAX);
    strcat(list, ",10.99.0.0/16");
    CHECK(netguard_allow_parse(list, &a, why, sizeof why) == -1, "one entry too many");
    /* A 253-byte name passes, 254 does not; a 64-byte label does not. */
    char name[300];
    memset(name, 'a', sizeof name);
    for (int i = 63; i < 253; i += 64)
        name[i] = '.';
    name[253] = '\0';
    CHECK(netguard_allow_parse(name, &a, why, sizeof why) == 0, "253-byte name: %s", why);
    name[253] = 'a';
    name[254] = '\0';
    CHECK(netguard_allow_parse(name, &a, why, sizeof why) == -1, "254-byte name");
    memset(name, 'b', 64);
    name[64] = '\0';
    CHECK(netguard_allow_parse(name, &a, why, sizeof why) == -1, "64-byte label");
}

static bool
allowed(const struct netguard_allow *a, const char *addr)
{
    struct sockaddr_storage ss;
    return to_sockaddr(addr, &ss) == 0 && netguard_allowed(a, (struct sockaddr *)&ss);
}

static void
test_match(void)
{
    struct netguard_allow a;
    char why[128];

    CHECK(netguard_allow_parse("127.0.0.0/8, 10.20.0.0/16, 192.168.1.7, fd00:1::/32, ::1", &a, why,
                               sizeof why) == 0,
          "parse: %s", why);
    static const struct {
        const char *addr;
        bool ok;
    } table[] = {
        {"8.8.8.8", true},   /* public: always */
        {"127.0.0.1", true}, /* 127/8 */
        {"127.255.255.255", true},
        {"10.20.255.1", true}, /* 10.20/16 */
        {"10.21.0.1", false},  /* next to it */
        {"10.19.255.255", false},
        {"192.168.1.7", true}, /* a single address */
        {"192.168.1.8", false},
        {"169.254.169.254", false}, /* the metadata address stays refused */
        {"::ffff:127.0.0.1", true}, /* mapped: judged as IPv4 */
        {"::ffff:10.21.0.1", false},
        {"::1", true},
        {"::2", false},
        {"fd00:1:ffff::1", true}, /* fd00:1::/32 */
        {"fd00:2::1", false},
        {"fe80::1", false},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        CHECK(allowed(&a, table[i].addr) == table[i].ok, "%s: allowed %d, want %d", table[i].addr,
              !table[i].ok, table[i].ok);
    CHECK(!allowed(NULL, "127.0.0.1") && allowed(NULL, "8.8.8.8"), "NULL: public only");
    a.all = true;
    CHECK(allowed(&a, "169.254.169.254") && allowed(&a, "fe80::1"), "all");

    CHECK(netguard_allow_parse("hooks.internal, *.svc.cluster.local", &a, why, sizeof why) == 0,
          "names: %s", why);
    static const struct {
        const char *host;
        bool ok;
    } hosts[] = {
        {"hooks.internal", true},
        {"HOOKS.Internal", true},
        {"hooks.internal.", true},
        {"x.hooks.internal", false},
        {"hooks.internal.evil", false},
        {"hooks-internal", false},
        {"rx.team.svc.cluster.local", true},
        {"a.b.svc.cluster.local", true},
        {"svc.cluster.local", false},
        {"evilsvc.cluster.local", false},
        {"127.0.0.1", false},
    };
    for (size_t i = 0; i < sizeof hosts / sizeof hosts[0]; i++)
        CHECK(netguard_allow_host(&a, hosts[i].host) == hosts[i].ok, "host %s: %d", hosts[i].host,
              !hosts[i].ok);
    CHECK(!allowed(&a, "127.0.0.1"), "names allow no address by themselves");
    CHECK(!netguard_allow_host(NULL, "hooks.internal"), "NULL: no names");
}

int
main(void)
{
    test_ranges();
    test_parse();
    test_match();
    printf("test_netguard: %s\n", fails ? "FAILED" : "ok");
    return fails != 0;
}
