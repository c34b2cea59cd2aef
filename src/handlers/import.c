/* import.c -- `tocsin import --tenant NAME [--jobs N] [--batch N] [--rate N] FILE`: JSON lines,
 * one meeting a line, written --batch lines at a time (at most IMPORT_BATCH_MAX) through the batch
 * of POST /v1/meetings/batch (meeting_batch.c), straight to PostgreSQL. The calling thread reads
 * and parses the lines into batches; N writer threads, each with its own PostgreSQL and Redis
 * connections, write them, at most IMPORT_RING batches being in flight; the calling thread prints
 * each batch's results in the file's order once it and every batch before it are written. With
 * --rate, the reader hands a batch over only once the lines before it are within the rate since the
 * start. Every line gets an idempotency key, its own idempotency_key or "import:" and the SHA-256
 * of the line, so a run again creates nothing twice (its lines answer 200). Failed lines are
 * reported on stderr with their numbers, in order; on a terminal a progress line (rate, done,
 * errors) is rewritten in place. The Redis keys are armed after each batch when Redis answers; when
 * it does not, the reconciler of a running replica arms them. */
#include "import.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codec.h"
#include "crypto.h"
#include "http_request.h"
#include "meeting_batch.h"
#include "mirror.h"
#include "thread.h"
#include "timefmt.h"

#define IMPORT_LINE_MAX HTTP_BODY_MAX /* a line is a POST /v1/meetings body */
#define IMPORT_KEY_PREFIX "import:"
#define IMPORT_PROGRESS_MS 250 /* between two progress lines */
#define IMPORT_AHEAD 2         /* batches read ahead or being written, per writer */
#define IMPORT_RING (IMPORT_AHEAD * IMPORT_JOBS_MAX)
#define IMPORT_REPORT_MAX 320 /* one failed line's report */
#define IMPORT_DB_ERR_MAX 256 /* a failed batch's database message */
_Static_assert(sizeof IMPORT_KEY_PREFIX - 1 + CRYPTO_SHA256_HEX_LEN <= IDEMPOTENCY_KEY_MAX,
               "a content key fits the key column");

struct import_report {
    size_t line;
    char text[IMPORT_REPORT_MAX];
};

/* One batch: lines gathered by the reader, written by a writer, reported by the reader. A batch
 * closes at --batch lines (at most IMPORT_BATCH_MAX), good or failed, so that its reports are
 * bounded too. */
struct import_batch {
    json_t *items;                  /* the good lines, parsed */
    size_t lines[IMPORT_BATCH_MAX]; /* their line numbers */
    struct import_report reports[IMPORT_BATCH_MAX];
    size_t nreports, taken; /* taken: lines in this batch, good or failed */
    size_t first, last;     /* line numbers of the batch */
    size_t created, existed;
    bool done, written;
    char db_err[IMPORT_DB_ERR_MAX];
};

struct import_run {
    const struct config *cfg;
    int64_t tenant_id;
    FILE *err;
    bool progress;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct import_batch *ring[IMPORT_RING];
    size_t cap;              /* IMPORT_AHEAD a writer: the batches the ring may hold */
    size_t batch;            /* lines a batch, 1..IMPORT_BATCH_MAX */
    int64_t rate;            /* lines a second handed over, 0 = no bound */
    size_t handed;           /* lines handed over so far (the reader's) */
    size_t head, next, tail; /* reported < head <= next (taken by a writer) <= tail (queued) */
    bool closing, db_failed; /* db_failed: later batches are not written */
    struct import_batch *cur;
    size_t created, existed, failed;
    int64_t start_ms, shown_ms;
};

struct import_writer {
    struct import_run *r;
    struct db *db;
    struct mirror *mi;
    pthread_t th;
    bool started;
};

static void
add_report(struct import_batch *b, size_t line, int status, const char *code, const char *detail)
{
    struct import_report *p = &b->reports[b->nreports++];

    p->line = line;
    snprintf(p->text, sizeof p->text, "line %zu: %d %s: %.200s", line, status, code, detail);
}

