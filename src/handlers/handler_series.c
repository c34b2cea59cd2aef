/* handler_series.c -- what the endpoints that write a series share (handler.h's "recurring
 * meetings" part): the Redis side after the commit, the ten-year look-ahead, the re-read body. */
#include <stdlib.h>
#include <string.h>

#include "db_series.h"
#include "engine.h"
#include "handler.h"
#include "log.h"
#include "mirror.h"
#include "series.h"
#include "timefmt.h"

void
handler_series_keys(struct request *rq, const struct db_series_keys *gone,
                    const struct db_series_keys *fresh)
{
    bool failed = false;

    if (gone != NULL && gone->n > 0 && mirror_disarm(rq->w->mi, gone->k, gone->n) != 0) {
        LOG_WARN("redis: %zu stale occurrence keys left to expire", gone->n);
        failed = true;
    }
    if (fresh == NULL || fresh->n == 0)
        goto done;
    engine_reminders_changed(rq->w->engine, fresh->k, fresh->n);
    if (mirror_arm(rq->w->mi, fresh->k, fresh->n, timefmt_now_ms(), 0) != 0) {
        LOG_WARN("redis: %zu occurrence keys left for the reconciler", fresh->n);
        failed = true;
    }
done:
    if (failed)
        engine_mirror_failed(rq->w->engine);
}

static bool
same_dates(const int64_t *a, size_t na, const int64_t *b, size_t nb)
{
    return na == nb && (na == 0 || memcmp(a, b, na * sizeof *a) == 0);
}

/* Whether next's occurrences may differ from cur's. */
static bool
series_changed(const struct meeting *cur, const struct meeting *next)
{
    const struct meeting_recurrence *a = cur ? cur->recurrence : NULL, *b = next->recurrence;

    return a == NULL || strcmp(a->rrule, b->rrule) != 0 ||
           !same_dates(a->exdates, a->n_exdates, b->exdates, b->n_exdates) ||
           !same_dates(a->rdates, a->n_rdates, b->rdates, b->n_rdates) ||
           cur->starts_at_ms != next->starts_at_ms || cur->time_zone == NULL ||
           strcmp(cur->time_zone, next->time_zone) != 0;
}

bool
handler_series_upcoming(const struct meeting *cur, const struct meeting *next,
                        struct codec_errors *errs)
{
    if (next->recurrence == NULL || !series_changed(cur, next) ||
        series_has_upcoming(next, timefmt_now_ms()))
        return true;
    errs->n = 1;
    snprintf(errs->e[0].field, sizeof errs->e[0].field, "recurrence");
    snprintf(errs->e[0].message, sizeof errs->e[0].message,
             "has no occurrence in the next %d years", SERIES_UPCOMING_YEARS);
    return false;
}

enum db_status
handler_series_body(struct db *db, int64_t tenant_id, const char *id, char **body,
                    char etag[HTTP_ETAG_MAX])
{
    struct meeting shown;

    meeting_init(&shown);
    enum db_status st = db_meeting_get(db, tenant_id, id, &shown, false);
    if (st == DB_ONE_RESULT)
        st = handler_meeting_body_st(db, &shown, body, etag);
    meeting_fini(&shown);
    if (st == DB_NO_RESULTS) {
        db_note_error(db, "meeting %s: gone right after its write", id);
        return DB_HARD_ERROR;
    }
    return st;
}
