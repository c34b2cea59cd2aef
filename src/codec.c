/* codec.c -- JSON <-> struct meeting (jansson). Handlers call codec_parse on the body, then
 * codec_meeting_decode, which validates every writable field and collects one error per field
 * problem; codec_meeting_encode writes the output representation. Error texts never quote more
 * than CODEC_ECHO_MAX bytes of client input (only unknown member names are quoted, in field
 * paths). */
#include "codec.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "email_addr.h"
#include "timefmt.h"
#include "tz.h"

#define PARSE_TEXT_MAX 96   /* bytes of jansson's own message kept in a parse error */
#define INT_TEXT_MAX 24     /* a 64-bit integer in decimal plus NUL */
#define CODEC_SCOPE_MAX 100 /* characters of a scope text (all four names need 47) */

/* ---- parsing ---------------------------------------------------------------------------- */

/* True when no container in v sits deeper than CODEC_DEPTH_MAX (v itself is at depth + 1). */
static bool
depth_ok(const json_t *v, int depth)
{
    if (!json_is_object(v) && !json_is_array(v))
        return true;
    if (depth + 1 > CODEC_DEPTH_MAX)
        return false;
    for (size_t i = 0; i < json_array_size(v); i++) {
        if (!depth_ok(json_array_get(v, i), depth + 1))
            return false;
    }
    /* jansson's iterator takes a non-const pointer but does not modify the object. */
    for (void *it = json_object_iter((json_t *)v); it;
         it = json_object_iter_next((json_t *)v, it)) {
        if (!depth_ok(json_object_iter_value(it), depth + 1))
            return false;
    }
    return true;
}

/* Keeps jansson's reason but drops its "near '...'" quote of the input, which may hold client
 * bytes that are not even valid UTF-8, and anything that is not printable ASCII. */
static void
parse_error(const json_error_t *je, char *err, size_t errlen)
{
    char text[PARSE_TEXT_MAX];
    const char *near = strstr(je->text, " near ");
    size_t n = near ? (size_t)(near - je->text) : strlen(je->text);

    if (n >= sizeof(text))
        n = sizeof(text) - 1;
    for (size_t i = 0; i < n; i++)
        text[i] = je->text[i] >= 0x20 && je->text[i] < 0x7f ? je->text[i] : '?';
    text[n] = '\0';
    snprintf(err, errlen, "%s at line %d, column %d", text, je->line, je->column);
}

json_t *
codec_parse(const char *body, size_t len, char *err, size_t errlen)
{
    json_error_t je;
    json_t *v;
    char scratch[1];

    if (err == NULL || errlen == 0) {
        err = scratch;
        errlen = sizeof(scratch);
    }
    /* No JSON_ALLOW_NUL: "\u0000" is rejected; raw NUL bytes are control characters to jansson.
     * JSON_DECODE_ANY: a merge patch may be any value; decode rejects non-objects per field. */
    v = json_loadb(body ? body : "", body ? len : 0, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
    if (v == NULL) {
        parse_error(&je, err, errlen);
        return NULL;
    }
    if (!depth_ok(v, 0)) {
        json_decref(v);
        snprintf(err, errlen, "nesting deeper than %d levels", CODEC_DEPTH_MAX);
        return NULL;
    }
    err[0] = '\0';
    return v;
}

/* ---- field errors ----------------------------------------------------------------------- */

static void __attribute__((format(printf, 3, 4)))
add_error(struct codec_errors *errs, const char *field, const char *fmt, ...)
{
    va_list ap;
    struct codec_field_error *e;

    if (errs->n >= CODEC_FIELD_ERRORS_MAX)
        return;
    e = &errs->e[errs->n++];
    snprintf(e->field, sizeof(e->field), "%s", field);
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof(e->message), fmt, ap);
    va_end(ap);
}

/* Bytes of s to quote: at most CODEC_ECHO_MAX, cut on a UTF-8 boundary so the quote stays
 * valid. */
