/* db_quota.h -- what a tenant holds, counted against its quotas (TOCSIN_TENANT_MEETINGS_MAX).
 * Implemented in db_quota.c. */
#ifndef TOCSIN_DB_QUOTA_H
#define TOCSIN_DB_QUOTA_H

#include <stdint.h>

#include "db.h"

/* The tenant's live (not deleted) meetings, a series as one, counted up to limit (> 0): *n =
 * min(live, limit), so a check costs at most limit index entries whatever the tenant holds.
 * ONE_RESULT or an error. Under READ COMMITTED it sees the creates committed when it runs:
 * creates that count at once may each see room for one more (meetings_post.c says what that
 * allows). */
enum db_status db_quota_meetings(struct db *db, int64_t tenant_id, int64_t limit, int64_t *n);

#endif
