/* test_strbuf.c -- the growing text: writes across many growths keep every byte, printf of any
 * length, the bound at its limit and one past it, errors that stick, and a clear that empties the
 * text, keeps its memory and makes a bad one usable again. */
#include <stdbool.h>
#include <string.h>

#include "check.h"
#include "strbuf.h"

static void
test_growth(void)
{
    struct strbuf b = {0};
    char want[5001];

    for (int i = 0; i < 5000; i++) {
        want[i] = (char)('a' + i % 26);
        strbuf_put(&b, &want[i], 1);
    }
    want[5000] = '\0';
    CHECK(!b.bad && b.len == 5000 && strcmp(b.p, want) == 0, "5,000 single bytes");
    strbuf_fini(&b);
    CHECK(b.p == NULL && b.len == 0 && !b.bad, "fini leaves it empty");
    strbuf_printf(&b, "%s-%d-%s", want, 42, want);
    CHECK(!b.bad && b.len == 10004 && strncmp(b.p + 5000, "-42-", 4) == 0, "a long printf");
    strbuf_puts(&b, "");
    CHECK(b.len == 10004 && b.p[b.len] == '\0', "an empty write");
    strbuf_fini(&b);
}

static void
test_bound(void)
{
    struct strbuf b = {.max = 8};

    strbuf_puts(&b, "1234567");
    CHECK(!b.bad && b.len == 7, "7 bytes and the NUL fit in 8");
    strbuf_put(&b, "8", 1);
    CHECK(b.bad, "one past the bound");
    strbuf_fini(&b);
    CHECK(b.max == 8 && !b.bad, "fini keeps the bound");
    strbuf_printf(&b, "%d", 123456789);
    CHECK(b.bad, "a printf past the bound");
    strbuf_puts(&b, "x");
    CHECK(b.bad && b.p == NULL, "errors stick");
    strbuf_fini(&b);
}

static void
test_clear(void)
{
    struct strbuf b = {.max = 8};

    strbuf_puts(&b, "1234567");
    char *p = b.p;
    size_t cap = b.cap;
    strbuf_clear(&b);
    CHECK(!b.bad && b.len == 0 && b.p == p && b.cap == cap && b.p[0] == '\0',
          "clear keeps the memory");
    strbuf_puts(&b, "123456789");
    CHECK(b.bad, "past the bound again");
    strbuf_clear(&b);
    strbuf_puts(&b, "ab");
    CHECK(!b.bad && b.len == 2 && strcmp(b.p, "ab") == 0, "usable after a clear");
    strbuf_fini(&b);
    strbuf_clear(&b);
    CHECK(b.p == NULL && b.len == 0 && !b.bad, "clear of an empty one");
}

int
main(void)
{
    test_growth();
    test_bound();
    test_clear();
    return check_summary("test_strbuf");
}
