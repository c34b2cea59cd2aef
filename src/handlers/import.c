/* import.c -- `tocsin import --tenant NAME FILE`: JSON lines, one meeting a line, written
 * IMPORT_BATCH lines at a time through the batch of POST /v1/meetings/batch (meeting_batch.c),
 * straight to PostgreSQL. Every line gets an idempotency key, its own idempotency_key or
 * "import:" and the SHA-256 of the line, so a run again creates nothing twice (its lines answer
 * 200). Failed lines are reported on stderr with their numbers; on a terminal a progress line
 * (rate, done, errors) is rewritten in place. The Redis keys are armed after each batch when Redis
 * answers; when it does not, the reconciler of a running replica arms them. */
#include "import.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codec.h"
#include "crypto.h"
#include "http_request.h"
#include "meeting_batch.h"
#include "mirror.h"
#include "timefmt.h"

#define IMPORT_BATCH MEETING_BATCH_MAX
#define IMPORT_LINE_MAX HTTP_BODY_MAX /* a line is a POST /v1/meetings body */
#define IMPORT_KEY_PREFIX "import:"
#define IMPORT_PROGRESS_MS 250 /* between two progress lines */
_Static_assert(sizeof IMPORT_KEY_PREFIX - 1 + CRYPTO_SHA256_HEX_LEN <= IDEMPOTENCY_KEY_MAX,
               "a content key fits the key column");

struct import_run {
    const struct config *cfg;
    struct db *db;
    struct mirror *mi;
    int64_t tenant_id;
    FILE *err;
    bool progress;
    json_t *items;              /* the batch being gathered */
    size_t lines[IMPORT_BATCH]; /* their line numbers */
    size_t created, existed, failed;
    int64_t start_ms, shown_ms;
    bool db_failed;
};

static void
report(struct import_run *r, size_t line, int status, const char *code, const char *detail)
{
    r->failed++;
    fprintf(r->err, "%sline %zu: %d %s: %.200s\n", r->progress ? "\r\033[K" : "", line, status,
            code, detail);
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
report_item(struct import_run *r, const struct meeting_batch *b, size_t i)
{
    json_t *res = meeting_batch_result(b, i);
    json_t *p = json_object_get(res, "problem");
    int status = (int)json_integer_value(json_object_get(res, "status"));

    if (res == NULL)
        report(r, r->lines[i], 500, "internal", "out of memory");
    else if (status == 201)
        r->created++;
    else if (status == 200)
        r->existed++;
    else {
        const char *detail = json_string_value(json_object_get(p, "detail"));
        json_t *errs = json_object_get(p, "errors");
        const char *field = json_string_value(json_object_get(json_array_get(errs, 0), "field"));
        char why[256];
        snprintf(why, sizeof why, "%s%s%s", field ? field : "", field && *field ? ": " : "",
                 detail ? detail : "");
        report(r, r->lines[i], status, json_string_value(json_object_get(p, "code")), why);
    }
    json_decref(res);
}

/* Writes the gathered lines as one batch; a database failure stops the import (nothing of this
 * batch was written; a run again goes on where it stopped). */
static void
flush(struct import_run *r)
{
    size_t n = json_array_size(r->items);
    struct meeting_batch *b;

    if (n == 0 || r->db_failed)
        return;
    if ((b = meeting_batch_new(r->cfg, r->tenant_id, r->items)) == NULL) {
        fprintf(r->err, "tocsin import: out of memory\n");
        r->db_failed = true;
    } else if (meeting_batch_write(b, r->db) != DB_ONE_RESULT) {
        fprintf(r->err, "%stocsin import: database: %s (lines %zu..%zu not written)\n",
                r->progress ? "\r\033[K" : "", db_errmsg(r->db), r->lines[0], r->lines[n - 1]);
        r->db_failed = true;
    } else {
        if (r->mi != NULL)
            (void)meeting_batch_mirror(b, r->mi, NULL); /* else: the reconciler's */
        for (size_t i = 0; i < n; i++)
            report_item(r, b, i);
    }
    meeting_batch_free(b);
    json_array_clear(r->items);
    show_progress(r, false);
}

/* One line: parsed, given its key, gathered. Blank lines are skipped (a file's last newline). */
static void
take_line(struct import_run *r, size_t no, char *line, size_t len)
{
    char err[CODEC_MESSAGE_MAX], key[IDEMPOTENCY_KEY_MAX + 1];
    json_t *v;

    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        line[--len] = '\0';
    if (strspn(line, " \t") == len)
        return;
    if (len > IMPORT_LINE_MAX) {
        report(r, no, 413, "body_too_large", "a line is limited to 65536 bytes");
        return;
    }
    if ((v = codec_parse(line, len, err, sizeof err)) == NULL) {
        report(r, no, 400, "bad_json", err);
        return;
    }
    if (json_is_object(v) && json_object_get(v, "idempotency_key") == NULL) {
        memcpy(key, IMPORT_KEY_PREFIX, sizeof IMPORT_KEY_PREFIX - 1);
        crypto_sha256_hex(line, len, key + sizeof IMPORT_KEY_PREFIX - 1);
        json_object_set_new(v, "idempotency_key", json_string(key));
    }
    r->lines[json_array_size(r->items)] = no;
    json_array_append_new(r->items, v);
    if (json_array_size(r->items) == IMPORT_BATCH)
        flush(r);
}

int
import_run(const struct config *cfg, struct db *db, int64_t tenant_id, FILE *in, FILE *err)
{
    struct mirror_opts mo = mirror_opts_of(cfg, MIRROR_API_TIMEOUT_MS);
    struct import_run r = {.cfg = cfg,
                           .db = db,
                           .mi = mirror_new(&mo),
                           .tenant_id = tenant_id,
                           .err = err,
                           .progress = isatty(fileno(err)) != 0,
                           .items = json_array(),
                           .start_ms = timefmt_mono_ms()};
    char *line = NULL;
    size_t cap = 0, no = 0;
    ssize_t len;

    if (r.items == NULL)
        return 1;
    while (!r.db_failed && (len = getline(&line, &cap, in)) >= 0)
        take_line(&r, ++no, line, (size_t)len);
    if (ferror(in))
        fprintf(err, "tocsin import: read error after line %zu\n", no);
    flush(&r);
    show_progress(&r, true);
    fprintf(err, "tocsin import: %zu lines: %zu created, %zu already there, %zu failed\n", no,
            r.created, r.existed, r.failed);
    free(line);
    json_decref(r.items);
    mirror_free(r.mi);
    return r.failed > 0 || r.db_failed || ferror(in) ? 1 : 0;
}