static int
echo_len(const char *s)
{
    size_t n = strlen(s);

    if (n <= CODEC_ECHO_MAX)
        return (int)n;
    n = CODEC_ECHO_MAX;
    while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
        n--;
    return (int)n;
}

/* "list[i]" or "list[i].member". */
static const char *
item_path(char buf[CODEC_FIELD_NAME_MAX], const char *list, size_t i, const char *member)
{
    snprintf(buf, CODEC_FIELD_NAME_MAX, "%s[%zu]%s%s", list, i, member ? "." : "",
             member ? member : "");
    return buf;
}

/* Reports every member of obj whose name is not in known (NULL-terminated). */
static void
unknown_fields(const json_t *obj, const char *const *known, const char *prefix,
               struct codec_errors *errs)
{
    char field[CODEC_FIELD_NAME_MAX];

    for (void *it = json_object_iter((json_t *)obj); it;
         it = json_object_iter_next((json_t *)obj, it)) {
        const char *key = json_object_iter_key(it);
        size_t k = 0;

        while (known[k] != NULL && strcmp(known[k], key) != 0)
            k++;
        if (known[k] != NULL)
            continue;
        snprintf(field, sizeof(field), "%s%.*s", prefix, echo_len(key), key);
        add_error(errs, field, "unknown field");
    }
}

/* ---- strings ---------------------------------------------------------------------------- */

/* Checks a string value: no NUL, no C0 control or DEL (multiline text may hold tab, CR and LF),
 * min_cp..max_cp code points. jansson has already checked that it is valid UTF-8. */
static bool
text_ok(const json_t *v, const char *field, size_t min_cp, size_t max_cp, bool multiline,
        struct codec_errors *errs)
{
    const char *s;
    size_t len, cp = 0;

    if (!json_is_string(v)) {
        add_error(errs, field, "must be a string");
        return false;
    }
    s = json_string_value(v);
    len = json_string_length(v);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        bool allowed = multiline && (c == '\t' || c == '\n' || c == '\r');

        if ((c < 0x20 || c == 0x7f) && !allowed) {
            add_error(errs, field, "must not contain control characters");
            return false;
        }
        cp += (c & 0xc0) != 0x80;
    }
    if (cp < min_cp || cp > max_cp) {
        add_error(errs, field, "must be %zu to %zu characters long", min_cp, max_cp);
        return false;
    }
    return true;
}

/* An optional text member: absent or null leaves *out NULL. */
static void
opt_text(const json_t *doc, const char *key, size_t max_cp, bool multiline, char **out,
         struct codec_errors *errs)
{
    const json_t *v = json_object_get(doc, key);

    if (v == NULL || json_is_null(v))
        return;
    if (text_ok(v, key, 0, max_cp, multiline, errs))
        *out = strdup(json_string_value(v));
}

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

/* ---- times and time zone ---------------------------------------------------------------- */

static bool
time_member(const json_t *doc, const char *key, bool required, int64_t *out,
            struct codec_errors *errs)
{
    const json_t *v = json_object_get(doc, key);

