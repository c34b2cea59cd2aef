/* codec_meeting.c -- JSON <-> struct meeting. Handlers call codec_parse on the body, then
 * codec_meeting_decode, which validates every writable field and collects one error per field
 * problem; codec_meeting_encode writes the output representation, codec_meeting_input_doc the
 * document a merge patch applies to. The "recurrence" member is codec_series.c's. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_internal.h"
#include "email_addr.h"
#include "timefmt.h"
#include "tz.h"

#define INT_TEXT_MAX 24 /* a 64-bit integer in decimal plus NUL */

/* ---- times and time zone ---------------------------------------------------------------- */

static bool
time_member(const json_t *doc, const char *key, bool required, int64_t *out,
            struct codec_errors *errs)
{
    const json_t *v = json_object_get(doc, key);

    if (v == NULL || json_is_null(v)) {
        if (required)
            codec_add_error(errs, key, "is required");
        return false;
    }
    if (!json_is_string(v) ||
        timefmt_parse(json_string_value(v), json_string_length(v), out) != 0) {
        codec_add_error(errs, key, "must be an RFC 3339 date-time with an offset, 1970 to 9999");
        return false;
    }
    return true;
}

static void
decode_times(const json_t *doc, struct meeting *m, struct codec_errors *errs)
{
    bool starts = time_member(doc, "starts_at", true, &m->starts_at_ms, errs);

    m->has_ends_at = time_member(doc, "ends_at", false, &m->ends_at_ms, errs);
    if (starts && m->has_ends_at && m->ends_at_ms <= m->starts_at_ms)
        codec_add_error(errs, "ends_at", "must be after starts_at");
}

static void
decode_time_zone(const json_t *doc, struct meeting *m, struct codec_errors *errs)
{
    const json_t *v = json_object_get(doc, "time_zone");
    const char *s;

    if (v == NULL || json_is_null(v))
        return;
    if (!json_is_string(v)) {
        codec_add_error(errs, "time_zone", "must be a string");
        return;
    }
    s = json_string_value(v);
    if (json_string_length(v) > MEETING_TIME_ZONE_MAX || strlen(s) != json_string_length(v) ||
        !tz_known(s)) {
        codec_add_error(errs, "time_zone",
                        "must be a known IANA time zone name, e.g. Europe/Berlin");
        return;
    }
    m->time_zone = strdup(s);
}

/* ---- participants ----------------------------------------------------------------------- */

/* What the email channel can write into a message (email_addr_ok) with a dot in the domain: an
 * address accepted here and refused when the message is made would fail for good at every
 * reminder. Deliverability is the receiver's business. */
static bool
email_ok(const char *s, size_t len)
{
    const char *at = memchr(s, '@', len);

    return len <= PARTICIPANT_EMAIL_MAX && memchr(s, '\0', len) == NULL && at != NULL &&
           email_addr_ok(s) && memchr(at, '.', len - (size_t)(at - s)) != NULL;
}

/* Validates participants[i]; returns its canonical copy (id, name, email) or NULL. */
static json_t *
participant(const json_t *p, size_t i, struct codec_errors *errs)
{
    static const char *const known[] = {"id", "name", "email", NULL};
    const json_t *id = json_object_get(p, "id");
    const json_t *name = json_object_get(p, "name");
    const json_t *email = json_object_get(p, "email");
    char field[CODEC_FIELD_NAME_MAX];
    size_t before = errs->n;

    if (!json_is_object(p)) {
        codec_add_error(errs, codec_item_path(field, "participants", i, NULL), "must be an object");
        return NULL;
    }
    codec_item_path(field, "participants", i, "");
    codec_unknown_fields(p, known, field, errs);
    if (id == NULL)
        codec_add_error(errs, codec_item_path(field, "participants", i, "id"), "is required");
    else
        codec_text_ok(id, codec_item_path(field, "participants", i, "id"), 1, PARTICIPANT_ID_MAX,
                      false, errs);
    if (name != NULL && !json_is_null(name))
        codec_text_ok(name, codec_item_path(field, "participants", i, "name"), 0,
                      PARTICIPANT_NAME_MAX, false, errs);
    if (email != NULL && !json_is_null(email) &&
        (!json_is_string(email) || !email_ok(json_string_value(email), json_string_length(email))))
        codec_add_error(errs, codec_item_path(field, "participants", i, "email"),
                        "must be an e-mail address (local@domain), at most %d bytes",
                        PARTICIPANT_EMAIL_MAX);
    if (errs->n != before)
        return NULL;
    /* "s*" leaves out a member whose value is NULL (absent or null on input). */
    return json_pack("{s:s, s:s*, s:s*}", "id", json_string_value(id), "name",
                     json_string_value(name), "email", json_string_value(email));
}

