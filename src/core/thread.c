/* thread.c -- thread names (thread.h), through glibc's pthread_setname_np. */
#define _GNU_SOURCE
#include "thread.h"

#include <pthread.h>
#include <string.h>

void
thread_set_name(const char *name)
{
    char cut[THREAD_NAME_MAX + 1];
    size_t n = strlen(name);

    if (n > THREAD_NAME_MAX)
        n = THREAD_NAME_MAX;
    memcpy(cut, name, n);
    cut[n] = '\0';
    (void)pthread_setname_np(pthread_self(), cut);
}
