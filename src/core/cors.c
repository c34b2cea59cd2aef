/* cors.c -- the origin list of cors.h. */
#include "cors.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#define WHY_ORIGIN "each entry must be * or an origin such as https://app.example.com"
#define WHY_IPV6                                                                                   \
    "an IPv6 host must be a lower-case IPv6 address in brackets, such as http://[::1]:8080"

/* The length of the bracketed IPv6 literal at s (s[0] == '[', n bytes), brackets included, or 0
 * when the brackets do not hold a lower-case IPv6 address: an origin that no browser sends would
 * otherwise be accepted and never match. */
static size_t
ipv6_literal(const char *s, size_t n)
{
    const char *close = memchr(s, ']', n);
    char text[INET6_ADDRSTRLEN]; /* the longest text form and its NUL */
    struct in6_addr addr;

    if (close == NULL)
        return 0;
    size_t len = (size_t)(close - s) - 1;
    if (len == 0 || len >= sizeof text)
        return 0;
    memcpy(text, s + 1, len);
    text[len] = '\0';
    if (strspn(text, "0123456789abcdef:.") != len || inet_pton(AF_INET6, text, &addr) != 1)
        return 0;
    return len + 2;
}

/* scheme://host[:port]: a lower-case host of letters, digits, '-', '.' (or a bracketed IPv6
 * address), an optional decimal port of 1..5 digits, nothing after it. Returns NULL, or why not
 * (a static string). */
static const char *
origin_problem(const char *s, size_t n)
{
    size_t skip;

    if (n > 8 && strncmp(s, "https://", 8) == 0)
        skip = 8;
    else if (n > 7 && strncmp(s, "http://", 7) == 0)
        skip = 7;
    else
        return WHY_ORIGIN;
    s += skip;
    n -= skip;
    size_t host;
    if (s[0] == '[') {
        host = ipv6_literal(s, n);
        if (host == 0)
            return WHY_IPV6;
    } else {
        host = strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-.");
        if (host == 0 || host > n)
            return WHY_ORIGIN;
    }
    if (host == n)
        return NULL;
    if (s[host] != ':' || n - host < 2 || n - host > 6 ||
        strspn(s + host + 1, "0123456789") != n - host - 1)
        return WHY_ORIGIN;
    return NULL;
}

int
cors_origins_parse(const char *s, struct cors_origins *out, const char **why)
{
    const char *bad;

    memset(out, 0, sizeof *out);
    while (s != NULL && *s != '\0') {
        s += strspn(s, " \t,");
        size_t n = strcspn(s, ",");
        while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
            n--;
        if (n == 0)
            break;
        if (n == 1 && s[0] == '*') {
            out->any = true;
        } else if (out->n == CORS_ORIGINS_MAX) {
            *why = "at most 32 origins";
            return -1;
        } else if (n > CORS_ORIGIN_MAX) {
            *why = WHY_ORIGIN;
            return -1;
        } else if ((bad = origin_problem(s, n)) != NULL) {
            *why = bad;
            return -1;
        } else {
            memcpy(out->origin[out->n], s, n);
            out->origin[out->n++][n] = '\0';
        }
        s += n;
        s += strcspn(s, ",");
    }
    return 0;
}

bool
cors_origin_allowed(const struct cors_origins *c, const char *origin)
{
    if (origin == NULL || strcmp(origin, "null") == 0)
        return false;
    if (c->any)
        return true;
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->origin[i], origin) == 0)
            return true;
    return false;
}
