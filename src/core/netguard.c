/* netguard.c -- the address classes of netguard.h, as prefix tables, and its allow-lists. */
#include "netguard.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
    {0xc0586300, 24}, /* 192.88.99/24 6to4 relay anycast (deprecated, RFC 7526) */
    {0xc0a80000, 16}, /* 192.168/16 */
    {0xc6120000, 15}, /* 198.18/15 benchmarking */
    {0xc6336400, 24}, /* 198.51.100/24 TEST-NET-2 */
    {0xcb007100, 24}, /* 203.0.113/24 TEST-NET-3 */
    {0xe0000000, 4},  /* multicast */
    {0xf0000000, 4},  /* reserved, broadcast */
};

struct v6_block {
    uint8_t net[6]; /* the prefixes below are at most 48 bits */
    unsigned bits;
};

/* Inside global unicast 2000::/3, what is still not a webhook's to reach (IANA IPv6
 * special-purpose registry). Checked after the blocks that embed IPv4 (Teredo is 2001::/32). */
static const struct v6_block v6_refused[] = {
    {{0x20, 0x01, 0x00, 0x00}, 23}, /* 2001::/23 IETF protocol assignments */
    {{0x20, 0x01, 0x0d, 0xb8}, 32}, /* 2001:db8::/32 documentation */
    {{0x3f, 0xff}, 20},             /* 3fff::/20 documentation (RFC 9637) */
};

