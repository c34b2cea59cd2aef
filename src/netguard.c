/* netguard.c -- the address classes of netguard.h, as prefix tables. */
#include "netguard.h"

#include <netinet/in.h>
#include <stdint.h>
#include <string.h>

struct v4_block {
    uint32_t net;
    unsigned bits;
};

/* Everything a public webhook must not reach (RFC 6890 special-purpose blocks that are not
 * globally reachable, plus multicast and the reserved 240/4). */
static const struct v4_block v4_refused[] = {
    {0x00000000, 8},  /* "this network" */
    {0x0a000000, 8},  /* 10/8 */
    {0x64400000, 10}, /* 100.64/10 CGNAT */
    {0x7f000000, 8},  /* loopback */
    {0xa9fe0000, 16}, /* 169.254/16 link-local */
    {0xac100000, 12}, /* 172.16/12 */
    {0xc0000000, 24}, /* 192.0.0/24 protocol assignments */
    {0xc0000200, 24}, /* 192.0.2/24 TEST-NET-1 */
    {0xc0a80000, 16}, /* 192.168/16 */
    {0xc6120000, 15}, /* 198.18/15 benchmarking */
    {0xc6336400, 24}, /* 198.51.100/24 TEST-NET-2 */
    {0xcb007100, 24}, /* 203.0.113/24 TEST-NET-3 */
    {0xe0000000, 4},  /* multicast */
    {0xf0000000, 4},  /* reserved, broadcast */
};

static bool
v4_public(uint32_t a)
{
    for (size_t i = 0; i < sizeof v4_refused / sizeof v4_refused[0]; i++) {
        uint32_t mask = ~(uint32_t)0 << (32 - v4_refused[i].bits);
        if ((a & mask) == v4_refused[i].net)
            return false;
    }
    return true;
}

static uint32_t
v4_at(const uint8_t *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static bool
v6_public(const uint8_t *b)
{
    static const uint8_t zero[12] = {0};
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const uint8_t nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};

    /* ::/96 (::, ::1 and the old compatible form), ::ffff:0:0/96 and 64:ff9b::/96 carry an IPv4
     * address that the kernel or a NAT64 gateway would reach: judge that address. */
    if (memcmp(b, zero, 12) == 0 || memcmp(b, mapped, 12) == 0 || memcmp(b, nat64, 12) == 0)
        return v4_public(v4_at(b + 12));
    /* 2002::/16 6to4 (RFC 3056): a relay sends to the IPv4 address in bits 16..47. */
    if (b[0] == 0x20 && b[1] == 0x02)
        return v4_public(v4_at(b + 2));
    /* 2001::/32 Teredo (RFC 4380): the server's IPv4 in bits 32..63 and the client's, inverted, in
     * the last 32 bits; either could be reached, so both must be public. */
    if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0)
        return v4_public(v4_at(b + 4)) && v4_public(~v4_at(b + 12));
    /* 64:ff9b:1::/48 local-use NAT64 (RFC 8215) and 100::/64 discard-only (RFC 6666). */
    if (b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && b[4] == 0 && b[5] == 1)
        return false;
    if (b[0] == 0x01 && b[1] == 0 && memcmp(b + 2, zero, 6) == 0)
        return false;
    if ((b[0] & 0xfe) == 0xfc) /* fc00::/7 unique local */
        return false;
    if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) /* fe80::/10 link-local */
        return false;
    if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) /* fec0::/10 site-local (deprecated) */
        return false;
    if (b[0] == 0xff) /* multicast */
        return false;
    if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8) /* 2001:db8::/32 docs */
        return false;
    return true;
}

bool
netguard_public(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        return v4_public(ntohl(in->sin_addr.s_addr));
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        return v6_public(in6->sin6_addr.s6_addr);
    }
    return false;
}
