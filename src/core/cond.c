/* cond.c -- the monotonic condition-variable set-up and deadline of cond.h. */
#include "cond.h"

#include "panic.h"

#define NS_PER_S 1000000000L
#define NS_PER_MS 1000000L

void
cond_init_monotonic(pthread_cond_t *cv)
{
    pthread_condattr_t ca;

    TOCSIN_ASSERT(pthread_condattr_init(&ca) == 0);
    TOCSIN_ASSERT(pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0);
    TOCSIN_ASSERT(pthread_cond_init(cv, &ca) == 0);
    pthread_condattr_destroy(&ca);
}

struct timespec
cond_deadline(int64_t ms)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    if (ms > 0) {
        ts.tv_sec += (time_t)(ms / 1000);
        ts.tv_nsec += (long)(ms % 1000) * NS_PER_MS;
        if (ts.tv_nsec >= NS_PER_S) {
            ts.tv_sec++;
            ts.tv_nsec -= NS_PER_S;
        }
    }
    return ts;
}
