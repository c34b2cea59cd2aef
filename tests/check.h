/* check.h -- the one assertion of the C tests: CHECK(cond, fmt, ...) prints "FAIL function:line:
 * message" and counts the failure in `fails`, which each test's main turns into its exit status.
 * Header-only; one test executable is one translation unit. */
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

#endif