static bool
prefix_match(const uint8_t *a, const uint8_t *net, unsigned bits)
{
    unsigned whole = bits / 8, rest = bits % 8;

    if (memcmp(a, net, whole) != 0)
        return false;
    return rest == 0 || ((a[whole] ^ net[whole]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

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

/* The IPv4 address an IPv6 address carries where the kernel or a NAT64 gateway would reach it:
 * ::/96 (::, ::1 and the old compatible form), ::ffff:0:0/96 and 64:ff9b::/96. */
static bool
v6_embeds_v4(const uint8_t *b)
{
    static const uint8_t zero[12] = {0};
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const uint8_t nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};

    return memcmp(b, zero, 12) == 0 || memcmp(b, mapped, 12) == 0 || memcmp(b, nat64, 12) == 0;
}

static bool
v6_public(const uint8_t *b)
{
    if (v6_embeds_v4(b))
        return v4_public(v4_at(b + 12));
    /* 2002::/16 6to4 (RFC 3056): a relay sends to the IPv4 address in bits 16..47. */
    if (b[0] == 0x20 && b[1] == 0x02)
        return v4_public(v4_at(b + 2));
    /* 2001::/32 Teredo (RFC 4380): the server's IPv4 in bits 32..63 and the client's, inverted, in
     * the last 32 bits; either could be reached, so both must be public. */
    if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0)
        return v4_public(v4_at(b + 4)) && v4_public(~v4_at(b + 12));
    /* Outside 2000::/3 none of it is a public unicast address. That includes the local-use NAT64
     * prefix 64:ff9b:1::/48 (RFC 8215), refused whole: its translators are a network's own and
     * the IPv4 address may sit at any of RFC 6052's offsets, so it cannot be judged as IPv4. */
    if ((b[0] & 0xe0) != 0x20)
        return false;
    for (size_t i = 0; i < sizeof v6_refused / sizeof v6_refused[0]; i++)
        if (prefix_match(b, v6_refused[i].net, v6_refused[i].bits))
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

/* ---- allow-lists --------------------------------------------------------------------------- */

static int
say(char *why, size_t whylen, const char *entry, size_t n, const char *text)
{
    snprintf(why, whylen, "'%.*s': %s", (int)(n > 64 ? 64 : n), entry, text);
    return -1;
}

/* "addr" or "addr/bits"; the host bits are cleared. */
static int
parse_net(const char *e, size_t n, struct netguard_net *net)
{
    char text[INET6_ADDRSTRLEN + 8];
    const char *slash = memchr(e, '/', n);
    size_t alen = slash ? (size_t)(slash - e) : n;
    long bits = -1;

    if (alen == 0 || alen >= INET6_ADDRSTRLEN)
        return -1;
    memcpy(text, e, alen);
    text[alen] = '\0';
    memset(net, 0, sizeof *net);
    if (inet_pton(AF_INET, text, net->addr) == 1)
        net->family = AF_INET;
    else if (inet_pton(AF_INET6, text, net->addr) == 1)
        net->family = AF_INET6;
    else
        return -1;
    unsigned max = net->family == AF_INET ? 32 : 128;
    if (slash != NULL) {
        size_t blen = n - alen - 1;
        if (blen == 0 || blen > 3 || strspn(slash + 1, "0123456789") < blen)
            return -1;
        bits = strtol(slash + 1, NULL, 10);
    }
    net->bits = bits < 0 ? max : (unsigned)bits;
    if (net->bits > max)
        return -1;
    for (unsigned i = net->bits; i < max; i++)
        net->addr[i / 8] &= (uint8_t) ~(0x80 >> (i % 8));
    return 0;
}

/* A DNS name: labels of [A-Za-z0-9-], 1..63 bytes, not starting or ending with '-'; a leading
 * "*." makes it a suffix. Stored in lower case without a trailing dot. */
static int
parse_name(const char *e, size_t n, char out[NETGUARD_NAME_MAX + 1])
{
    size_t start = n >= 2 && e[0] == '*' && e[1] == '.' ? 2 : 0, label = 0;

    if (n > 0 && e[n - 1] == '.')
        n--;
    if (n <= start || n > NETGUARD_NAME_MAX)
        return -1;
    for (size_t i = start; i < n; i++) {
        char c = e[i];
        if (c == '.') {
            if (label == 0 || e[i - 1] == '-')
                return -1;
            label = 0;
        } else if (isalnum((unsigned char)c) || (c == '-' && label > 0)) {
            if (++label > 63)
                return -1;
        } else {
            return -1;
        }
        out[i] = (char)tolower((unsigned char)c);
    }
    if (label == 0 || e[n - 1] == '-')
        return -1;
    memcpy(out, e, start);
    out[n] = '\0';
    return 0;
}

int
netguard_allow_parse(const char *list, struct netguard_allow *out, char *why, size_t whylen)
{
    const char *p = list;

    memset(out, 0, sizeof *out);
    if (strlen(list) > NETGUARD_LIST_MAX) {
        snprintf(why, whylen, "longer than %d bytes", NETGUARD_LIST_MAX);
        return -1;
    }
    if (list[strspn(list, " ")] == '\0')
        return 0;
    for (;;) {
        size_t n;
        p += strspn(p, " ");
        n = strcspn(p, ",");
        while (n > 0 && p[n - 1] == ' ')
            n--;
        if (n == 0)
            return say(why, whylen, p, 0, "an empty entry");
        if (out->n_nets + out->n_names >= NETGUARD_ALLOW_MAX) {
            snprintf(why, whylen, "more than %d entries", NETGUARD_ALLOW_MAX);
            return -1;
        }
        bool looks_net =
            memchr(p, '/', n) != NULL || memchr(p, ':', n) != NULL || strspn(p, "0123456789.") >= n;
        if (looks_net ? parse_net(p, n, &out->nets[out->n_nets]) != 0
                      : parse_name(p, n, out->names[out->n_names]) != 0)
            return say(why, whylen, p, n,
                       looks_net ? "not an address or CIDR (a.b.c.d/n, x:y::/n)"
                                 : "not a host name (labels of letters, digits and '-', or "
                                   "*.name)");
        looks_net ? out->n_nets++ : out->n_names++;
        p += strcspn(p, ",");
        if (*p == '\0')
            return 0;
        p++;
    }
}

bool
netguard_allowed(const struct netguard_allow *a, const struct sockaddr *sa)
{
    if (netguard_public(sa) || (a != NULL && a->all))
        return true;
    return netguard_in_nets(a, sa);
}

bool
netguard_in_nets(const struct netguard_allow *a, const struct sockaddr *sa)
{
    uint8_t b[16];
    int family = sa->sa_family;

    if (a == NULL || a->n_nets == 0)
        return false;
    if (family == AF_INET) {
        memcpy(b, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    } else if (family == AF_INET6) {
        memcpy(b, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
        if (v6_embeds_v4(b) && b[10] == 0xff) { /* ::ffff:a.b.c.d is a.b.c.d */
            memmove(b, b + 12, 4);
            family = AF_INET;
        }
    } else {
        return false;
    }
    for (size_t i = 0; i < a->n_nets; i++)
        if (a->nets[i].family == family && prefix_match(b, a->nets[i].addr, a->nets[i].bits))
            return true;
    return false;
}

bool
netguard_allow_host(const struct netguard_allow *a, const char *host)
{
    size_t n = strlen(host);

    if (a == NULL)
        return false;
    if (n > 0 && host[n - 1] == '.')
        n--;
    for (size_t i = 0; i < a->n_names; i++) {
        const char *name = a->names[i];
        size_t m = strlen(name);
        if (name[0] == '*') { /* "*.x.y": at least one label before ".x.y" */
            if (n > m - 1 && strncasecmp(host + n - (m - 1), name + 1, m - 1) == 0)
                return true;
        } else if (n == m && strncasecmp(host, name, n) == 0) {
            return true;
        }
    }
    return false;
}