/* True when an earlier participant has the same id as participants[i]. */
static bool
duplicate_id(const json_t *list, size_t i)
{
    const char *id = json_string_value(json_object_get(json_array_get(list, i), "id"));

    for (size_t j = 0; id != NULL && j < i; j++) {
        const char *other = json_string_value(json_object_get(json_array_get(list, j), "id"));

        if (other != NULL && strcmp(id, other) == 0)
            return true;
    }
    return false;
}

static void
decode_participants(const json_t *doc, struct meeting *m, struct codec_errors *errs)
{
    const json_t *v = json_object_get(doc, "participants");
    char field[CODEC_FIELD_NAME_MAX];
    size_t before = errs->n;
    json_t *out;

    if (v == NULL || json_is_null(v)) {
        m->participants_json = strdup("[]");
        return;
    }
    if (!json_is_array(v) || json_array_size(v) > MEETING_PARTICIPANTS_MAX) {
        codec_add_error(errs, "participants", "must be an array of at most %d participants",
                        MEETING_PARTICIPANTS_MAX);
        return;
    }
    out = json_array();
    for (size_t i = 0; i < json_array_size(v); i++) {
        json_array_append_new(out, participant(json_array_get(v, i), i, errs));
        if (duplicate_id(v, i))
            codec_add_error(errs, codec_item_path(field, "participants", i, "id"), "duplicate id");
    }
    if (errs->n == before)
        m->participants_json = json_dumps(out, JSON_COMPACT);
    json_decref(out);
}

/* ---- reminders and metadata ------------------------------------------------------------- */

/* A reminder's channels: absent or null is the default; else 1..4 distinct known names. */
static unsigned
channels(const json_t *r, size_t i, struct codec_errors *errs)
{
    const json_t *v = json_object_get(r, "channels"), *c;
    char field[CODEC_FIELD_NAME_MAX];
    unsigned bits = 0;
    size_t k;

    if (v == NULL || json_is_null(v))
        return CHANNELS_DEFAULT;
    codec_item_path(field, "reminders", i, "channels");
    if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > CHANNEL_COUNT) {
        codec_add_error(errs, field, "must be an array of 1 to %d channel names", CHANNEL_COUNT);
        return 0;
    }
    json_array_foreach(v, k, c)
    {
        unsigned bit = json_is_string(c) ? meeting_channel_parse(json_string_value(c)) : 0;
        if (bit == 0 || (bits & bit) != 0) {
            codec_add_error(errs, field,
                            "must name distinct channels among webhook, stream, push, email");
            return 0;
        }
        bits |= bit;
    }
    return bits;
}

static void
reminder(const json_t *r, size_t i, struct reminder *rs, size_t *n_rs, struct codec_errors *errs)
{
    static const char *const known[] = {"minutes_before", "channels", NULL};
    const json_t *mb = json_object_get(r, "minutes_before");
    char field[CODEC_FIELD_NAME_MAX];
    json_int_t n;

    if (!json_is_object(r)) {
        codec_add_error(errs, codec_item_path(field, "reminders", i, NULL), "must be an object");
        return;
    }
    codec_unknown_fields(r, known, codec_item_path(field, "reminders", i, ""), errs);
    codec_item_path(field, "reminders", i, "minutes_before");
    if (mb == NULL) {
        codec_add_error(errs, field, "is required");
        return;
    }
    n = json_integer_value(mb);
    if (!json_is_integer(mb) || n < 0 || n > MEETING_MINUTES_BEFORE_MAX) {
        codec_add_error(errs, field, "must be an integer from 0 to %d", MEETING_MINUTES_BEFORE_MAX);
        return;
    }
    for (size_t k = 0; k < *n_rs; k++) {
        if (rs[k].minutes_before == n) {
            codec_add_error(errs, field, "duplicate value");
            return;
        }
    }
    unsigned bits = channels(r, i, errs);
    if (bits == 0)
        return;
    rs[*n_rs].channels = bits;
    rs[(*n_rs)++].minutes_before = (int)n;
}

