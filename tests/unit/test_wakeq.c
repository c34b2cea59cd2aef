/* test_wakeq.c -- the bounded resume queue: at most max resumed at once, the rest in order of
 * their wake-up as slots come back (served or forgotten; in batches once half are back), a queued
 * connection that closes is never resumed, a stall forgets the slots held and late give-backs of
 * forgotten slots change nothing, a read of a connection that was not woken gives nothing back and
 * does not take the queue's lock, and a 4-thread run in which every connection is resumed exactly
 * once per wake-up. */
#define _GNU_SOURCE /* pthread_timedjoin_np */
#include "check.h"
#include "wakeq.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define N 8
#define STRESS_CONNS 64
#define STRESS_ROUNDS 2000
#define STRESS_THREADS 4
#define STRESS_SLOTS 5

static int resumed[N];
static int order[4 * N], n_order;

static void
resume(void *conn)
{
    int i = (int)(intptr_t)conn;
    resumed[i]++;
    order[n_order++] = i;
}

static size_t
held(struct wakeq *q)
{
    size_t w, h;

    wakeq_counts(q, &w, &h);
    return h;
}

static size_t
waiting(struct wakeq *q)
{
    size_t w, h;

    wakeq_counts(q, &w, &h);
    return w;
}

static void
setup(struct wakeq_node *nodes)
{
    memset(resumed, 0, sizeof resumed);
    n_order = 0;
    memset(nodes, 0, N * sizeof *nodes);
    for (int i = 0; i < N; i++) {
        nodes[i].resume = resume;
        nodes[i].conn = (void *)(intptr_t)i;
    }
}

static void
test_order(void)
{
    struct wakeq q;
    struct wakeq_node n[N];

    setup(n);
    wakeq_init(&q, 2, 100);
    for (int i = 0; i < 5; i++)
        wakeq_wake(&q, &n[i], 0);
    CHECK(n_order == 2 && order[0] == 0 && order[1] == 1, "first two at once: %d", n_order);
    CHECK(held(&q) == 2 && waiting(&q) == 3, "held %zu waiting %zu", held(&q), waiting(&q));
    wakeq_served(&q, &n[1], 1);
    CHECK(n_order == 3 && order[2] == 2, "a slot back resumes the oldest waiting");
    wakeq_forget(&q, &n[3], 2); /* queued, closes: never resumed */
    wakeq_served(&q, &n[0], 3);
    CHECK(n_order == 4 && order[3] == 4, "the closed one is skipped: %d", order[3]);
    CHECK(resumed[3] == 0, "a closed connection was resumed");
    wakeq_served(&q, &n[0], 4); /* its slot was given back already: nothing */
    CHECK(held(&q) == 2 && waiting(&q) == 0, "held %zu", held(&q));
    wakeq_served(&q, &n[2], 5);
    wakeq_forget(&q, &n[4], 6); /* closes while holding a slot */
    CHECK(held(&q) == 0, "held %zu after both came back", held(&q));
    wakeq_wake(&q, &n[3], 7); /* a free slot, nobody waiting: at once */
    CHECK(n_order == 5 && order[4] == 3, "resumed at once");
    wakeq_fini(&q);
}

/* With more slots, the waiting ones go out once half the slots are back, oldest first. */
struct read_arg {
    struct wakeq *q;
    struct wakeq_node *n;
};

static void *
read_node(void *arg)
{
    struct read_arg *a = arg;

    wakeq_served(a->q, a->n, 1);
    return NULL;
}

/* Most reads are of streams that were not woken (their first frames, the rest of a backlog): they
 * give nothing back, leave the queue as it was, and do not wait for its lock, which every HTTP
 * thread shares. A queued connection read anyway (not woken by the queue) stays queued. */
static void
test_unwoken(void)
{
    struct wakeq q;
    struct wakeq_node n[N], lone = {0};
    struct read_arg arg = {&q, &lone};
    pthread_t th;
    struct timespec ts;

    setup(n);
    wakeq_init(&q, 2, 100);
    for (int i = 0; i < 4; i++)
        wakeq_wake(&q, &n[i], 0);
    wakeq_served(&q, &n[6], 1); /* never woken */
    CHECK(held(&q) == 2 && waiting(&q) == 2 && n_order == 2, "held %zu waiting %zu resumed %d",
          held(&q), waiting(&q), n_order);
    wakeq_served(&q, &n[3], 1); /* queued */
    CHECK(waiting(&q) == 2 && resumed[3] == 0, "a queued one left the queue when read");

    pthread_mutex_lock(&q.mu);
    CHECK(pthread_create(&th, NULL, read_node, &arg) == 0, "pthread_create");
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 2;
    int rc = pthread_timedjoin_np(th, NULL, &ts);
    CHECK(rc == 0, "a read of a connection not woken waited for the queue's lock (%d)", rc);
    pthread_mutex_unlock(&q.mu);
    if (rc == ETIMEDOUT)
        pthread_join(th, NULL);

    wakeq_served(&q, &n[0], 2);
    CHECK(n_order == 3 && order[2] == 2, "the oldest waiting resumed: %d", order[2]);
    wakeq_served(&q, &n[1], 3);
    wakeq_served(&q, &n[2], 4);
    CHECK(resumed[3] == 1 && held(&q) == 1 && waiting(&q) == 0, "resumed[3] %d held %zu",
          resumed[3], held(&q));
    wakeq_fini(&q);
}

