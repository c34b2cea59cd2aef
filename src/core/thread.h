/* thread.h -- names for the process's threads, so that `top -H`, `ps -L` and gdb say which part of
 * tocsin is busy (Redis's bio.c does the same). Each thread names itself first thing. */
#ifndef TOCSIN_THREAD_H
#define TOCSIN_THREAD_H

/* Linux keeps 15 bytes of a thread's name (16 with the NUL): names are "tocsin-" and a word. */
#define THREAD_NAME_MAX 15

/* Names the calling thread. A name longer than THREAD_NAME_MAX is cut; a failure (not Linux, say)
 * is ignored: the name is for people, nothing depends on it. Any thread. */
void thread_set_name(const char *name);

#endif
