/* sockaddr_text.h -- an address written as text (IPv4, or IPv6 when it has a ':') as the socket
 * address a listener would give, port 0, for the C tests' tables. Header-only, like check.h. */
#ifndef TOCSIN_TESTS_SOCKADDR_TEXT_H
#define TOCSIN_TESTS_SOCKADDR_TEXT_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

/* 0, or -1 when text is no address. */
static inline int
to_sockaddr(const char *text, struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof *ss);
    if (strchr(text, ':') != NULL) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
        s6->sin6_family = AF_INET6;
        return inet_pton(AF_INET6, text, &s6->sin6_addr) == 1 ? 0 : -1;
    }
    struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
    s4->sin_family = AF_INET;
    return inet_pton(AF_INET, text, &s4->sin_addr) == 1 ? 0 : -1;
}

#endif