void
codec_reminder_list_decode(const json_t *v, struct reminder rs[MEETING_REMINDERS_MAX], size_t *n,
                           struct codec_errors *errs)
{
    *n = 0;
    if (!json_is_array(v) || json_array_size(v) > MEETING_REMINDERS_MAX) {
        codec_add_error(errs, "reminders", "must be an array of at most %d reminders",
                        MEETING_REMINDERS_MAX);
        return;
    }
    for (size_t i = 0; i < json_array_size(v); i++)
        reminder(json_array_get(v, i), i, rs, n, errs);
    /* Descending minutes_before puts the earliest fire time first; n <= 5, insertion sort. */
    for (size_t a = 1; a < *n; a++) {
        struct reminder x = rs[a];
        size_t b = a;

        for (; b > 0 && rs[b - 1].minutes_before < x.minutes_before; b--)
            rs[b] = rs[b - 1];
        rs[b] = x;
    }
}

static void
decode_reminders(const json_t *doc, struct meeting *m, struct codec_errors *errs)
{
    const json_t *v = json_object_get(doc, "reminders");

    if (v == NULL || json_is_null(v)) {
        m->reminders[0].minutes_before = MEETING_DEFAULT_MINUTES_BEFORE;
        m->reminders[0].channels = CHANNELS_DEFAULT;
        m->n_reminders = 1;
        return;
    }
    codec_reminder_list_decode(v, m->reminders, &m->n_reminders, errs);
}

static void
decode_metadata(const json_t *doc, struct meeting *m, struct codec_errors *errs)
{
    const json_t *v = json_object_get(doc, "metadata");
    char *text;

    if (v == NULL || json_is_null(v))
        return;
    if (!json_is_object(v)) {
        codec_add_error(errs, "metadata", "must be an object or null");
        return;
    }
    text = json_dumps(v, JSON_COMPACT);
    if (text == NULL || strlen(text) > MEETING_METADATA_MAX) {
        codec_add_error(errs, "metadata", "must be at most %d bytes as compact JSON",
                        MEETING_METADATA_MAX);
        free(text);
        return;
    }
    m->metadata_json = text;
}

enum api_error
codec_meeting_decode(const json_t *doc, struct meeting *m, struct codec_errors *errs)
{
    static const char *const known[] = {"title",        "description", "starts_at",    "ends_at",
                                        "time_zone",    "location",    "participants", "reminders",
                                        "organizer_id", "metadata",    "recurrence",   NULL};
    const json_t *org = json_object_get(doc, "organizer_id");
    const json_t *title;

    errs->n = 0;
    if (!json_is_object(doc)) {
        codec_add_error(errs, "", "the body must be a JSON object");
        return API_E_VALIDATION;
    }
    codec_unknown_fields(doc, known, "", errs);
    title = json_object_get(doc, "title");
    if (title == NULL)
        codec_add_error(errs, "title", "is required");
    else if (codec_text_ok(title, "title", 1, MEETING_TITLE_MAX, false, errs))
        m->title = strdup(json_string_value(title));
    codec_opt_text(doc, "description", MEETING_DESCRIPTION_MAX, true, &m->description, errs);
    decode_times(doc, m, errs);
    decode_time_zone(doc, m, errs);
    codec_opt_text(doc, "location", MEETING_LOCATION_MAX, false, &m->location, errs);
    decode_participants(doc, m, errs);
    decode_reminders(doc, m, errs);
    decode_metadata(doc, m, errs);
    if (org != NULL && !json_is_null(org) &&
        codec_text_ok(org, "organizer_id", 1, PARTICIPANT_ID_MAX, false, errs))
        m->organizer_id = strdup(json_string_value(org));
    codec_series_recurrence_decode(json_object_get(doc, "recurrence"), m, errs);
    if (errs->n > 0)
        return API_E_VALIDATION;
    meeting_derive_fire_times(m);
    return API_E_NONE;
}

/* ---- encoding --------------------------------------------------------------------------- */

static json_t *
str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

/* Stored JSON text back to a value; NULL text gives fallback (a new reference or NULL). */
static json_t *
load(const char *text, json_t *fallback)
{
    if (text == NULL)
        return fallback;
    json_decref(fallback);
    return json_loads(text, JSON_DECODE_ANY, NULL);
}

