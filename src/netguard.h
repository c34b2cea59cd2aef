/* netguard.h -- which addresses a webhook may reach. Refused unless private targets are allowed:
 * unspecified, loopback, RFC 1918, CGNAT (100.64/10), link-local, multicast, broadcast and
 * reserved IPv4 ranges; ::, ::1, ULA (fc00::/7), link-local (fe80::/10), multicast, local-use
 * NAT64 (64:ff9b:1::/48), discard-only (100::/64), and IPv4 addresses embedded in IPv6 (mapped,
 * compatible, NAT64 well-known prefix, 6to4 2002::/16, Teredo 2001::/32 with both its server and
 * its client address), judged as IPv4. Pure.
 */
#ifndef TOCSIN_NETGUARD_H
#define TOCSIN_NETGUARD_H

#include <stdbool.h>
#include <sys/socket.h>

/* True when the address is a public unicast address. */
bool netguard_public(const struct sockaddr *sa);

#endif
