/* panic.c -- the failure path of TOCSIN_ASSERT: one line on stderr, then abort() so that a core
 * dump or the sanitizers' report shows the stack. */
#include "panic.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define PANIC_LINE_MAX 512 /* longer expressions are cut; the file and line come first */

void
panic_assert_failed(const char *file, int line, const char *expr)
{
    char buf[PANIC_LINE_MAX];
    int n = snprintf(buf, sizeof buf, "%s:%d: assertion failed: %s\n", file, line, expr);

    if (n < 0)
        n = 0;
    if ((size_t)n >= sizeof buf) { /* keep the newline of a cut line */
        n = sizeof buf - 1;
        buf[n - 1] = '\n';
    }
    /* One write(2), so that the line is not interleaved with other threads' logs; nothing to do
     * if it fails, we abort either way. */
    ssize_t written = write(STDERR_FILENO, buf, (size_t)n);
    (void)written;
    abort();
}
