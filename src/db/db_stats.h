/* db_stats.h -- the tenant's counts and lateness over a recent window (GET /v1/stats), read from
 * PostgreSQL in one statement that answers the reply's JSON document. Implemented in
 * db_stats.c. */
#ifndef TOCSIN_DB_STATS_H
#define TOCSIN_DB_STATS_H

#include <stdint.h>

#include "db.h"

#define DB_STATS_WINDOW_MAX_S 86400 /* the longest window: 24 h */

/* The stats of tenant over the last window_s seconds in buckets of bucket_s seconds (window_s a
 * multiple of it), as a JSON text in *json (malloc'd, the caller frees it). DB_ONE_RESULT or the
 * error. */
enum db_status db_stats(struct db *db, int64_t tenant_id, int window_s, int bucket_s, char **json);

#endif
