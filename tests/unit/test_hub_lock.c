/* test_hub_lock.c -- the hub's mutexes that know their owner: held is true for the thread that
 * took the lock and for no other, a condition wait gives the lock up and takes it back (held
 * again after), and the misuses that would deadlock or corrupt (taking a lock twice, giving back
 * one the thread does not hold, waiting without it) stop the process with SIGABRT (in a child). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "cond.h"
#include "hub_internal.h"

static struct hub_lock lock;
static pthread_cond_t cv;
static atomic_int other_saw_held = -1, other_got_it;

/* Another thread: does it see the lock as its own, and can it take it (once given up)? */
static void *
other(void *arg)
{
    (void)arg;
    atomic_store(&other_saw_held, hub_lock_held(&lock));
    hub_lock_acquire(&lock);
    atomic_store(&other_got_it, hub_lock_held(&lock));
    pthread_cond_signal(&cv);
    hub_lock_release(&lock);
    return NULL;
}

static void
test_owner(void)
{
    pthread_t th;

    hub_lock_init(&lock);
    cond_init_monotonic(&cv);
    CHECK(!hub_lock_held(&lock), "free: not held");
    hub_lock_acquire(&lock);
    CHECK(hub_lock_held(&lock), "taken: held by this thread");
    CHECK(pthread_create(&th, NULL, other, NULL) == 0, "thread");
    /* other blocks on the lock until the wait gives it up; it signals once it had it. */
    struct timespec deadline = cond_deadline(10000);
    int rc = 0;
    while (!atomic_load(&other_got_it) && rc != ETIMEDOUT)
        rc = hub_lock_wait(&lock, &cv, &deadline);
    CHECK(rc == 0 && atomic_load(&other_got_it) == 1, "the other thread held it during the wait");
    CHECK(atomic_load(&other_saw_held) == 0, "the other thread did not see it as its own");
    CHECK(hub_lock_held(&lock), "held again after the wait");
    deadline = cond_deadline(0);
    CHECK(hub_lock_wait(&lock, &cv, &deadline) == ETIMEDOUT && hub_lock_held(&lock),
          "a wait that times out: held again too");
    hub_lock_release(&lock);
    CHECK(!hub_lock_held(&lock), "given back: not held");
    pthread_join(th, NULL);
    CHECK(hub_lock_self() != 0, "a thread's token is never 0");
    pthread_cond_destroy(&cv);
    hub_lock_fini(&lock);
}

enum misuse { TWICE, NOT_HELD, WAIT_NOT_HELD, FINI_HELD };

static void
misuse(enum misuse m)
{
    struct hub_lock l;
    pthread_cond_t c;
    struct timespec now = {0, 0};

    hub_lock_init(&l);
    cond_init_monotonic(&c);
    switch (m) {
    case TWICE:
        hub_lock_acquire(&l);
        hub_lock_acquire(&l);
        break;
    case NOT_HELD:
        hub_lock_release(&l);
        break;
    case WAIT_NOT_HELD:
        hub_lock_wait(&l, &c, &now);
        break;
    case FINI_HELD:
        hub_lock_acquire(&l);
        hub_lock_fini(&l);
        break;
    }
}

static void
test_misuse(void)
{
    static const enum misuse cases[] = {TWICE, NOT_HELD, WAIT_NOT_HELD, FINI_HELD};

    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int status = 0;
        pid_t pid = fork();

        if (pid == 0) {
            close(STDERR_FILENO); /* the assertion's line is expected */
            misuse(cases[i]);
            _exit(0);
        }
        waitpid(pid, &status, 0);
        CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT, "misuse %zu: status %#x", i,
              status);
    }
}

int
main(void)
{
    test_owner();
    test_misuse();
    return check_summary("test_hub_lock");
}
