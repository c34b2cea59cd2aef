/* codec_inbox.c -- an inbox's marks (DESIGN section 13): the PATCH of one item, the mark of every
 * item up to a seq as read, and the body of the stream's `inbox` event that tells a participant's
 * other tabs and devices of a change. */
#include <string.h>

#include "codec.h"
#include "codec_internal.h"

/* A mark time, or null when the mark is unset (ms < 0). */
static json_t *
mark(int64_t ms)
{
    return ms < 0 ? json_null() : codec_time(ms);
}

json_t *
codec_inbox_marks(json_t *item, int64_t read_at_ms, int64_t archived_at_ms)
{
    if (item == NULL || json_object_set_new(item, "read_at", mark(read_at_ms)) != 0 ||
        json_object_set_new(item, "archived_at", mark(archived_at_ms)) != 0) {
        json_decref(item);
        return NULL;
    }
    return item;
}

char *
codec_inbox_event_encode(const struct codec_inbox_event *ev)
{
    json_t *doc;

    if (ev->up_to)
        doc = json_pack("{s:I, s:o, s:I}", "up_to", (json_int_t)ev->seq, "read_at",
                        mark(ev->read_at_ms), "unread_count", (json_int_t)ev->unread_count);
    else
        doc = codec_inbox_marks(json_pack("{s:I, s:I}", "seq", (json_int_t)ev->seq, "unread_count",
                                          (json_int_t)ev->unread_count),
                                ev->read_at_ms, ev->archived_at_ms);
    char *text = doc != NULL ? json_dumps(doc, JSON_COMPACT) : NULL;

    json_decref(doc);
    return text;
}

/* One optional boolean field: -1 when absent, else 0 or 1. */
static int
flag(const json_t *doc, const char *name, struct codec_errors *errs)
{
    const json_t *v = json_object_get(doc, name);

    if (v == NULL)
        return -1;
    if (!json_is_boolean(v)) {
        codec_add_error(errs, name, "must be true or false");
        return -1;
    }
    return json_is_true(v) ? 1 : 0;
}

enum api_error
codec_inbox_patch_decode(const json_t *doc, int *read, int *archived, struct codec_errors *errs)
{
    static const char *const known[] = {"read", "archived", NULL};

    *read = *archived = -1;
    if (!json_is_object(doc)) {
        codec_add_error(errs, "", "must be a JSON object");
        return API_E_VALIDATION;
    }
    codec_unknown_fields(doc, known, "", errs);
    *read = flag(doc, "read", errs);
    *archived = flag(doc, "archived", errs);
    if (errs->n == 0 && *read < 0 && *archived < 0)
        codec_add_error(errs, "", "must set read, archived or both");
    return errs->n == 0 ? API_E_NONE : API_E_VALIDATION;
}

enum api_error
codec_inbox_read_decode(const json_t *doc, int64_t *up_to, struct codec_errors *errs)
{
    static const char *const known[] = {"up_to", NULL};
    const json_t *v = json_object_get(doc, "up_to");

    *up_to = 0;
    if (!json_is_object(doc)) {
        codec_add_error(errs, "", "must be a JSON object");
        return API_E_VALIDATION;
    }
    codec_unknown_fields(doc, known, "", errs);
    if (!json_is_integer(v) || json_integer_value(v) < 1)
        codec_add_error(errs, "up_to", "must be a sequence number (an integer of at least 1)");
    else
        *up_to = (int64_t)json_integer_value(v);
    return errs->n == 0 ? API_E_NONE : API_E_VALIDATION;
}

enum api_error
codec_snooze_decode(const json_t *doc, int *minutes, struct codec_errors *errs)
{
    static const char *const known[] = {"minutes", NULL};
    const json_t *v = json_object_get(doc, "minutes");

    if (!json_is_object(doc)) {
        codec_add_error(errs, "", "must be a JSON object");
        return API_E_VALIDATION;
    }
    codec_unknown_fields(doc, known, "", errs);
    if (!json_is_integer(v))
        codec_add_error(errs, "minutes", "must be an integer");
    if (errs->n > 0)
        return API_E_VALIDATION;
    if (json_integer_value(v) < SNOOZE_MINUTES_MIN || json_integer_value(v) > SNOOZE_MINUTES_MAX) {
        codec_add_error(errs, "minutes", "must be from %d to %d", SNOOZE_MINUTES_MIN,
                        SNOOZE_MINUTES_MAX);
        return API_E_SNOOZE_OUT_OF_RANGE;
    }
    *minutes = (int)json_integer_value(v);
    return API_E_NONE;
}
