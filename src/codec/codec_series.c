/* codec_series.c -- JSON of recurring meetings (codec.h's "recurring meetings" part): the
 * recurrence member of a meeting, an occurrence as the occurrences endpoints show it, and the
 * override an occurrence PATCH writes. Validation reports per field, as codec_meeting.c does;
 * messages quote no client input but the bounded rule parts recur.c names. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_internal.h"
#include "recur.h"
#include "timefmt.h"

static bool
has_error(const struct codec_errors *errs, const char *field)
{
    for (size_t i = 0; i < errs->n; i++)
        if (strcmp(errs->e[i].field, field) == 0)
            return true;
    return false;
}

static int
cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* "recurrence.<name>": an array of at most MEETING_RECURRENCE_DATES_MAX distinct times, sorted
 * into out. */
static void
dates(const json_t *rec, const char *name, int64_t *out, size_t *n, struct codec_errors *errs)
{
    const json_t *v = json_object_get(rec, name), *t;
    char field[CODEC_FIELD_NAME_MAX];
    size_t i;

    *n = 0;
    snprintf(field, sizeof field, "recurrence.%s", name);
    if (v == NULL || json_is_null(v))
        return;
    if (!json_is_array(v) || json_array_size(v) > MEETING_RECURRENCE_DATES_MAX) {
        codec_add_error(errs, field, "must be an array of at most %d date-times",
                        MEETING_RECURRENCE_DATES_MAX);
        return;
    }
    json_array_foreach(v, i, t)
    {
        snprintf(field, sizeof field, "recurrence.%s[%zu]", name, i);
        if (!json_is_string(t) ||
            timefmt_parse(json_string_value(t), json_string_length(t), &out[*n]) != 0) {
            codec_add_error(errs, field, "must be an RFC 3339 date-time with an offset");
            continue;
        }
        bool repeated = false;
        for (size_t k = 0; k < *n; k++)
            repeated |= out[k] == out[*n];
        if (repeated)
            codec_add_error(errs, field, "names the same instant as an earlier one");
        else
            (*n)++;
    }
    qsort(out, *n, sizeof *out, cmp_i64);
}

/* What needs the rule, the zone and the start together, once everything else is valid. */
static void
check_series(struct meeting *m, struct codec_errors *errs)
{
    char why[RECUR_WHY_MAX];

    if (series_check_start(m, why) != 0)
        codec_add_error(errs, "starts_at", "%s", why);
    for (size_t i = 0; i < m->recurrence->n_rdates; i++)
        if (m->recurrence->rdates[i] <= m->starts_at_ms) {
            codec_add_error(errs, "recurrence.rdates", "must all be after starts_at");
            break;
        }
}

void
codec_series_recurrence_decode(const json_t *v, struct meeting *m, struct codec_errors *errs)
{
    static const char *const known[] = {"rrule", "exdates", "rdates", NULL};
    struct meeting_recurrence *rec;
    struct recur_info info;
    char why[RECUR_WHY_MAX];
    size_t before = errs->n;

    if (v == NULL || json_is_null(v))
        return;
    if (!json_is_object(v)) {
        codec_add_error(errs, "recurrence", "must be an object or null");
        return;
    }
    if ((rec = calloc(1, sizeof *rec)) == NULL) {
        codec_add_error(errs, "recurrence", "out of memory");
        return;
    }
    codec_unknown_fields(v, known, "recurrence.", errs);
    const json_t *rule = json_object_get(v, "rrule");
    if (rule == NULL)
        codec_add_error(errs, "recurrence.rrule", "is required");
    else if (!json_is_string(rule))
        codec_add_error(errs, "recurrence.rrule", "must be a string");
    else if (recur_rule_check(json_string_value(rule), &info, why) != 0)
        codec_add_error(errs, "recurrence.rrule", "%s", why);
    else
        rec->rrule = strdup(json_string_value(rule));
    dates(v, "exdates", rec->exdates, &rec->n_exdates, errs);
    dates(v, "rdates", rec->rdates, &rec->n_rdates, errs);
    if (m->time_zone == NULL && !has_error(errs, "time_zone"))
        codec_add_error(errs, "time_zone", "is required for a recurring meeting");
    if (errs->n != before || rec->rrule == NULL) {
        free(rec->rrule);
        free(rec);
        return;
    }
    m->recurrence = rec;
    if (errs->n == 0) /* starts_at and time_zone are known good */
        check_series(m, errs);
}

