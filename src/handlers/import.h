/* import.h -- `tocsin import` (import.c): JSON lines of meetings into a tenant, through the batch
 * of POST /v1/meetings/batch. */
#ifndef TOCSIN_IMPORT_H
#define TOCSIN_IMPORT_H

#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "db.h"
#include "meeting_batch.h"

#define IMPORT_JOBS_MAX 8                  /* --jobs: batches written at once, a connection each */
#define IMPORT_JOBS_DEFAULT 4              /* the fastest on two cores (docs/benchmarks.md) */
#define IMPORT_BATCH_MAX MEETING_BATCH_MAX /* --batch: lines a transaction, at most */
#define IMPORT_RATE_MAX 1000000            /* --rate: lines a second, at most */

/* How an import writes: jobs (1..IMPORT_JOBS_MAX) transactions at once, batch (1..
 * IMPORT_BATCH_MAX) lines a transaction, and at most rate lines a second handed to the writers
 * (0: as fast as they go; 1..IMPORT_RATE_MAX), so that a service firing live reminders on the same
 * database keeps its CPU and WAL (docs/benchmarks.md). */
struct import_opts {
    int jobs;
    size_t batch;
    int64_t rate;
};

/* Reads in to its end (or the first database failure), o's batch of lines a transaction, o's jobs
 * transactions at once on as many connections (db the first, the others opened to cfg's
 * database), writing reports (in line order) and progress to err. 0 when every line was created
 * or already there, 1 otherwise. */
int import_run(const struct config *cfg, struct db *db, int64_t tenant_id,
               const struct import_opts *o, FILE *in, FILE *err);

#endif
