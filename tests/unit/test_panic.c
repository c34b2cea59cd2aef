/* test_panic.c -- TOCSIN_ASSERT and TOCSIN_UNREACHABLE: a true expression costs nothing and
 * returns; a false one, in a child process, aborts (SIGABRT) after writing "file:line: assertion
 * failed: expr" on stderr, and the expression is evaluated once; an unreachable branch says
 * "unreachable: why". Runs in every build type, as the assertions do. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "panic.h"

#define OUT_MAX 1024

enum what { ASSERT_TRUE, ASSERT_FALSE, UNREACHABLE };

static int evaluated;

static int
count(int v)
{
    evaluated++;
    return v;
}

/* The line of the statement that fails for w, for the expected message. */
static int
act(enum what w)
{
    evaluated = 0;
    switch (w) {
    case ASSERT_TRUE:
    case ASSERT_FALSE:
        TOCSIN_ASSERT(count(w == ASSERT_TRUE ? 1 : 2) == 1);
        return evaluated;
    case UNREACHABLE:
        break;
    }
    TOCSIN_UNREACHABLE("the test's own");
}

/* Runs act(w) in a child; its wait status, and what it wrote to stderr into out. */
static int
child(enum what w, char out[OUT_MAX])
{
    int fds[2], status = 0;
    ssize_t n, got = 0;

    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], STDERR_FILENO);
        _exit(act(w) == 1 ? 0 : 3);
    }
    close(fds[1]);
    while ((n = read(fds[0], out + got, OUT_MAX - 1 - (size_t)got)) > 0)
        got += n;
    out[got] = '\0';
    close(fds[0]);
    waitpid(pid, &status, 0);
    return status;
}

/* "<this file>:<line>: <rest>\n" where line is that of the first line of this file holding mark. */
static void
expected(const char *mark, const char *rest, char want[OUT_MAX])
{
    char line[256];
    int no = 0, at = 0;
    FILE *f = fopen(__FILE__, "r");

    while (f != NULL && at == 0 && fgets(line, sizeof line, f) != NULL) {
        no++;
        if (strstr(line, mark) != NULL && strstr(line, "expected(") == NULL)
            at = no;
    }
    if (f != NULL)
        fclose(f);
    CHECK(at > 0, "%s not found in %s", mark, __FILE__);
    snprintf(want, OUT_MAX, "%s:%d: %s\n", __FILE__, at, rest);
}

int
main(void)
{
    char out[OUT_MAX], want[OUT_MAX];

    CHECK(act(ASSERT_TRUE) == 1, "a true assertion evaluated its expression %d times", evaluated);

    int st = child(ASSERT_TRUE, out);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && out[0] == '\0',
          "true assertion in the child: status %#x, stderr \"%s\"", st, out);

    st = child(ASSERT_FALSE, out);
    expected("TOCSIN_ASSERT(count(", "assertion failed: count(w == ASSERT_TRUE ? 1 : 2) == 1",
             want);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "false assertion: status %#x", st);
    CHECK(strcmp(out, want) == 0, "stderr \"%s\", want \"%s\"", out, want);

    st = child(UNREACHABLE, out);
    expected("TOCSIN_UNREACHABLE(\"the test", "assertion failed: unreachable: the test's own",
             want);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "unreachable: status %#x", st);
    CHECK(strcmp(out, want) == 0, "stderr \"%s\", want \"%s\"", out, want);

    return check_summary("test_panic");
}