static struct import_batch *
batch_new(void)
{
    struct import_batch *b = calloc(1, sizeof *b);

    if (b != NULL && (b->items = json_array()) == NULL) {
        free(b);
        return NULL;
    }
    return b;
}

static void
batch_free(struct import_batch *b)
{
    if (b != NULL)
        json_decref(b->items);
    free(b);
}

static void
show_progress(struct import_run *r, bool last)
{
    int64_t now = timefmt_mono_ms();

    if (!r->progress || (!last && now - r->shown_ms < IMPORT_PROGRESS_MS))
        return;
    r->shown_ms = now;
    double s = (double)(now - r->start_ms) / 1000.0;
    fprintf(r->err, "\r\033[K%zu created, %zu already there, %zu failed, %.0f meetings/s%s",
            r->created, r->existed, r->failed, s > 0 ? (double)(r->created + r->existed) / s : 0.0,
            last ? "\n" : "");
}

static void
item_result(struct import_batch *b, const struct meeting_batch *mb, size_t i)
{
    json_t *res = meeting_batch_result(mb, i);
    json_t *p = json_object_get(res, "problem");
    int status = (int)json_integer_value(json_object_get(res, "status"));

    if (res == NULL)
        add_report(b, b->lines[i], 500, "internal", "out of memory");
    else if (status == 201)
        b->created++;
    else if (status == 200)
        b->existed++;
    else {
        const char *detail = json_string_value(json_object_get(p, "detail"));
        json_t *errs = json_object_get(p, "errors");
        const char *field = json_string_value(json_object_get(json_array_get(errs, 0), "field"));
        const char *code = json_string_value(json_object_get(p, "code"));
        char why[256];
        snprintf(why, sizeof why, "%s%s%s", field ? field : "", field && *field ? ": " : "",
                 detail ? detail : "");
        add_report(b, b->lines[i], status, code ? code : "", why);
    }
    json_decref(res);
}

/* A writer's work on one batch; false on a database failure (nothing of it was written). */
static bool
write_batch(struct import_writer *w, struct import_batch *b)
{
    size_t n = json_array_size(b->items);
    struct meeting_batch *mb;

    if (n == 0)
        return true;
    if ((mb = meeting_batch_new(w->r->cfg, w->r->tenant_id, b->items)) == NULL) {
        snprintf(b->db_err, sizeof b->db_err, "out of memory");
        return false;
    }
    bool ok = meeting_batch_write(mb, w->db) == DB_ONE_RESULT;
    if (!ok)
        snprintf(b->db_err, sizeof b->db_err, "database: %s", db_errmsg(w->db));
    else {
        if (w->mi != NULL)
            (void)meeting_batch_mirror(mb, w->mi, NULL); /* else: the reconciler's */
        for (size_t i = 0; i < n; i++)
            item_result(b, mb, i);
    }
    meeting_batch_free(mb);
    return ok;
}

