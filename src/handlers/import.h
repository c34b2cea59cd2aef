/* import.h -- `tocsin import` (import.c): JSON lines of meetings into a tenant, through the batch
 * of POST /v1/meetings/batch. */
#ifndef TOCSIN_IMPORT_H
#define TOCSIN_IMPORT_H

#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "db.h"

#define IMPORT_JOBS_MAX 8     /* --jobs: batches written at once, a connection each */
#define IMPORT_JOBS_DEFAULT 4 /* the fastest on two cores (docs/benchmarks.md) */

/* Reads in to its end (or the first database failure), MEETING_BATCH_MAX lines a transaction,
 * jobs (1..IMPORT_JOBS_MAX) transactions at once on as many connections (db the first, the others
 * opened to cfg's database), writing reports (in line order) and progress to err. 0 when every
 * line was created or already there, 1 otherwise. */
int import_run(const struct config *cfg, struct db *db, int64_t tenant_id, int jobs, FILE *in,
               FILE *err);

#endif