json_t *
codec_channel_list(unsigned bits)
{
    json_t *a = json_array();

    for (unsigned i = 0; a != NULL && i < CHANNEL_COUNT; i++)
        if (bits & meeting_channel_at(i))
            json_array_append_new(a, json_string(meeting_channel_name(meeting_channel_at(i))));
    return a;
}

static json_t *
reminder_value(const struct reminder *r, bool full)
{
    char id[INT_TEXT_MAX];
    json_t *o = json_object();
    int bad = 0;

    if (o == NULL)
        return NULL;
    if (full) {
        snprintf(id, sizeof(id), "%lld", (long long)r->id);
        bad |= json_object_set_new(o, "id", json_string(id));
    }
    bad |= json_object_set_new(o, "minutes_before", json_integer(r->minutes_before));
    /* Input documents name the channels only when they are not the default. */
    if (full || r->channels != CHANNELS_DEFAULT)
        bad |= json_object_set_new(o, "channels", codec_channel_list(r->channels));
    if (full) {
        bad |= json_object_set_new(o, "fire_at", codec_time(r->fire_at_ms));
        bad |=
            json_object_set_new(o, "status", json_string(meeting_reminder_status_name(r->status)));
        bad |= json_object_set_new(o, "fired_at",
                                   r->fired_at_ms ? codec_time(r->fired_at_ms) : json_null());
    }
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *
codec_meeting_reminder_encode(const struct reminder *r)
{
    return reminder_value(r, true);
}

/* Adds the writable fields, in contract order, to o. full selects the output form of reminders. */
static int
put_fields(json_t *o, const struct meeting *m, bool full)
{
    json_t *reminders = json_array();
    int bad = 0;

    bad |= json_object_set_new(o, "title", str_or_null(m->title));
    bad |= json_object_set_new(o, "description", str_or_null(m->description));
    bad |= json_object_set_new(o, "starts_at", codec_time(m->starts_at_ms));
    bad |=
        json_object_set_new(o, "ends_at", m->has_ends_at ? codec_time(m->ends_at_ms) : json_null());
    bad |= json_object_set_new(o, "time_zone", str_or_null(m->time_zone));
    if (full) { /* read-only: the start and end as the zone's wall clock shows them */
        bad |= json_object_set_new(o, "starts_at_local",
                                   codec_local_time(m->time_zone, m->starts_at_ms));
        bad |= json_object_set_new(o, "ends_at_local",
                                   m->has_ends_at ? codec_local_time(m->time_zone, m->ends_at_ms)
                                                  : json_null());
    }
    bad |= json_object_set_new(o, "location", str_or_null(m->location));
    bad |= json_object_set_new(o, "participants", load(m->participants_json, json_array()));
    for (size_t i = 0; reminders != NULL && i < m->n_reminders; i++) {
        /* A series' reminder shows its next firing; one that never had a row (added to a series
         * that is over) has none to show. */
        if (full && m->recurrence != NULL && m->reminders[i].id == 0)
            continue;
        bad |= json_array_append_new(reminders, reminder_value(&m->reminders[i], full));
    }
    bad |= json_object_set_new(o, "reminders", reminders);
    if (full || m->organizer_id != NULL) /* input documents name it only when there is one */
        bad |= json_object_set_new(o, "organizer_id", str_or_null(m->organizer_id));
    bad |= json_object_set_new(o, "metadata", load(m->metadata_json, json_null()));
    bad |= json_object_set_new(o, "recurrence", codec_series_recurrence_encode(m->recurrence));
    return bad ? -1 : 0;
}

json_t *
codec_meeting_input_doc(const struct meeting *m)
{
    json_t *o = json_object();

    if (o == NULL || put_fields(o, m, false) != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *
codec_meeting_encode(const struct meeting *m)
{
    json_t *o = json_object();
    int bad;

    if (o == NULL)
        return NULL;
    bad = json_object_set_new(o, "id", json_string(m->id));
    bad |= put_fields(o, m, true);
    bad |= json_object_set_new(o, "version", json_integer(m->version));
    bad |= json_object_set_new(o, "created_at", codec_time(m->created_at_ms));
    bad |= json_object_set_new(o, "updated_at", codec_time(m->updated_at_ms));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}
