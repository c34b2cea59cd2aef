/* check.h -- the one assertion style of the C tests: CHECK(cond, fmt, ...) prints "FAIL
 * function:line: message" and counts the failure in `fails` (CHECK_EXPR(cond): the message is
 * the condition's text); main ends with
 * `return check_summary("test_x");`, which prints "test_x: ok" or "test_x: N failure(s)" and
 * gives the exit status. Header-only; one test executable is one translation unit. */
#ifndef TOCSIN_TESTS_CHECK_H
#define TOCSIN_TESTS_CHECK_H

#include <stdio.h>

static int fails;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("FAIL %s:%d: ", __func__, __LINE__);                                            \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
            fails++;                                                                               \
        }                                                                                          \
    } while (0)

/* A CHECK whose message is the condition's own text, for checks that need no other words. */
#define CHECK_EXPR(cond) CHECK(cond, "%s", #cond)

/* The closing line of a test executable and its exit status: 0 when no CHECK failed. */
static inline int
check_summary(const char *name)
{
    if (fails == 0)
        printf("%s: ok\n", name);
    else
        printf("%s: %d failure(s)\n", name, fails);
    fflush(stdout);
    return fails != 0;
}

#endif