    if (v == NULL || json_is_null(v)) {
        if (required)
            add_error(errs, key, "is required");
        return false;
    }
    if (!json_is_string(v) ||
        timefmt_parse(json_string_value(v), json_string_length(v), out) != 0) {
        add_error(errs, key, "must be an RFC 3339 date-time with an offset, 1970 to 9999");
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
        add_error(errs, "ends_at", "must be after starts_at");
}

static void
decode_time_zone(const json_t *doc, struct meeting *m, struct codec_errors *errs)
{
    const json_t *v = json_object_get(doc, "time_zone");
    const char *s;

    if (v == NULL || json_is_null(v))
        return;
    if (!json_is_string(v)) {
        add_error(errs, "time_zone", "must be a string");
        return;
    }
    s = json_string_value(v);
    if (json_string_length(v) > MEETING_TIME_ZONE_MAX || strlen(s) != json_string_length(v) ||
        !tz_known(s)) {
        add_error(errs, "time_zone", "must be a known IANA time zone name, e.g. Europe/Berlin");
        return;
    }
    m->time_zone = strdup(s);
}

/* ---- participants ----------------------------------------------------------------------- */

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
        add_error(errs, item_path(field, "participants", i, NULL), "must be an object");
        return NULL;
    }
    item_path(field, "participants", i, "");
    unknown_fields(p, known, field, errs);
    if (id == NULL)
        add_error(errs, item_path(field, "participants", i, "id"), "is required");
    else
        text_ok(id, item_path(field, "participants", i, "id"), 1, PARTICIPANT_ID_MAX, false, errs);
    if (name != NULL && !json_is_null(name))
        text_ok(name, item_path(field, "participants", i, "name"), 0, PARTICIPANT_NAME_MAX, false,
                errs);
    if (email != NULL && !json_is_null(email) &&
        (!json_is_string(email) || !email_ok(json_string_value(email), json_string_length(email))))
        add_error(errs, item_path(field, "participants", i, "email"),
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
        add_error(errs, "participants", "must be an array of at most %d participants",
                  MEETING_PARTICIPANTS_MAX);
        return;
    }
    out = json_array();
    for (size_t i = 0; i < json_array_size(v); i++) {
        json_array_append_new(out, participant(json_array_get(v, i), i, errs));
        if (duplicate_id(v, i))
            add_error(errs, item_path(field, "participants", i, "id"), "duplicate id");
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
    item_path(field, "reminders", i, "channels");
    if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > CHANNEL_COUNT) {
        add_error(errs, field, "must be an array of 1 to %d channel names", CHANNEL_COUNT);
        return 0;
    }
    json_array_foreach(v, k, c)
    {
        unsigned bit = json_is_string(c) ? meeting_channel_parse(json_string_value(c)) : 0;
        if (bit == 0 || (bits & bit) != 0) {
            add_error(errs, field,
                      "must name distinct channels among webhook, stream, push, email");
            return 0;
        }
        bits |= bit;
    }
    return bits;
}

static void
reminder(const json_t *r, size_t i, struct meeting *m, struct codec_errors *errs)
{
    static const char *const known[] = {"minutes_before", "channels", NULL};
    const json_t *mb = json_object_get(r, "minutes_before");
    char field[CODEC_FIELD_NAME_MAX];
    json_int_t n;

    if (!json_is_object(r)) {
        add_error(errs, item_path(field, "reminders", i, NULL), "must be an object");
        return;
    }
    unknown_fields(r, known, item_path(field, "reminders", i, ""), errs);
    item_path(field, "reminders", i, "minutes_before");
    if (mb == NULL) {
        add_error(errs, field, "is required");
        return;
    }
    n = json_integer_value(mb);
    if (!json_is_integer(mb) || n < 0 || n > MEETING_MINUTES_BEFORE_MAX) {
        add_error(errs, field, "must be an integer from 0 to %d", MEETING_MINUTES_BEFORE_MAX);
        return;
    }
    for (size_t k = 0; k < m->n_reminders; k++) {
        if (m->reminders[k].minutes_before == n) {
            add_error(errs, field, "duplicate value");
            return;
        }
    }
    unsigned bits = channels(r, i, errs);
    if (bits == 0)
        return;
    m->reminders[m->n_reminders].channels = bits;
    m->reminders[m->n_reminders++].minutes_before = (int)n;
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
    if (!json_is_array(v) || json_array_size(v) > MEETING_REMINDERS_MAX) {
        add_error(errs, "reminders", "must be an array of at most %d reminders",
                  MEETING_REMINDERS_MAX);
        return;
    }
    for (size_t i = 0; i < json_array_size(v); i++)
        reminder(json_array_get(v, i), i, m, errs);
    /* Descending minutes_before puts the earliest fire time first; n <= 5, insertion sort. */
    for (size_t a = 1; a < m->n_reminders; a++) {
        struct reminder x = m->reminders[a];
        size_t b = a;

        for (; b > 0 && m->reminders[b - 1].minutes_before < x.minutes_before; b--)
            m->reminders[b] = m->reminders[b - 1];
        m->reminders[b] = x;
    }
}