static void
test_batches(void)
{
    struct wakeq q;
    struct wakeq_node n[N];

    setup(n);
    wakeq_init(&q, 4, 100);
    for (int i = 0; i < N; i++)
        wakeq_wake(&q, &n[i], 0);
    CHECK(n_order == 4, "four at once: %d", n_order);
    wakeq_served(&q, &n[0], 1);
    CHECK(n_order == 4 && held(&q) == 3, "one back of four: no refill yet (%d)", n_order);
    wakeq_forget(&q, &n[1], 2);
    CHECK(n_order == 6 && order[4] == 4 && order[5] == 5, "two back: two more, in order (%d)",
          n_order);
    CHECK(held(&q) == 4 && waiting(&q) == 2, "held %zu waiting %zu", held(&q), waiting(&q));
    wakeq_fini(&q);
}

static void
test_stall(void)
{
    struct wakeq q;
    struct wakeq_node n[N];

    setup(n);
    wakeq_init(&q, 2, 100);
    for (int i = 0; i < 4; i++)
        wakeq_wake(&q, &n[i], 1000);
    CHECK(wakeq_tick(&q, 1099) == 0 && n_order == 2, "no stall before stall_ms");
    CHECK(wakeq_tick(&q, 1100) == 2 && n_order == 4, "a stall forgets both slots, resumes two");
    wakeq_served(&q, &n[0], 1101); /* a forgotten slot: its give-back frees nothing */
    CHECK(held(&q) == 2, "held %zu", held(&q));
    wakeq_served(&q, &n[2], 1102);
    CHECK(held(&q) == 1, "held %zu", held(&q));
    CHECK(wakeq_tick(&q, 5000) == 0, "no stall while nobody waits");
    /* The stall is timed from the queue starting to fill, not from an old give-back. */
    wakeq_wake(&q, &n[4], 5000);
    wakeq_wake(&q, &n[5], 5000);
    CHECK(n_order == 5 && wakeq_tick(&q, 5050) == 0, "waiting since 5000: not a stall yet");
    wakeq_fini(&q);
}

/* Many threads wake, serve and forget the same connections; every wake-up resumes once. */
struct stress {
    struct wakeq q;
    struct wakeq_node nodes[STRESS_CONNS];
    pthread_mutex_t mu[STRESS_CONNS]; /* like the stream's lock: one wake per suspension */
    bool suspended[STRESS_CONNS];
    atomic_int resumes[STRESS_CONNS], wakes[STRESS_CONNS];
    atomic_bool live[STRESS_CONNS]; /* resumed: its reader may run */
};

static struct stress st;

static void
stress_resume(void *conn)
{
    atomic_fetch_add(&st.resumes[(intptr_t)conn], 1);
    atomic_store(&st.live[(intptr_t)conn], true);
}

static void *
stress_run(void *arg)
{
    unsigned seed = (unsigned)(intptr_t)arg;

    for (int r = 0; r < STRESS_ROUNDS; r++) {
        int i = (int)(rand_r(&seed) % STRESS_CONNS);
        pthread_mutex_lock(&st.mu[i]);
        if (st.suspended[i]) {
            st.suspended[i] = false;
            atomic_fetch_add(&st.wakes[i], 1);
            wakeq_wake(&st.q, &st.nodes[i], r);
        } else if (atomic_exchange(&st.live[i], false)) {
            wakeq_served(&st.q, &st.nodes[i], r); /* the reader ran, then suspended */
            st.suspended[i] = true;
        }
        pthread_mutex_unlock(&st.mu[i]);
    }
    return NULL;
}

static void
test_stress(void)
{
    pthread_t th[STRESS_THREADS];

    memset(&st, 0, sizeof st);
    wakeq_init(&st.q, STRESS_SLOTS, 1000000);
    for (int i = 0; i < STRESS_CONNS; i++) {
        pthread_mutex_init(&st.mu[i], NULL);
        st.suspended[i] = true;
        st.nodes[i].resume = stress_resume;
        st.nodes[i].conn = (void *)(intptr_t)i;
    }
    for (int t = 0; t < STRESS_THREADS; t++)
        pthread_create(&th[t], NULL, stress_run, (void *)(intptr_t)(t + 1));
    for (int t = 0; t < STRESS_THREADS; t++)
        pthread_join(th[t], NULL);
    CHECK(held(&st.q) <= STRESS_SLOTS, "held %zu", held(&st.q));
    /* Close everything: whatever waits is dropped, every slot comes back. */
    for (int i = 0; i < STRESS_CONNS; i++)
        wakeq_forget(&st.q, &st.nodes[i], 0);
    CHECK(held(&st.q) == 0 && waiting(&st.q) == 0, "held %zu waiting %zu", held(&st.q),
          waiting(&st.q));
    int extra = 0, total = 0;
    for (int i = 0; i < STRESS_CONNS; i++) {
        int w = atomic_load(&st.wakes[i]), r = atomic_load(&st.resumes[i]);
        total += r;
        extra += r > w ? r - w : 0;
    }
    CHECK(extra == 0, "%d resumes beyond the wake-ups", extra);
    CHECK(total > STRESS_ROUNDS / 10, "only %d resumes: the run did not exercise the queue", total);
    for (int i = 0; i < STRESS_CONNS; i++)
        pthread_mutex_destroy(&st.mu[i]);
    wakeq_fini(&st.q);
}

int
main(void)
{
    test_order();
    test_unwoken();
    test_batches();
    test_stall();
    test_stress();
    return check_summary("test_wakeq");
}
