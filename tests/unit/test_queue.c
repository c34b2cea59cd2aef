/* test_queue.c -- the bounded queue: push/pop order, the capacity bound, partial pushes,
 * wraparound, pop timeouts, close semantics (drain, refuse), and a 4-thread stress (2 producers,
 * 2 consumers) whose item counts and sums must balance. */
#include "check.h"
#include "queue.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define STRESS_PER_PRODUCER 200000
#define STRESS_CAPACITY 64
#define STRESS_POP_MAX 7

static int64_t
mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
test_basic(void)
{
    struct queue *q = queue_new(sizeof(int), 4);
    int in[6] = {1, 2, 3, 4, 5, 6}, out[6] = {0};

    CHECK(q != NULL, "queue_new");
    CHECK(queue_new(0, 4) == NULL && queue_new(4, 0) == NULL, "zero sizes accepted");
    CHECK(queue_push(q, in, 6) == 4, "push past capacity: only 4 fit");
    CHECK(queue_depth(q) == 4, "depth %zu", queue_depth(q));
    CHECK(queue_push(q, in, 1) == 0, "push into a full queue");
    CHECK(queue_pop(q, out, 3, 0) == 3 && out[0] == 1 && out[1] == 2 && out[2] == 3,
          "pop 3 in order");
    /* head is now at slot 3: these pushes wrap around the ring */
    CHECK(queue_push(q, in + 4, 2) == 2, "push after pop");
    CHECK(queue_pop(q, out, 6, 0) == 3 && out[0] == 4 && out[1] == 5 && out[2] == 6,
          "wrapped order %d %d %d", out[0], out[1], out[2]);
    CHECK(queue_depth(q) == 0, "depth after drain");
    queue_free(q);
    queue_free(NULL);
}

static void
test_timeout_and_close(void)
{
    struct queue *q = queue_new(sizeof(int), 8);
    int v = 7, out[8];
    int64_t t0 = mono_ms();

    CHECK(queue_pop(q, out, 8, 100) == 0, "pop on empty returned items");
    int64_t took = mono_ms() - t0;
    CHECK(took >= 95 && took < 2000, "timeout took %lld ms", (long long)took);
    CHECK(queue_pop(q, out, 8, 0) == 0, "zero timeout on empty");
    CHECK(queue_push(q, &v, 1) == 1, "push");
    queue_close(q);
    CHECK(queue_push(q, &v, 1) == 0, "push after close accepted");
    CHECK(queue_pop(q, out, 8, -1) == 1 && out[0] == 7, "close must let pops drain");
    t0 = mono_ms();
    CHECK(queue_pop(q, out, 8, -1) == 0, "pop on closed and empty");
    CHECK(mono_ms() - t0 < 1000, "pop on closed queue blocked");
    queue_free(q);
}

struct stress {
    struct queue *q;
    int base;
    long long count, sum;
};

static void *
producer(void *arg)
{
    struct stress *s = arg;

    for (int i = 0; i < STRESS_PER_PRODUCER;) {
        int v = s->base + i;
        if (queue_push(s->q, &v, 1) == 1)
            i++;
        else
            sched_yield();
    }
    return NULL;
}

static void *
consumer(void *arg)
{
    struct stress *s = arg;
    int out[STRESS_POP_MAX];
    size_t n;

    while ((n = queue_pop(s->q, out, STRESS_POP_MAX, -1)) > 0)
        for (size_t i = 0; i < n; i++) {
            s->count++;
            s->sum += out[i];
        }
    return NULL;
}

static void
test_stress(void)
{
    struct queue *q = queue_new(sizeof(int), STRESS_CAPACITY);
    struct stress p[2] = {{q, 0, 0, 0}, {q, STRESS_PER_PRODUCER, 0, 0}};
    struct stress c[2] = {{q, 0, 0, 0}, {q, 0, 0, 0}};
    pthread_t tp[2], tc[2];
    long long n = 2LL * STRESS_PER_PRODUCER, want_sum = n * (n - 1) / 2;

    for (int i = 0; i < 2; i++) {
        pthread_create(&tc[i], NULL, consumer, &c[i]);
        pthread_create(&tp[i], NULL, producer, &p[i]);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(tp[i], NULL);
    queue_close(q);
    for (int i = 0; i < 2; i++)
        pthread_join(tc[i], NULL);
    CHECK(c[0].count + c[1].count == n, "consumed %lld of %lld", c[0].count + c[1].count, n);
    CHECK(c[0].sum + c[1].sum == want_sum, "sum %lld want %lld", c[0].sum + c[1].sum, want_sum);
    CHECK(queue_depth(q) == 0, "left %zu", queue_depth(q));
    queue_free(q);
}

int
main(void)
{
    test_basic();
    test_timeout_and_close();
    test_stress();
    return check_summary("test_queue");
}