static void
decode_metadata(const json_t *doc, struct meeting *m, struct codec_errors *errs)
{
    const json_t *v = json_object_get(doc, "metadata");
    char *text;

    if (v == NULL || json_is_null(v))
        return;
    if (!json_is_object(v)) {
        add_error(errs, "metadata", "must be an object or null");
        return;
    }
    text = json_dumps(v, JSON_COMPACT);
    if (text == NULL || strlen(text) > MEETING_METADATA_MAX) {
        add_error(errs, "metadata", "must be at most %d bytes as compact JSON",
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
        add_error(errs, "", "the body must be a JSON object");
        return API_E_VALIDATION;
    }
    unknown_fields(doc, known, "", errs);
    title = json_object_get(doc, "title");
    if (title == NULL)
        add_error(errs, "title", "is required");
    else if (text_ok(title, "title", 1, MEETING_TITLE_MAX, false, errs))
        m->title = strdup(json_string_value(title));
    opt_text(doc, "description", MEETING_DESCRIPTION_MAX, true, &m->description, errs);
    decode_times(doc, m, errs);
    decode_time_zone(doc, m, errs);
    opt_text(doc, "location", MEETING_LOCATION_MAX, false, &m->location, errs);
    decode_participants(doc, m, errs);
    decode_reminders(doc, m, errs);
    decode_metadata(doc, m, errs);
    if (org != NULL && !json_is_null(org) &&
        text_ok(org, "organizer_id", 1, PARTICIPANT_ID_MAX, false, errs))
        m->organizer_id = strdup(json_string_value(org));
    codec_recurrence_decode(json_object_get(doc, "recurrence"), m, errs); /* codec_series.c */
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

static json_t *
time_value(int64_t ms)
{
    char buf[TIMEFMT_BUF];

    return json_string(timefmt_format(ms, buf));
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

static json_t *
channel_list(unsigned bits)
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
        bad |= json_object_set_new(o, "channels", channel_list(r->channels));
    if (full) {
        bad |= json_object_set_new(o, "fire_at", time_value(r->fire_at_ms));
        bad |=
            json_object_set_new(o, "status", json_string(meeting_reminder_status_name(r->status)));
        bad |= json_object_set_new(o, "fired_at",
                                   r->fired_at_ms ? time_value(r->fired_at_ms) : json_null());
    }
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *
codec_reminder_encode(const struct reminder *r)
{
    return reminder_value(r, true);
}

json_t *
codec_time(int64_t ms)
{
    return time_value(ms);
}

void
codec_add_error(struct codec_errors *errs, const char *field, const char *message)
{
    add_error(errs, field, "%s", message);
}

void
codec_unknown_fields(const json_t *obj, const char *const *known, const char *prefix,
                     struct codec_errors *errs)
{
    unknown_fields(obj, known, prefix, errs);
}

/* Adds the writable fields, in contract order, to o. full selects the output form of reminders. */
static int
put_fields(json_t *o, const struct meeting *m, bool full)
{
    json_t *reminders = json_array();
    int bad = 0;

    bad |= json_object_set_new(o, "title", str_or_null(m->title));
    bad |= json_object_set_new(o, "description", str_or_null(m->description));
    bad |= json_object_set_new(o, "starts_at", time_value(m->starts_at_ms));
    bad |=
        json_object_set_new(o, "ends_at", m->has_ends_at ? time_value(m->ends_at_ms) : json_null());
    bad |= json_object_set_new(o, "time_zone", str_or_null(m->time_zone));
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
    bad |= json_object_set_new(o, "recurrence", codec_recurrence_encode(m->recurrence));
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
    bad |= json_object_set_new(o, "created_at", time_value(m->created_at_ms));
    bad |= json_object_set_new(o, "updated_at", time_value(m->updated_at_ms));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* RFC 7396, section 2, on copies: neither input is modified and the result shares nothing. */
json_t *
codec_merge_patch(const json_t *target, const json_t *patch)
{
    json_t *out;

    if (!json_is_object(patch))
        return json_deep_copy(patch);
    out = json_is_object(target) ? json_deep_copy(target) : json_object();
    if (out == NULL)
        return NULL;
    for (void *it = json_object_iter((json_t *)patch); it;
         it = json_object_iter_next((json_t *)patch, it)) {
        const char *key = json_object_iter_key(it);
        json_t *value = json_object_iter_value(it);

        if (json_is_null(value)) {
            json_object_del(out, key);
            continue;
        }
        if (json_object_set_new(out, key, codec_merge_patch(json_object_get(out, key), value))) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

char *
codec_dump(const json_t *v)
{
    return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}

/* ---- notification bodies ---------------------------------------------------------------- */

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
        return reminder_value(&r, true);
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
            json_pack("{s:o}", "original_start", time_value(m->original_start_ms))) != 0) {
        json_decref(doc);
        doc = NULL;
    }
    json_decref(meeting);
    json_decref(reminder);
    char *text = doc ? codec_dump(doc) : NULL;
    json_decref(doc);
    return text;
}

/* Whether JSON writes u as it is: printable ASCII but the quote and the backslash, as a URL is
 * (RFC 3986: anything else percent-encoded). Escaped, a control character takes six bytes, and a
 * URL of CODEC_PUSH_URL_MAX such bytes would not fit a push message. */
static bool
url_text(const char *u)
{
    for (const unsigned char *c = (const unsigned char *)u; *c != '\0'; c++)
        if (*c <= ' ' || *c > '~' || *c == '"' || *c == '\\')
            return false;
    return true;
}

/* The metadata's "url" when it is an http(s) URL short enough for a push message (malloc'ed). */
static char *
push_url(const struct meeting *m)
{
    json_t *meta = m->metadata_json ? json_loads(m->metadata_json, 0, NULL) : NULL;
    const char *u = json_string_value(json_object_get(meta, "url"));
    char *copy = NULL;

    if (u != NULL && strlen(u) <= CODEC_PUSH_URL_MAX && url_text(u) &&
        (strncmp(u, "https://", 8) == 0 || strncmp(u, "http://", 7) == 0))
        copy = strdup(u);
    json_decref(meta);
    return copy;
}

char *
codec_push_payload(const struct meeting *m, const struct occurrence *o)
{
    char id[OCCURRENCE_ID_MAX], start[TIMEFMT_BUF], title[4 * CODEC_PUSH_TITLE_MAX + 1];
    const char *t = m->title ? m->title : "";
    size_t cut = 0, chars = 0;
    int minutes = 0;

    /* Cut on a character boundary after CODEC_PUSH_TITLE_MAX characters. */
    while (t[cut] != '\0' &&
           !(chars == CODEC_PUSH_TITLE_MAX && ((unsigned char)t[cut] & 0xc0) != 0x80)) {
        chars += ((unsigned char)t[cut] & 0xc0) != 0x80;
        cut++;
    }
    snprintf(title, sizeof title, "%.*s", (int)cut, t);
    for (size_t i = 0; i < m->n_reminders; i++)
        if (m->reminders[i].id == o->reminder_id)
            minutes = m->reminders[i].minutes_before;
    meeting_occurrence_id(o->reminder_id, o->fire_at_ms, id);
    json_t *doc = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i}", "type", "meeting.reminder", "id", id,
                            "meeting_id", m->id, "title", title, "starts_at",
                            timefmt_format(m->starts_at_ms, start), "minutes_before", minutes);
    char *url = push_url(m);
    if (doc != NULL && url != NULL)
        json_object_set_new(doc, "url", json_string(url));
    free(url);
    char *text = doc ? codec_dump(doc) : NULL;
    json_decref(doc);
    return text;
}

int
codec_push_starts_at(const char *payload, int64_t *ms)
{
    json_t *doc = json_loads(payload, 0, NULL);
    const char *s = json_string_value(json_object_get(doc, "starts_at"));
    int rc = s != NULL && timefmt_parse(s, strlen(s), ms) == 0 ? 0 : -1;

    json_decref(doc);
    return rc;
}

/* ---- stored JSON: string lists --------------------------------------------------------- */

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int
codec_string_list_parse(const char *json, char ***out, size_t *n)
{
    json_t *a = json_loads(json, 0, NULL), *v;
    size_t i, len = json_array_size(a);
    char **list = calloc(len ? len : 1, sizeof *list);

    *out = NULL;
    *n = 0;
    if (!json_is_array(a) || list == NULL)
        goto fail;
    json_array_foreach(a, i, v)
    {
        if (!json_is_string(v) || (list[i] = strdup(json_string_value(v))) == NULL)
            goto fail;
    }
    qsort(list, len, sizeof *list, cmp_str);
    json_decref(a);
    *out = list;
    *n = len;
    return 0;
fail:
    codec_string_list_free(list, len);
    json_decref(a);
    return -1;
}

void
codec_string_list_free(char **v, size_t n)
{
    for (size_t i = 0; v != NULL && i < n; i++)
        free(v[i]);
    free(v);
}

char *
codec_string_array(const char *const *v, size_t n)
{
    json_t *a = json_array();
    char *text = NULL;
    bool bad = a == NULL;

    for (size_t i = 0; i < n && !bad; i++)
        bad = json_array_append_new(a, v[i] != NULL ? json_string(v[i]) : json_null()) != 0;
    if (!bad)
        text = codec_dump(a);
    json_decref(a);
    return text;
}

/* ---- webhooks --------------------------------------------------------------------------- */

enum api_error
codec_webhook_decode(const json_t *doc, char **url, char **description, struct codec_errors *errs)
{
    static const char *const known[] = {"url", "description", NULL};
    const json_t *u = json_object_get(doc, "url");

    *url = *description = NULL;
    if (!json_is_object(doc)) {
        add_error(errs, "", "must be a JSON object");
        return API_E_VALIDATION;
    }
    unknown_fields(doc, known, "", errs);
    if (u == NULL)
        add_error(errs, "url", "is required");
    else if (text_ok(u, "url", 1, CODEC_URL_MAX, false, errs))
        *url = strdup(json_string_value(u));
    opt_text(doc, "description", CODEC_WEBHOOK_DESCRIPTION_MAX, false, description, errs);
    return errs->n == 0 ? API_E_NONE : API_E_VALIDATION;
}

/* ---- push subscriptions ------------------------------------------------------------------ */

/* A required text member at path (for error messages) of 1..max characters: malloc'ed or NULL. */
static char *
req_text(const json_t *v, const char *path, size_t max, struct codec_errors *errs)
{
    if (v == NULL) {
        add_error(errs, path, "is required");
        return NULL;
    }
    return text_ok(v, path, 1, max, false, errs) ? strdup(json_string_value(v)) : NULL;
}

enum api_error
codec_push_subscription_decode(const json_t *doc, struct codec_push_subscription *out,
                               struct codec_errors *errs)
{
    const json_t *keys = json_object_get(doc, "keys"),
                 *exp = json_object_get(doc, "expirationTime");

    memset(out, 0, sizeof *out);
    if (!json_is_object(doc)) {
        add_error(errs, "", "must be a JSON object");
        return API_E_VALIDATION;
    }
    out->endpoint = req_text(json_object_get(doc, "endpoint"), "endpoint", CODEC_URL_MAX, errs);
    if (!json_is_object(keys)) {
        add_error(errs, "keys", "must be an object with p256dh and auth");
    } else {
        out->p256dh =
            req_text(json_object_get(keys, "p256dh"), "keys.p256dh", CODEC_PUSH_KEY_TEXT_MAX, errs);
        out->auth =
            req_text(json_object_get(keys, "auth"), "keys.auth", CODEC_PUSH_KEY_TEXT_MAX, errs);
    }
    if (exp != NULL && !json_is_null(exp)) {
        double ms = json_number_value(exp);
        if (!json_is_number(exp) || !(ms >= 1 && ms <= (double)TIMEFMT_MS_MAX))
            add_error(errs, "expirationTime", "must be null or a time in ms since the epoch");
        else
            out->expires_at_ms = (int64_t)ms;
    }
    return errs->n == 0 ? API_E_NONE : API_E_VALIDATION;
}

void
codec_push_subscription_fini(struct codec_push_subscription *s)
{
    free(s->endpoint);
    free(s->p256dh);
    free(s->auth);
    memset(s, 0, sizeof *s);
}

/* ---- browser tokens ---------------------------------------------------------------------- */

static void
decode_mtg(const json_t *doc, struct codec_token_request *out, struct codec_errors *errs)
{
    const json_t *list = json_object_get(doc, "mtg"), *id;
    size_t i;

    if (list == NULL || json_is_null(list))
        return;
    if (!json_is_array(list) || json_array_size(list) == 0 ||
        json_array_size(list) > CODEC_TOKEN_MTG_MAX) {
        add_error(errs, "mtg", "must be an array of 1 to %d meeting ids", CODEC_TOKEN_MTG_MAX);
        return;
    }
    json_array_foreach(list, i, id)
    {
        char field[CODEC_FIELD_NAME_MAX];
        if (!json_is_string(id) || !meeting_id_valid(json_string_value(id))) {
            add_error(errs, item_path(field, "mtg", i, NULL), "must be a meeting id");
            continue;
        }
        snprintf(out->mtg[out->n_mtg++], MEETING_ID_LEN + 1, "%s", json_string_value(id));
    }
}

enum api_error
codec_token_request_decode(const json_t *doc, struct codec_token_request *out,
                           struct codec_errors *errs)
{
    static const char *const known[] = {"sub", "scope", "ttl_s", "mtg", NULL};
    const json_t *sub = json_object_get(doc, "sub"), *scope = json_object_get(doc, "scope");
    const json_t *ttl = json_object_get(doc, "ttl_s");

    memset(out, 0, sizeof *out);
    out->ttl_s = CODEC_TOKEN_TTL_DEFAULT_S;
    errs->n = 0;
    if (!json_is_object(doc)) {
        add_error(errs, "", "the body must be a JSON object");
        return API_E_VALIDATION;
    }
    unknown_fields(doc, known, "", errs);
    if (sub == NULL)
        add_error(errs, "sub", "is required");
    else if (text_ok(sub, "sub", 1, PARTICIPANT_ID_MAX, false, errs))
        out->sub = strdup(json_string_value(sub));
    if (scope == NULL)
        add_error(errs, "scope", "is required");
    else if (text_ok(scope, "scope", 0, CODEC_SCOPE_MAX, false, errs))
        out->scope = strdup(json_string_value(scope));
    if (ttl != NULL && (!json_is_integer(ttl) || json_integer_value(ttl) < 1 ||
                        json_integer_value(ttl) > CODEC_TOKEN_TTL_MAX_S))
        add_error(errs, "ttl_s", "must be an integer from 1 to %d", CODEC_TOKEN_TTL_MAX_S);
    else if (ttl != NULL)
        out->ttl_s = json_integer_value(ttl);
    decode_mtg(doc, out, errs);
    return errs->n == 0 ? API_E_NONE : API_E_VALIDATION;
}

void
codec_token_request_fini(struct codec_token_request *r)
{
    free(r->sub);
    free(r->scope);
    r->sub = r->scope = NULL;
}
