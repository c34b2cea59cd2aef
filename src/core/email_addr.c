/* email_addr.c -- the address check of email_addr.h: plain atext@host, the only form that needs
 * no quoting in a header, so an address that passes can be written as it is. */
#include "email_addr.h"

#include <stddef.h>
#include <string.h>

/* A run of characters of set, then more runs, each after one dot: RFC 5322's dot-atom text. */
static bool
dot_atom(const char *s, size_t n, const char *set)
{
    size_t run = 0;

    for (size_t i = 0; i < n; i++) {
        if (s[i] == '.' ? run == 0 : strchr(set, s[i]) == NULL)
            return false;
        run = s[i] == '.' ? 0 : run + 1;
    }
    return run > 0;
}

/* Host name labels (RFC 1123): letters, digits and inner hyphens, 1..EMAIL_ADDR_LABEL_MAX each. */
static bool
host_name(const char *s, size_t n)
{
    static const char ldh[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-";
    size_t start = 0;

    if (!dot_atom(s, n, ldh))
        return false;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != '.')
            continue;
        if (i - start > EMAIL_ADDR_LABEL_MAX || s[start] == '-' || s[i - 1] == '-')
            return false;
        start = i + 1;
    }
    return true;
}

bool
email_addr_ok(const char *s)
{
    static const char atext[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                "!#$%&'*+/=?^_`{|}~-";
    size_t n = s ? strlen(s) : 0, local = s ? strcspn(s, "@") : 0;

    if (n == 0 || n > EMAIL_ADDR_MAX || local == 0 || local >= n - 1)
        return false;
    return dot_atom(s, local, atext) && host_name(s + local + 1, n - local - 1);
}
