/* cors.c -- the origin list of cors.h. */
#include "cors.h"

#include <string.h>

/* scheme://host[:port]: a lower-case host of letters, digits, '-', '.' (or a bracketed IPv6
 * literal), an optional decimal port of 1..5 digits, nothing after it. */
static bool
origin_valid(const char *s, size_t n)
{
    size_t skip;

    if (n > 8 && strncmp(s, "https://", 8) == 0)
        skip = 8;
    else if (n > 7 && strncmp(s, "http://", 7) == 0)
        skip = 7;
    else
        return false;
    s += skip;
    n -= skip;
    size_t host;
    if (s[0] == '[') {
        const char *close = memchr(s, ']', n);
        if (close == NULL || close == s + 1)
            return false;
        host = (size_t)(close - s) + 1;
    } else {
        host = strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-.");
        if (host == 0 || host > n)
            return false;
    }
    if (host == n)
        return true;
    if (s[host] != ':' || n - host < 2 || n - host > 6)
        return false;
    return strspn(s + host + 1, "0123456789") == n - host - 1;
}

int
cors_origins_parse(const char *s, struct cors_origins *out, const char **why)
{
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
        } else if (n > CORS_ORIGIN_MAX || !origin_valid(s, n)) {
            *why = "each entry must be * or an origin such as https://app.example.com";
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
