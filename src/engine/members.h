/* members.h -- this replica's place among the live replicas: a thread with its own PostgreSQL
 * connection writes a heartbeat every MEMBERS_BEAT_MS and recomputes which shards (shard.h) this
 * replica owns from the replicas whose heartbeat is younger than MEMBERS_TTL_MS. A replica that
 * dies loses its shards at the others' next heartbeat when its connection closed with it (kill
 * -9, on a direct connection: db_members.h), within MEMBERS_TTL_MS + MEMBERS_BEAT_MS otherwise;
 * one that stops (SIGTERM) gives them up at once. During a change two replicas may briefly both own
 * a shard: that only repeats work (the fire statement fires once), and a shard owned by nobody is
 * taken at the next beat. */
#ifndef TOCSIN_MEMBERS_H
#define TOCSIN_MEMBERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shard.h"

#define MEMBERS_BEAT_MS 400
#define MEMBERS_TTL_MS 1200

typedef void (*members_change_fn)(void *arg);

struct members_opts {
    const char *database_url;
    const char *instance_id;
    members_change_fn on_change; /* the owned shards changed (called on the members thread) */
    void *on_change_arg;
};

struct members;

/* Creates the membership of this replica, owning no shard yet (so that the engine's threads can
 * be given it before it runs). NULL when out of memory. */
struct members *members_new(const struct members_opts *opts);
/* Starts the heartbeat thread; the first heartbeat is written at once. 0 or -1. */
int members_run(struct members *m);
/* Stops the thread (when it runs) and removes this replica's row so that the others take its
 * shards now; m stays readable (what it owned) for the threads still stopping. NULL ok. */
void members_leave(struct members *m);
/* Frees m, after members_leave and once no thread reads it. NULL ok. */
void members_free(struct members *m);
/* Whether this replica owns the reminder's shard. Thread-safe; true for NULL (one replica alone,
 * as in tests that run the engine's parts without membership). */
bool members_owns(struct members *m, int64_t reminder_id);
/* The owned shards into out. Thread-safe; all for NULL. */
void members_shards(struct members *m, struct shard_set *out);
/* Live replicas seen at the last heartbeat (for /metrics). Thread-safe; 1 for NULL. */
size_t members_live(struct members *m);

#endif