static json_t *
date_list(const int64_t *v, size_t n)
{
    json_t *a = json_array();

    for (size_t i = 0; a != NULL && i < n; i++)
        if (json_array_append_new(a, codec_time(v[i])) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

json_t *
codec_series_recurrence_encode(const struct meeting_recurrence *rec)
{
    if (rec == NULL)
        return json_null();
    return json_pack("{s:s, s:o, s:o}", "rrule", rec->rrule, "exdates",
                     date_list(rec->exdates, rec->n_exdates), "rdates",
                     date_list(rec->rdates, rec->n_rdates));
}

/* The reminder d of an occurrence: its row among rows, or as it will be when it has none. d is
 * the meeting's reminder, carrying the id, status and fired_at of the series' next firing
 * (db_meeting_sql.h), another occurrence's row: none of the three is this one's, so all null. */
static json_t *
occurrence_reminder(const struct reminder *d, const struct series_occurrence *o,
                    const struct reminder *rows, size_t n_rows)
{
    for (size_t i = 0; i < n_rows; i++)
        if (rows[i].minutes_before == d->minutes_before)
            return codec_meeting_reminder_encode(&rows[i]);
    struct reminder r = *d;
    r.fire_at_ms = o->starts_at_ms - d->minutes_before * 60000LL;
    json_t *v = codec_meeting_reminder_encode(&r);
    if (v != NULL && (json_object_set_new(v, "id", json_null()) != 0 ||
                      json_object_set_new(v, "status", json_null()) != 0 ||
                      json_object_set_new(v, "fired_at", json_null()) != 0)) {
        json_decref(v);
        return NULL;
    }
    return v;
}

json_t *
codec_series_occurrence_encode(const struct meeting *m, const struct series_occurrence *o,
                               const struct reminder *rows, size_t n_rows)
{
    json_t *reminders = json_array();

    for (size_t i = 0; reminders != NULL && i < m->n_reminders; i++)
        if (json_array_append_new(reminders,
                                  occurrence_reminder(&m->reminders[i], o, rows, n_rows)) != 0) {
            json_decref(reminders);
            reminders = NULL;
        }
    if (reminders == NULL)
        return NULL;
    return json_pack(
        "{s:o, s:o, s:o, s:o, s:o, s:s, s:b, s:o}", "original_start",
        codec_time(o->original_start_ms), "starts_at", codec_time(o->starts_at_ms), "ends_at",
        o->has_ends_at ? codec_time(o->ends_at_ms) : json_null(), "starts_at_local",
        codec_local_time(m->time_zone, o->starts_at_ms), "ends_at_local",
        o->has_ends_at ? codec_local_time(m->time_zone, o->ends_at_ms) : json_null(), "title",
        o->title ? o->title : "", "cancelled", o->cancelled, "reminders", reminders);
}

json_t *
codec_series_override_doc(const struct series_override *ov)
{
    bool has = ov != NULL;

    return json_pack("{s:o, s:o, s:o, s:b}", "starts_at",
                     has && ov->has_starts_at ? codec_time(ov->starts_at_ms) : json_null(),
                     "ends_at", has && ov->has_ends_at ? codec_time(ov->ends_at_ms) : json_null(),
                     "title", has && ov->title ? json_string(ov->title) : json_null(), "cancelled",
                     has && ov->cancelled);
}

static bool
opt_time(const json_t *doc, const char *key, int64_t *out, struct codec_errors *errs)
{
    const json_t *v = json_object_get(doc, key);

    if (v == NULL || json_is_null(v))
        return false;
    if (json_is_string(v) && timefmt_parse(json_string_value(v), json_string_length(v), out) == 0)
        return true;
    codec_add_error(errs, key, "must be an RFC 3339 date-time with an offset, or null");
    return false;
}

/* A title as codec_meeting.c takes a meeting's: 1..MEETING_TITLE_MAX characters, no control bytes.
 */
static void
opt_title(const json_t *doc, struct series_override *out, struct codec_errors *errs)
{
    const json_t *v = json_object_get(doc, "title");
    size_t cp = 0;

    if (v == NULL || json_is_null(v))
        return;
    if (!json_is_string(v)) {
        codec_add_error(errs, "title", "must be a string or null");
        return;
    }
    const char *s = json_string_value(v);
    for (size_t i = 0; i < json_string_length(v); i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f) {
            codec_add_error(errs, "title", "must not contain control characters");
            return;
        }
        cp += (c & 0xc0) != 0x80;
    }
    if (cp < 1 || cp > MEETING_TITLE_MAX)
        codec_add_error(errs, "title", "must be 1 to %d characters long", MEETING_TITLE_MAX);
    else
        out->title = strdup(s);
}

enum api_error
codec_series_override_decode(const json_t *doc, int64_t original_ms, struct series_override *out,
                             struct codec_errors *errs)
{
    static const char *const known[] = {"starts_at", "ends_at", "title", "cancelled", NULL};
    const json_t *c = json_object_get(doc, "cancelled");

    memset(out, 0, sizeof *out);
    out->original_start_ms = original_ms;
    errs->n = 0;
    if (!json_is_object(doc)) {
        codec_add_error(errs, "", "the body must be a JSON object");
        return API_E_VALIDATION;
    }
    codec_unknown_fields(doc, known, "", errs);
    out->has_starts_at = opt_time(doc, "starts_at", &out->starts_at_ms, errs);
    out->has_ends_at = opt_time(doc, "ends_at", &out->ends_at_ms, errs);
    opt_title(doc, out, errs);
    if (c != NULL && !json_is_null(c) && !json_is_boolean(c))
        codec_add_error(errs, "cancelled", "must be true, false or null");
    out->cancelled = json_is_true(c);
    int64_t start = out->has_starts_at ? out->starts_at_ms : original_ms;
    if (out->has_ends_at && out->ends_at_ms <= start)
        codec_add_error(errs, "ends_at", "must be after the occurrence's start");
    return errs->n == 0 ? API_E_NONE : API_E_VALIDATION;
}
