/* netguard.h -- which addresses a webhook may reach. Refused unless allowed: unspecified,
 * loopback, RFC 1918, CGNAT (100.64/10), link-local, multicast, broadcast and the other IPv4
 * special-purpose blocks that are not globally reachable (RFC 6890 and the IANA registry); in
 * IPv6 everything outside global unicast 2000::/3 (::, ::1, ULA fc00::/7, link-local fe80::/10,
 * site-local fec0::/10, multicast ff00::/8, discard-only 100::/64, local-use NAT64
 * 64:ff9b:1::/48, SRv6 5f00::/16, ...), and in it the IETF protocol assignments 2001::/23 and
 * documentation 2001:db8::/32 and 3fff::/20; IPv4 addresses embedded in IPv6 (mapped, compatible,
 * NAT64 well-known prefix, 6to4 2002::/16, Teredo 2001::/32 with both its server and its client
 * address) are judged as IPv4. Pure.
 *
 * An allow-list (TOCSIN_WEBHOOK_ALLOW_NETS) opens chosen private targets: networks in CIDR form
 * (an address alone is a /32 or /128) are matched against each address connected to; host names
 * ("hooks.internal", or "*.svc.cluster.local" for any name below it) against the URL's host, and
 * then whatever that name resolves to is allowed. The same list form, networks only, names the
 * trusted proxies (forwarded.h). */
#ifndef TOCSIN_NETGUARD_H
#define TOCSIN_NETGUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define NETGUARD_ALLOW_MAX 32  /* entries of one allow-list */
#define NETGUARD_NAME_MAX 253  /* a DNS name */
#define NETGUARD_LIST_MAX 4096 /* bytes of the list's text */

struct netguard_net {
    int family; /* AF_INET or AF_INET6 */
    uint8_t addr[16];
    unsigned bits;
};

struct netguard_allow {
    bool all; /* every address (TOCSIN_WEBHOOK_ALLOW_PRIVATE=1) */
    size_t n_nets, n_names;
    struct netguard_net nets[NETGUARD_ALLOW_MAX];
    char names[NETGUARD_ALLOW_MAX][NETGUARD_NAME_MAX + 1]; /* lower case; "*." prefix = below */
};

/* True when the address is a public unicast address. */
bool netguard_public(const struct sockaddr *sa);
/* Parses a comma-separated list of CIDRs ("10.0.0.0/8", "fd00::/8"), addresses and host names
 * (spaces around entries ignored; "" is the empty list) into out (its all flag left false). 0, or
 * -1 with the offending entry and why in why. */
int netguard_allow_parse(const char *list, struct netguard_allow *out, char *why, size_t whylen);
/* Whether a connection to sa is allowed: a public address, or one in an allowed network, or any
 * when a->all. a may be NULL (public only). */
bool netguard_allowed(const struct netguard_allow *a, const struct sockaddr *sa);
/* Whether sa (IPv4, IPv6, or IPv4 mapped into IPv6) is inside one of a's networks, public or not
 * and whatever a->all says; its names are not looked at. a may be NULL (none). */
bool netguard_in_nets(const struct netguard_allow *a, const struct sockaddr *sa);
/* Whether host (a URL's host name, any case, a trailing dot ignored) is one of a's names. */
bool netguard_allow_host(const struct netguard_allow *a, const char *host);

#endif