static void *
writer_main(void *arg)
{
    struct import_writer *w = arg;
    struct import_run *r = w->r;

    thread_set_name("tocsin-import");
    pthread_mutex_lock(&r->mu);
    for (;;) {
        while (r->next == r->tail && !r->closing)
            pthread_cond_wait(&r->cv, &r->mu);
        if (r->next == r->tail)
            break;
        struct import_batch *b = r->ring[r->next++ % IMPORT_RING];
        bool skip = r->db_failed;
        pthread_mutex_unlock(&r->mu);
        bool ok = !skip && write_batch(w, b);
        pthread_mutex_lock(&r->mu);
        b->written = ok;
        b->done = true;
        r->db_failed = r->db_failed || !ok;
        pthread_cond_broadcast(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

static int
cmp_report(const void *a, const void *b)
{
    size_t x = ((const struct import_report *)a)->line, y = ((const struct import_report *)b)->line;
    return (x > y) - (x < y);
}

/* The reader's: a written (or failed) batch's reports, in line order. */
static void
print_batch(struct import_run *r, struct import_batch *b)
{
    const char *clear = r->progress ? "\r\033[K" : "";

    qsort(b->reports, b->nreports, sizeof b->reports[0], cmp_report);
    for (size_t i = 0; i < b->nreports; i++)
        fprintf(r->err, "%s%s\n", clear, b->reports[i].text);
    r->failed += b->nreports;
    r->created += b->created;
    r->existed += b->existed;
    if (!b->written && b->db_err[0] != '\0')
        fprintf(r->err, "%stocsin import: %s (lines %zu..%zu not written)\n", clear, b->db_err,
                b->first, b->last);
    else if (!b->written && json_array_size(b->items) > 0)
        fprintf(r->err, "%stocsin import: lines %zu..%zu not written\n", clear, b->first, b->last);
    show_progress(r, false);
}

/* Prints the written batches at the head of the ring; with wait_all, waits for every one (else
 * only for a free slot). The caller holds r->mu. */
static void
drain_locked(struct import_run *r, bool wait_all)
{
    for (;;) {
        while (r->head < r->tail && r->ring[r->head % IMPORT_RING]->done) {
            struct import_batch *b = r->ring[r->head++ % IMPORT_RING];
            pthread_mutex_unlock(&r->mu);
            print_batch(r, b);
            batch_free(b);
            pthread_mutex_lock(&r->mu);
        }
        if (r->head == r->tail || (!wait_all && r->tail - r->head < r->cap))
            return;
        pthread_cond_wait(&r->cv, &r->mu);
    }
}

/* With a rate, waits until the lines handed over so far are within it: a batch goes at the
 * moment its first line is due. The reader's, holding nothing. */
static void
pace(struct import_run *r, size_t lines)
{
    if (r->rate > 0) {
        int64_t due = r->start_ms + (int64_t)(r->handed * 1000 / (uint64_t)r->rate);
        timefmt_sleep_ms(due - timefmt_mono_ms());
    }
    r->handed += lines;
}

/* Hands the batch being gathered to the writers once a slot is free; false when a database
 * failure stops the import (reading on would only gather lines not to be written). */
static bool
submit(struct import_run *r)
{
    struct import_batch *b = r->cur;
    bool go;

    r->cur = NULL;
    if (b != NULL && b->taken > 0)
        pace(r, b->taken);
    pthread_mutex_lock(&r->mu);
    drain_locked(r, false);
    if (b != NULL && b->taken > 0) {
        r->ring[r->tail++ % IMPORT_RING] = b;
        b = NULL;
        pthread_cond_broadcast(&r->cv);
    }
    go = !r->db_failed;
    pthread_mutex_unlock(&r->mu);
    batch_free(b);
    return go;
}

/* One line: parsed, given its key, gathered. Blank lines are skipped (a file's last newline).
 * false: out of memory, or the import stops (submit). */
static bool
take_line(struct import_run *r, size_t no, char *line, size_t len)
{
    char err[CODEC_MESSAGE_MAX], key[IDEMPOTENCY_KEY_MAX + 1];
    json_t *v;

    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        line[--len] = '\0';
    if (strspn(line, " \t") == len)
        return true;
    if (r->cur == NULL && (r->cur = batch_new()) == NULL) {
        fprintf(r->err, "tocsin import: out of memory\n");
        return false;
    }
    struct import_batch *b = r->cur;
    if (b->taken++ == 0)
        b->first = no;
    b->last = no;
    if (len > IMPORT_LINE_MAX)
        add_report(b, no, 413, "body_too_large", "a line is limited to 65536 bytes");
    else if ((v = codec_parse(line, len, err, sizeof err)) == NULL)
        add_report(b, no, 400, "bad_json", err);
    else {
        if (json_is_object(v) && json_object_get(v, "idempotency_key") == NULL) {
            memcpy(key, IMPORT_KEY_PREFIX, sizeof IMPORT_KEY_PREFIX - 1);
            crypto_sha256_hex(line, len, key + sizeof IMPORT_KEY_PREFIX - 1);
            json_object_set_new(v, "idempotency_key", json_string(key));
        }
        b->lines[json_array_size(b->items)] = no;
        json_array_append_new(b->items, v);
    }
    return b->taken < r->batch || submit(r);
}

static bool
writers_start(struct import_run *r, struct import_writer *w, int jobs, struct db *db)
{
    struct mirror_opts mo = mirror_opts_of(r->cfg, MIRROR_API_TIMEOUT_MS);
    char err[DB_ERR_MAX];

    for (int i = 0; i < jobs; i++) {
        w[i].r = r;
        w[i].db = i == 0 ? db : db_open(r->cfg->database_url, err, sizeof err);
        if (w[i].db == NULL) {
            fprintf(r->err, "tocsin import: database: %s\n", err);
            return false;
        }
        w[i].mi = mirror_new(&mo);
        if (pthread_create(&w[i].th, NULL, writer_main, &w[i]) != 0) {
            fprintf(r->err, "tocsin import: cannot start a writer thread\n");
            return false;
        }
        w[i].started = true;
    }
    return true;
}

/* Lets the writers finish what is queued, then joins them and closes their connections (not
 * writer 0's database, the caller's). */
static void
writers_stop(struct import_run *r, struct import_writer *w, int jobs)
{
    pthread_mutex_lock(&r->mu);
    r->closing = true;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    for (int i = 0; i < jobs; i++) {
        if (w[i].started)
            pthread_join(w[i].th, NULL);
        if (i > 0)
            db_close(w[i].db);
        mirror_free(w[i].mi);
    }
}

/* Reads in to its end or the first database failure (seen when a batch is handed over). */
static bool
read_all(struct import_run *r, FILE *in, size_t *no)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    bool ok = true;

    while (ok && (len = getline(&line, &cap, in)) >= 0)
        ok = take_line(r, ++*no, line, (size_t)len);
    free(line);
    if (ferror(in))
        fprintf(r->err, "tocsin import: read error after line %zu\n", *no);
    return ok && !ferror(in) && submit(r);
}

int
import_run(const struct config *cfg, struct db *db, int64_t tenant_id, const struct import_opts *o,
           FILE *in, FILE *err)
{
    int jobs = o->jobs;
    struct import_writer w[IMPORT_JOBS_MAX] = {0};
    struct import_run r = {.cfg = cfg,
                           .tenant_id = tenant_id,
                           .err = err,
                           .progress = isatty(fileno(err)) != 0,
                           .cap = IMPORT_AHEAD * (size_t)jobs,
                           .batch = o->batch,
                           .rate = o->rate,
                           .start_ms = timefmt_mono_ms()};
    size_t no = 0;
    bool ok;

    if (jobs < 1 || jobs > IMPORT_JOBS_MAX || o->batch < 1 || o->batch > IMPORT_BATCH_MAX ||
        o->rate < 0 || o->rate > IMPORT_RATE_MAX)
        return 1;
    pthread_mutex_init(&r.mu, NULL);
    pthread_cond_init(&r.cv, NULL);
    ok = writers_start(&r, w, jobs, db);
    if (ok)
        ok = read_all(&r, in, &no);
    else
        r.db_failed = true; /* no writer may take a batch of a half-started run */
    pthread_mutex_lock(&r.mu);
    r.closing = true;
    pthread_cond_broadcast(&r.cv);
    drain_locked(&r, true);
    pthread_mutex_unlock(&r.mu);
    writers_stop(&r, w, jobs);
    batch_free(r.cur);
    show_progress(&r, true);
    fprintf(err, "tocsin import: %zu lines: %zu created, %zu already there, %zu failed\n", no,
            r.created, r.existed, r.failed);
    pthread_cond_destroy(&r.cv);
    pthread_mutex_destroy(&r.mu);
    return ok && r.failed == 0 && !r.db_failed ? 0 : 1;
}
