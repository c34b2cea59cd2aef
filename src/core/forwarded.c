/* forwarded.c -- TOCSIN_TRUSTED_PROXIES and the right-to-left walk over X-Forwarded-For of
 * forwarded.h. The list is netguard's allow-list form with its host names refused: a name would
 * need a lookup per connection, and a proxy's address is known where it is deployed. */
#include "forwarded.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#define ADDR_TEXT_MAX (INET6_ADDRSTRLEN - 1) /* the longest address text inet_pton reads */

int
forwarded_proxies_parse(const char *list, struct forwarded_proxies *out, char *why, size_t whylen)
{
    if (netguard_allow_parse(list, &out->nets, why, whylen) != 0)
        return -1;
    if (out->nets.n_names > 0) {
        snprintf(why, whylen, "'%.64s': not an address or CIDR (a.b.c.d/n, x:y::/n)",
                 out->nets.names[0]);
        return -1;
    }
    return 0;
}

bool
forwarded_trusted(const struct forwarded_proxies *p, const struct sockaddr *sa)
{
    return netguard_in_nets(&p->nets, sa);
}

static void
copy_peer(const struct sockaddr *peer, struct sockaddr_storage *client)
{
    size_t len = peer->sa_family == AF_INET6  ? sizeof(struct sockaddr_in6)
                 : peer->sa_family == AF_INET ? sizeof(struct sockaddr_in)
                                              : sizeof(struct sockaddr);

    memset(client, 0, sizeof *client);
    memcpy(client, peer, len);
}

static bool
blank(char c)
{
    return c == ' ' || c == '\t';
}

/* The element text[from, to), blanks around it ignored, as an address into sa. 0, or -1. */
static int
parse_element(const char *text, size_t from, size_t to, struct sockaddr_storage *sa)
{
    char buf[ADDR_TEXT_MAX + 1];

    while (from < to && blank(text[from]))
        from++;
    while (to > from && blank(text[to - 1]))
        to--;
    if (to == from || to - from > ADDR_TEXT_MAX)
        return -1;
    memcpy(buf, text + from, to - from);
    buf[to - from] = '\0';
    memset(sa, 0, sizeof *sa);
    struct sockaddr_in *in = (struct sockaddr_in *)sa;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)sa;
    if (inet_pton(AF_INET, buf, &in->sin_addr) == 1) {
        in->sin_family = AF_INET;
        return 0;
    }
    if (inet_pton(AF_INET6, buf, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        return 0;
    }
    return -1;
}

/* Where the walk is: addresses read so far and the last (left-most) one. */
struct walk {
    unsigned hops;
    struct sockaddr_storage last;
};

/* Walks one header line from its right end. 1: the client is in w->last; 0: every element was a
 * trusted proxy, go on with the line before; -1: malformed. */
static int
walk_field(const struct forwarded_proxies *p, const char *field, struct walk *w)
{
    size_t to = strlen(field);

    for (;;) {
        size_t from = to;
        while (from > 0 && field[from - 1] != ',')
            from--;
        if (++w->hops > FORWARDED_HOPS_MAX || parse_element(field, from, to, &w->last) != 0)
            return -1;
        if (!forwarded_trusted(p, (const struct sockaddr *)&w->last))
            return 1;
        if (from == 0)
            return 0;
        to = from - 1; /* before the comma */
    }
}

enum forwarded_source
forwarded_client(const struct forwarded_proxies *p, const struct sockaddr *peer,
                 const char *const *fields, size_t n, bool cut, struct sockaddr_storage *client)
{
    struct walk w = {0};

    if (n == 0 || !forwarded_trusted(p, peer)) {
        copy_peer(peer, client);
        return FORWARDED_PEER;
    }
    for (size_t i = n; i-- > 0;) {
        int r = walk_field(p, fields[i], &w);
        if (r < 0)
            break;
        if (r > 0 || (i == 0 && !cut)) {
            *client = w.last;
            return FORWARDED_HEADER;
        }
    }
    copy_peer(peer, client);
    return FORWARDED_MALFORMED;
}
