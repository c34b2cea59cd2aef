/* queue.c -- ring buffer under one mutex with a condition variable for consumers. Producers never
 * block: a full queue is back-pressure that the database-driven paths absorb. */
#include "queue.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cond.h"

struct queue {
    pthread_mutex_t lock; /* guards everything below */
    pthread_cond_t nonempty;
    size_t item_size, capacity, head, count;
    bool closed;
    unsigned char *items;
};

struct queue *
queue_new(size_t item_size, size_t capacity)
{
    struct queue *q = calloc(1, sizeof(*q));
    if (q == NULL || item_size == 0 || capacity == 0 ||
        (q->items = calloc(capacity, item_size)) == NULL) {
        free(q);
        return NULL;
    }
    cond_init_monotonic(&q->nonempty);
    pthread_mutex_init(&q->lock, NULL);
    q->item_size = item_size;
    q->capacity = capacity;
    return q;
}

void
queue_free(struct queue *q)
{
    if (q == NULL)
        return;
    pthread_cond_destroy(&q->nonempty);
    pthread_mutex_destroy(&q->lock);
    free(q->items);
    free(q);
}

size_t
queue_push(struct queue *q, const void *items, size_t n)
{
    size_t done = 0;
    pthread_mutex_lock(&q->lock);
    while (!q->closed && done < n && q->count < q->capacity) {
        size_t tail = (q->head + q->count) % q->capacity;
        memcpy(q->items + tail * q->item_size, (const unsigned char *)items + done * q->item_size,
               q->item_size);
        q->count++;
        done++;
    }
    if (done > 0)
        pthread_cond_broadcast(&q->nonempty);
    pthread_mutex_unlock(&q->lock);
    return done;
}

size_t
queue_pop(struct queue *q, void *out, size_t max, int64_t timeout_ms)
{
    struct timespec deadline;
    size_t done = 0;

    if (timeout_ms >= 0)
        deadline = cond_deadline(timeout_ms);
    pthread_mutex_lock(&q->lock);
    while (q->count == 0 && !q->closed) {
        if (timeout_ms < 0)
            pthread_cond_wait(&q->nonempty, &q->lock);
        else if (pthread_cond_timedwait(&q->nonempty, &q->lock, &deadline) == ETIMEDOUT)
            break;
    }
    while (done < max && q->count > 0) {
        memcpy((unsigned char *)out + done * q->item_size, q->items + q->head * q->item_size,
               q->item_size);
        q->head = (q->head + 1) % q->capacity;
        q->count--;
        done++;
    }
    pthread_mutex_unlock(&q->lock);
    return done;
}

void
queue_close(struct queue *q)
{
    pthread_mutex_lock(&q->lock);
    q->closed = true;
    pthread_cond_broadcast(&q->nonempty);
    pthread_mutex_unlock(&q->lock);
}

size_t
queue_depth(struct queue *q)
{
    pthread_mutex_lock(&q->lock);
    size_t n = q->count;
    pthread_mutex_unlock(&q->lock);
    return n;
}
