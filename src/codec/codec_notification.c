/* codec_notification.c -- the body of a fired reminder as webhooks, the live stream and the inbox
 * carry it: the meeting as GET shows it, the reminder with the occurrence's fire time, and which
 * occurrence of a series it was. Web Push carries a smaller payload (codec_push.c), email a
 * message of its own (mail.c). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "codec_internal.h"
#include "timefmt.h"

/* The reminder of o as the meeting shows it, with the occurrence's own fire time and, when o
 * knows it, its fired state (the row may have moved on: rescheduled, fired again). */
static json_t *
occurrence_reminder(const struct meeting *m, const struct occurrence *o)
{
    for (size_t i = 0; i < m->n_reminders; i++) {
        struct reminder r = m->reminders[i];

        if (r.id != o->reminder_id)
            continue;
        r.fire_at_ms = o->fire_at_ms;
        if (o->fired_at_ms != 0) {
            r.status = REMINDER_FIRED;
            r.fired_at_ms = o->fired_at_ms;
        }
        return codec_meeting_reminder_encode(&r);
    }
    return json_null();
}

char *
codec_notification_encode(const struct meeting *m, const struct occurrence *o, int64_t ts_ms)
{
    char id[OCCURRENCE_ID_MAX], ts[TIMEFMT_BUF];
    json_t *meeting = codec_meeting_encode(m), *reminder = occurrence_reminder(m, o), *doc;

    meeting_occurrence_id(o->reminder_id, o->fire_at_ms, id);
    doc = meeting == NULL || reminder == NULL
              ? NULL
              : json_pack("{s:s, s:s, s:s, s:{s:O, s:O}}", "type", "meeting.reminder", "id", id,
                          "timestamp", timefmt_format(ts_ms, ts), "data", "reminder", reminder,
                          "meeting", meeting);
    /* An occurrence of a series says which: its original start (meeting.starts_at is its own). */
    if (doc != NULL && m->is_occurrence &&
        json_object_set_new(
            json_object_get(doc, "data"), "occurrence",
            json_pack("{s:o}", "original_start", codec_time(m->original_start_ms))) != 0) {
        json_decref(doc);
        doc = NULL;
    }
    json_decref(meeting);
    json_decref(reminder);
    char *text = doc ? codec_dump(doc) : NULL;
    json_decref(doc);
    return text;
}

/* The ids of a meeting's participants (its JSON, an array of objects with an "id") and its
 * organizer as the keys of an object, for lookups by hash: an audience and a meeting may both
 * have 500. New reference, NULL when out of memory or not such an array. */
static json_t *
member_set(const struct meeting *m)
{
    json_t *ps = json_loads(m->participants_json, 0, NULL), *set = json_object(), *p;
    bool bad = !json_is_array(ps) || set == NULL;
    size_t i;

    json_array_foreach(ps, i, p)
    {
        const char *id = json_string_value(json_object_get(p, "id"));
        bad = bad || id == NULL || json_object_set_new(set, id, json_true()) != 0;
    }
    if (!bad && m->organizer_id != NULL)
        bad = json_object_set_new(set, m->organizer_id, json_true()) != 0;
    json_decref(ps);
    if (bad) {
        json_decref(set);
        return NULL;
    }
    return set;
}

char *
codec_notification_audience(const struct meeting *m, const char *audience_json)
{
    json_t *aud = json_loads(audience_json, 0, NULL), *set = member_set(m), *kept = json_array();
    char *text = NULL;
    bool bad = !json_is_array(aud) || set == NULL || kept == NULL;
    size_t i;
    json_t *v;

    json_array_foreach(aud, i, v)
    {
        const char *id = json_string_value(v);
        if (bad || id == NULL) {
            bad = true;
            break;
        }
        if (json_object_get(set, id) != NULL)
            bad = json_array_append(kept, v) != 0;
    }
    if (!bad)
        text = json_dumps(kept, JSON_COMPACT);
    json_decref(aud);
    json_decref(set);
    json_decref(kept);
    return text;
}
