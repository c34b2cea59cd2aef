/* test_panic.c -- TOCSIN_ASSERT: a true expression costs nothing and returns; a false one, in a
 * child process, aborts (SIGABRT) after writing "file:line: assertion failed: expr" on stderr,
 * and the expression is evaluated once. Runs in every build type, as the assertion does. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "panic.h"

#define OUT_MAX 1024

static int evaluated;

static int
count(int v)
{
    evaluated++;
    return v;
}

/* Runs TOCSIN_ASSERT(count(v) == 1) in a child; its wait status and what it wrote to stderr. */
static int
child(int v, char out[OUT_MAX], int *line)
{
    int fds[2], status = 0;
    ssize_t n, got = 0;

    if (pipe(fds) != 0)
        return -1;
    *line = __LINE__ + 5;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], STDERR_FILENO);
        evaluated = 0;
        TOCSIN_ASSERT(count(v) == 1);
        _exit(evaluated == 1 ? 0 : 3);
    }
    close(fds[1]);
    while ((n = read(fds[0], out + got, OUT_MAX - 1 - (size_t)got)) > 0)
        got += n;
    out[got] = '\0';
    close(fds[0]);
    waitpid(pid, &status, 0);
    return status;
}

int
main(void)
{
    char out[OUT_MAX], want[OUT_MAX];
    int line;

    TOCSIN_ASSERT(count(1) == 1);
    CHECK(evaluated == 1, "a true assertion evaluated its expression %d times", evaluated);

    int st = child(1, out, &line);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && out[0] == '\0',
          "true assertion in the child: status %#x, stderr \"%s\"", st, out);

    st = child(2, out, &line);
    snprintf(want, sizeof want, "%s:%d: assertion failed: count(v) == 1\n", __FILE__, line);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "false assertion: status %#x", st);
    CHECK(strstr(out, want) == out, "stderr \"%s\", want \"%s\"", out, want);

    printf("test_panic: %s\n", fails == 0 ? "ok" : "FAILED");
    return fails != 0;
}
