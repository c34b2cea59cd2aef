/* stream_body.c -- the bodies of stream_body.h. */
#include "stream_body.h"

#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "db_series.h"

/* Narrows ev's audience to the readers m lists now; frees *body when none is left. */
static enum db_status
narrow(struct db *db, const struct meeting *m, struct db_stream_event *ev, char **body)
{
    char *kept = codec_notification_audience(m, ev->audience_json);

    if (kept == NULL) {
        db_note_error(db, "stream event of meeting %s: cannot read its audience", m->id);
        return DB_HARD_ERROR;
    }
    free(ev->audience_json);
    ev->audience_json = kept;
    if (strcmp(kept, "[]") == 0) {
        free(*body);
        *body = NULL;
    }
    return DB_ONE_RESULT;
}

/* One chunk of at most DB_GET_MANY_MAX events; each sees its meeting as its reminder shows it
 * (a series' occurrence as that occurrence: db_meeting_get_many_for), and goes only to those of
 * its audience that this same read of the meeting lists. */
static enum db_status
chunk(struct db *db, struct db_stream_event *ev, size_t n, char **bodies)
{
    const char *ids[DB_GET_MANY_MAX];
    int64_t rids[DB_GET_MANY_MAX];
    size_t at[DB_GET_MANY_MAX], of[DB_GET_MANY_MAX], k = 0;
    struct db_meeting_list ms;
    enum db_status st;

    for (size_t i = 0; i < n; i++) {
        if (ev[i].kind != DB_STREAM_REMINDER)
            continue; /* an inbox change: its body was stored (stream_bodies) */
        of[k] = i;
        ids[k] = ev[i].meeting_id;
        rids[k++] = ev[i].reminder_id;
    }
    if (k == 0)
        return DB_ONE_RESULT;
    if ((st = db_meeting_get_many_for(db, ids, rids, k, &ms, at)) != DB_ONE_RESULT)
        return st;
    for (size_t j = 0; j < k; j++) {
        const struct meeting *m = &ms.m[at[j]];
        size_t i = of[j];
        struct occurrence o = {ev[i].reminder_id, ev[i].fire_at_ms, ev[i].fired_at_ms};

        if (m->id[0] == '\0')
            continue;
        if ((bodies[i] = codec_notification_encode(m, &o, ev[i].fired_at_ms)) == NULL) {
            db_note_error(db, "stream event of meeting %s: cannot encode its notification", m->id);
            st = DB_HARD_ERROR;
            break;
        }
        if ((st = narrow(db, m, &ev[i], &bodies[i])) != DB_ONE_RESULT)
            break;
    }
    db_meeting_list_fini(&ms);
    return st;
}

/* The stored bodies of inbox changes. They go to their participant as written: the change was
 * theirs, and the reads that find them for one reader (a resume) have checked that the meeting
 * still lists them. */
static enum db_status
stored(struct db *db, const struct db_stream_event *ev, size_t n, char **bodies)
{
    for (size_t i = 0; i < n; i++) {
        if (ev[i].kind != DB_STREAM_INBOX)
            continue;
        if ((bodies[i] = strdup(ev[i].data != NULL ? ev[i].data : "{}")) == NULL) {
            db_note_error(db, "inbox event %lld: out of memory", (long long)ev[i].seq);
            return DB_HARD_ERROR;
        }
    }
    return DB_ONE_RESULT;
}

enum db_status
stream_bodies(struct db *db, struct db_stream_event *ev, size_t n, char **bodies)
{
    enum db_status st = DB_ONE_RESULT;

    memset(bodies, 0, n * sizeof *bodies);
    st = stored(db, ev, n, bodies);
    for (size_t i = 0; i < n && st == DB_ONE_RESULT; i += DB_GET_MANY_MAX)
        st = chunk(db, ev + i, n - i < DB_GET_MANY_MAX ? n - i : DB_GET_MANY_MAX, bodies + i);
    if (st != DB_ONE_RESULT)
        for (size_t i = 0; i < n; i++) {
            free(bodies[i]);
            bodies[i] = NULL;
        }
    return st;
}
