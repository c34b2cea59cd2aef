/* meeting_batch.h -- a batch of meetings written together (meeting_batch.c): what
 * POST /v1/meetings/batch (meetings_batch.c) and `tocsin import` (import.c) share. */
#ifndef TOCSIN_MEETING_BATCH_H
#define TOCSIN_MEETING_BATCH_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "db.h"

#define MEETING_BATCH_MAX DB_MEETING_BATCH_MAX /* meetings in one batch (docs/api.md) */

struct engine;
struct meeting_batch;
struct mirror;

/* Reads items (a JSON array of 1..MEETING_BATCH_MAX values, borrowed; their idempotency_key
 * members are taken out) for tenant_id: each through codec_meeting_decode, a bad one marked
 * failed with its problem. NULL when out of memory; free with meeting_batch_free. */
struct meeting_batch *meeting_batch_new(const struct config *cfg, int64_t tenant_id, json_t *items);
void meeting_batch_free(struct meeting_batch *b);
/* Writes the good items in one transaction (db_tx_run: a soft error runs it again). Anything but
 * DB_ONE_RESULT: nothing was written. */
enum db_status meeting_batch_write(struct meeting_batch *b, struct db *db);
/* After meeting_batch_write: arms the created meetings' pending keys in one pipeline and tells
 * e (may be NULL) of them. 0, or -1 when Redis failed (the reconciler arms what is missing). */
int meeting_batch_mirror(const struct meeting_batch *b, struct mirror *mi, struct engine *e);
size_t meeting_batch_count(const struct meeting_batch *b);
/* Item i's result: {"status": 201|200, "id"} or {"status", "problem"}. New reference (NULL when
 * out of memory). */
json_t *meeting_batch_result(const struct meeting_batch *b, size_t i);

#endif
