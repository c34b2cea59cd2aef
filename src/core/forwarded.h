/* forwarded.h -- the client behind a trusted proxy. TOCSIN_TRUSTED_PROXIES names the networks
 * whose connections may say whom they carry (a load balancer, an ingress); their X-Forwarded-For
 * is read from the right, where each proxy appended the address it saw, and the client is the
 * right-most address that is not itself a trusted proxy. What a client wrote into the header
 * itself sits to the left of that and is never read, so it can neither pick an address nor make
 * the header unreadable. Anyone else's header is ignored. Pure: parsed once at start (config.c),
 * asked per request (http_server.c). */
#ifndef TOCSIN_FORWARDED_H
#define TOCSIN_FORWARDED_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "netguard.h"

#define FORWARDED_HOPS_MAX 16  /* addresses of X-Forwarded-For read, right to left, at most */
#define FORWARDED_FIELDS_MAX 8 /* X-Forwarded-For header lines looked at (the last ones) */

/* The trusted proxies: networks only (nets.n_names is 0, nets.all false). */
struct forwarded_proxies {
    struct netguard_allow nets;
};

/* Where forwarded_client found the client. */
enum forwarded_source {
    FORWARDED_PEER,      /* the peer is no trusted proxy, or it sent no X-Forwarded-For */
    FORWARDED_HEADER,    /* a trusted peer's X-Forwarded-For named it */
    FORWARDED_MALFORMED, /* a trusted peer's header could not be read that far: the peer stands */
};

/* Parses a comma-separated list of networks ("10.0.0.0/8, fd00::/8"; an address alone is a /32
 * or /128; "" trusts nobody) into out. 0, or -1 with the offending entry and why in why. */
int forwarded_proxies_parse(const char *list, struct forwarded_proxies *out, char *why,
                            size_t whylen);
/* Whether sa (IPv4, IPv6 or IPv4-mapped IPv6) is a trusted proxy's address. */
bool forwarded_trusted(const struct forwarded_proxies *p, const struct sockaddr *sa);
/* The client of a request that came from peer with the X-Forwarded-For header lines fields[0..n)
 * in the order received (the last FORWARDED_FIELDS_MAX of them; cut: earlier ones were left
 * out), into client (its port 0 when it came from the header). Each line is a list of bare IPv4
 * or IPv6 addresses, commas between, blanks around them; the walk ends at the first address
 * outside p, or with the left-most when every one is inside (the client is in a trusted network
 * too). An element it reaches that is empty or no address, more than FORWARDED_HOPS_MAX of them,
 * or the left end of a cut list, is FORWARDED_MALFORMED and client is the peer. */
enum forwarded_source forwarded_client(const struct forwarded_proxies *p,
                                       const struct sockaddr *peer, const char *const *fields,
                                       size_t n, bool cut, struct sockaddr_storage *client);

#endif
