/* hub_lock.c -- the hub's mutexes (hub_internal.h), which know their owner: a function that needs
 * a lock held asserts it, and a thread that would take a lock it holds, or give back one it does
 * not, stops with a place instead of deadlocking or corrupting. The owner is a relaxed atomic: a
 * thread compares it only with its own token, which only it writes (while it holds the lock) and
 * clears before it unlocks, so it reads its own token there exactly while it is the holder. */
#include "hub_internal.h"

#include "panic.h"

/* Its address is the thread's token: distinct between threads alive at once, never 0. */
static _Thread_local char self;

uintptr_t
hub_lock_self(void)
{
    return (uintptr_t)&self;
}

void
hub_lock_init(struct hub_lock *l)
{
    pthread_mutex_init(&l->m, NULL);
    atomic_init(&l->owner, 0);
}

void
hub_lock_fini(struct hub_lock *l)
{
    TOCSIN_ASSERT(atomic_load_explicit(&l->owner, memory_order_relaxed) == 0);
    pthread_mutex_destroy(&l->m);
}

bool
hub_lock_held(struct hub_lock *l)
{
    return atomic_load_explicit(&l->owner, memory_order_relaxed) == hub_lock_self();
}

void
hub_lock_acquire(struct hub_lock *l)
{
    TOCSIN_ASSERT(!hub_lock_held(l));
    pthread_mutex_lock(&l->m);
    atomic_store_explicit(&l->owner, hub_lock_self(), memory_order_relaxed);
}

void
hub_lock_release(struct hub_lock *l)
{
    TOCSIN_ASSERT(hub_lock_held(l));
    atomic_store_explicit(&l->owner, 0, memory_order_relaxed);
    pthread_mutex_unlock(&l->m);
}

int
hub_lock_wait(struct hub_lock *l, pthread_cond_t *cv, const struct timespec *deadline)
{
    TOCSIN_ASSERT(hub_lock_held(l));
    atomic_store_explicit(&l->owner, 0, memory_order_relaxed);
    int rc = pthread_cond_timedwait(cv, &l->m, deadline);
    atomic_store_explicit(&l->owner, hub_lock_self(), memory_order_relaxed);
    return rc;
}
