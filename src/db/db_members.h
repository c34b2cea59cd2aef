/* db_members.h -- the replicas table (migrations/006): heartbeats and who is alive, by the
 * database's clock. Implemented in db_members.c. */
#ifndef TOCSIN_DB_MEMBERS_H
#define TOCSIN_DB_MEMBERS_H

#include <stddef.h>
#include <stdint.h>

#include "db.h"

#define DB_MEMBER_ID_MAX 128    /* bytes of an instance id (TOCSIN_INSTANCE_ID) */
#define DB_MEMBER_FORGET_S 3600 /* rows silent this long are deleted by any heartbeat */

typedef void (*db_members_fn)(void *arg, const char *instance_id);

/* Records instance_id's heartbeat now and calls fn for every replica whose heartbeat is younger
 * than ttl_ms and whose backend, when the heartbeat named one (db_tracks_backend), is still there
 * (instance_id included), in instance id order. */
enum db_status db_members_beat(struct db *db, const char *instance_id, int64_t ttl_ms,
                               db_members_fn fn, void *arg);
/* Removes instance_id's row: the others take its shards at their next heartbeat. */
enum db_status db_members_leave(struct db *db, const char *instance_id);

#endif
