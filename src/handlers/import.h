/* import.h -- `tocsin import` (import.c): JSON lines of meetings into a tenant, through the batch
 * of POST /v1/meetings/batch. */
#ifndef TOCSIN_IMPORT_H
#define TOCSIN_IMPORT_H

#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "db.h"

/* Reads in to its end (or the first database failure), MEETING_BATCH_MAX lines a transaction,
 * writing reports and progress to err. 0 when every line was created or already there, 1
 * otherwise. */
int import_run(const struct config *cfg, struct db *db, int64_t tenant_id, FILE *in, FILE *err);

#endif
