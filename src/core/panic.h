/* panic.h -- TOCSIN_ASSERT(expr) and TOCSIN_UNREACHABLE(why): the branches that cannot happen, said
 * out loud. A false expression writes "file:line: assertion failed: expr" to stderr in one write(2)
 * and aborts, in every build (it does not look at NDEBUG): a broken invariant is a crash with a
 * place, not silent corruption. For internal invariants only; input from outside is validated and
 * refused, never asserted. */
#ifndef TOCSIN_PANIC_H
#define TOCSIN_PANIC_H

#define TOCSIN_ASSERT(expr)                                                                        \
    (__builtin_expect(!!(expr), 1) ? (void)0 : panic_assert_failed(__FILE__, __LINE__, #expr))

/* The end of a switch that returns in every case of its enum, or a state the code around it rules
 * out: reached only through a bug. why says which, in a few words. */
#define TOCSIN_UNREACHABLE(why) panic_assert_failed(__FILE__, __LINE__, "unreachable: " why)

/* What both call: writes the line and aborts. Never returns. */
_Noreturn void panic_assert_failed(const char *file, int line, const char *expr);

#endif
