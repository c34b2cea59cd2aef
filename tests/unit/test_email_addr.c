/* test_email_addr.c -- the address check every address passes before it reaches a header: plain
 * atext@host accepted, anything that would need quoting or could break a header refused, and the
 * two bounds (the whole address, one label of the domain) at their limit and one past it. */
#include <stdbool.h>
#include <string.h>

#include "check.h"
#include "email_addr.h"

static void
test_table(void)
{
    static const struct {
        const char *s;
        bool ok;
    } cases[] = {
        {"ada@example.com", true},
        {"tocsin@localhost", true}, /* a host name needs no dot (config's From may be local) */
        {"a.b+tag@mail-1.example.com", true},
        {"!#$%&'*+/=?^_`{|}~-@example.com", true}, /* every atext symbol */
        {"A@B", true},
        {"", false},
        {"@example.com", false},
        {"ada@", false},
        {"ada", false},
        {"a@b@example.com", false},
        {".ada@example.com", false},
        {"ada.@example.com", false},
        {"a..b@example.com", false},
        {"a b@example.com", false},
        {"\"ada\"@example.com", false},
        {"ada@example..com", false},
        {"ada@.example.com", false},
        {"ada@example.com.", false},
        {"ada@-example.com", false},
        {"ada@example-.com", false},
        {"ada@mail_host.example.com", false},
        {"ada@[127.0.0.1]", false},
        {"j\xc3\xb6rg@example.com", false},
        {"ada@example.com\r\nBcc: x@y", false},
        {"ada@example.com>, x@y", false},
        {"ada\t@example.com", false},
    };

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK(email_addr_ok(cases[i].s) == cases[i].ok, "\"%s\" -> %d", cases[i].s, !cases[i].ok);
    CHECK(!email_addr_ok(NULL), "NULL accepted");
}

/* local bytes of 'l', '@', and a domain of domain bytes: labels of label 'd's (the last one
 * shorter) joined by dots. buf must hold local + domain + 2 bytes. */
static const char *
address_of(char *buf, size_t local, size_t label, size_t domain)
{
    memset(buf, 'l', local);
    buf[local] = '@';
    for (size_t i = 0; i < domain; i++)
        buf[local + 1 + i] = (i + 1) % (label + 1) == 0 ? '.' : 'd';
    buf[local + 1 + domain] = '\0';
    return buf;
}

static void
test_bounds(void)
{
    char buf[EMAIL_ADDR_MAX + 2];
    const char *s;

    /* 64 + 1 + 189 bytes, the domain's last label 6 bytes long; then one more byte in it. */
    s = address_of(buf, 64, 60, EMAIL_ADDR_MAX - 65);
    CHECK(strlen(s) == EMAIL_ADDR_MAX && email_addr_ok(s), "%zu bytes refused", strlen(s));
    s = address_of(buf, 64, 60, EMAIL_ADDR_MAX - 64);
    CHECK(strlen(s) == EMAIL_ADDR_MAX + 1 && !email_addr_ok(s), "%zu bytes accepted", strlen(s));
    s = address_of(buf, 1, EMAIL_ADDR_LABEL_MAX, EMAIL_ADDR_LABEL_MAX);
    CHECK(email_addr_ok(s), "a label of %d bytes refused", EMAIL_ADDR_LABEL_MAX);
    s = address_of(buf, 1, EMAIL_ADDR_LABEL_MAX + 1, EMAIL_ADDR_LABEL_MAX + 1);
    CHECK(!email_addr_ok(s), "a label of %d bytes accepted", EMAIL_ADDR_LABEL_MAX + 1);
}

int
main(void)
{
    test_table();
    test_bounds();
    return check_summary("test_email_addr");
}
