/* codec_prefs.c -- a participant's preferences as JSON (DESIGN section 13): the body of PUT
 * /v1/me/preferences and /v1/participants/{id}/preferences, and the document both GETs answer.
 * A PUT replaces the whole: a member left out takes its default (a channel on, no quiet hours,
 * no own reminders: the meeting's apply).
 * Every problem is a field error and nothing is kept from a body that has one. */
#include <stdio.h>
#include <string.h>

#include "codec.h"
#include "codec_internal.h"
#include "tz.h"

#define HHMM_LEN 5 /* "HH:MM" */
#define MINUTES_PER_HOUR 60
#define HOURS_PER_DAY 24

/* "HH:MM" (00:00 to 23:59, two digits each) into minutes after midnight; -1 when it is not. */
static int
hhmm(const json_t *v)
{
    const char *s = json_string_value(v);

    if (s == NULL || json_string_length(v) != HHMM_LEN || s[2] != ':')
        return -1;
    for (int i = 0; i < HHMM_LEN; i++)
        if (i != 2 && (s[i] < '0' || s[i] > '9'))
            return -1;
    int h = (s[0] - '0') * 10 + (s[1] - '0'), m = (s[3] - '0') * 10 + (s[4] - '0');
    return h < HOURS_PER_DAY && m < MINUTES_PER_HOUR ? h * MINUTES_PER_HOUR + m : -1;
}

/* channels.email or channels.push: absent is on. */
static bool
channel_flag(const json_t *ch, const char *name, struct codec_errors *errs)
{
    const json_t *v = json_object_get(ch, name);
    char field[CODEC_FIELD_NAME_MAX];

    if (v == NULL)
        return true;
    if (!json_is_boolean(v)) {
        snprintf(field, sizeof field, "channels.%s", name);
        codec_add_error(errs, field, "must be true or false");
    }
    return !json_is_false(v);
}

static void
decode_channels(const json_t *doc, struct prefs *p, struct codec_errors *errs)
{
    static const char *const known[] = {"email", "push", NULL};
    const json_t *ch = json_object_get(doc, "channels");

    if (ch == NULL)
        return;
    if (!json_is_object(ch)) {
        codec_add_error(errs, "channels", "must be an object {\"email\": bool, \"push\": bool}");
        return;
    }
    codec_unknown_fields(ch, known, "channels.", errs);
    p->email = channel_flag(ch, "email", errs);
    p->push = channel_flag(ch, "push", errs);
}

static int
quiet_time(const json_t *q, const char *name, struct codec_errors *errs)
{
    const json_t *v = json_object_get(q, name);
    char field[CODEC_FIELD_NAME_MAX];
    int m = v != NULL ? hhmm(v) : -1;

    if (m < 0) {
        snprintf(field, sizeof field, "quiet_hours.%s", name);
        codec_add_error(errs, field,
                        v == NULL ? "is required" : "must be a time HH:MM, 00:00 to 23:59");
    }
    return m;
}

static void
decode_quiet(const json_t *doc, struct prefs *p, struct codec_errors *errs)
{
    static const char *const known[] = {"time_zone", "start", "end", NULL};
    const json_t *q = json_object_get(doc, "quiet_hours"), *zone;
    size_t before = errs->n;

    if (q == NULL || json_is_null(q))
        return;
    if (!json_is_object(q)) {
        codec_add_error(errs, "quiet_hours",
                        "must be null or an object {\"time_zone\", \"start\", \"end\"}");
        return;
    }
    codec_unknown_fields(q, known, "quiet_hours.", errs);
    zone = json_object_get(q, "time_zone");
    if (zone == NULL)
        codec_add_error(errs, "quiet_hours.time_zone", "is required");
    else if (!json_is_string(zone) || json_string_length(zone) > MEETING_TIME_ZONE_MAX ||
             strlen(json_string_value(zone)) != json_string_length(zone) ||
             !tz_known(json_string_value(zone)))
        codec_add_error(errs, "quiet_hours.time_zone",
                        "must be a known IANA time zone name, e.g. Europe/Berlin");
    int start = quiet_time(q, "start", errs), end = quiet_time(q, "end", errs);
    if (start >= 0 && start == end)
        codec_add_error(errs, "quiet_hours.end", "must differ from start");
    if (errs->n != before)
        return;
    p->has_quiet = true;
    snprintf(p->quiet_zone, sizeof p->quiet_zone, "%s", json_string_value(zone));
    p->quiet_start = start;
    p->quiet_end = end;
}

/* The channels an own reminder named (each item of v, found by its minutes_before, which the
 * list decoder made distinct): none is PREFS_OWN_CHANNELS_DEFAULT, and a webhook is refused. */
static void
own_channels(const json_t *v, struct prefs *p, struct codec_errors *errs)
{
    char field[CODEC_FIELD_NAME_MAX];

    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *item = json_array_get(v, i), *ch = json_object_get(item, "channels");
        json_int_t mb = json_integer_value(json_object_get(item, "minutes_before"));
        for (size_t k = 0; k < p->n_own; k++) {
            struct reminder *r = &p->own[k];
            if (r->minutes_before != mb)
                continue;
            if (ch == NULL || json_is_null(ch))
                r->channels = PREFS_OWN_CHANNELS_DEFAULT;
            else if ((r->channels & CHANNEL_WEBHOOK) != 0)
                codec_add_error(errs, codec_item_path(field, "reminders", i, "channels"),
                                "an own reminder reaches its participant: stream, push or email "
                                "(webhooks are the tenant's)");
        }
    }
}

static void
decode_own(const json_t *doc, struct prefs *p, struct codec_errors *errs)
{
    const json_t *v = json_object_get(doc, "reminders");
    size_t before = errs->n;

    if (v == NULL || json_is_null(v))
        return;
    codec_reminder_list_decode(v, p->own, &p->n_own, errs);
    if (errs->n == before)
        own_channels(v, p, errs);
    p->has_own = errs->n == before;
    if (!p->has_own)
        p->n_own = 0;
}

enum api_error
codec_prefs_decode(const json_t *doc, struct prefs *p, struct codec_errors *errs)
{
    static const char *const known[] = {"channels", "quiet_hours", "reminders", NULL};

    errs->n = 0;
    *p = prefs_default();
    if (!json_is_object(doc)) {
        codec_add_error(errs, "", "the body must be a JSON object");
        return API_E_VALIDATION;
    }
    codec_unknown_fields(doc, known, "", errs);
    decode_channels(doc, p, errs);
    decode_quiet(doc, p, errs);
    decode_own(doc, p, errs);
    return errs->n != 0 ? API_E_VALIDATION : API_E_NONE;
}

static json_t *
hhmm_text(int minutes)
{
    unsigned m = (unsigned)minutes % PREFS_MINUTES_PER_DAY;
    char buf[HHMM_LEN + 4]; /* room for what the compiler thinks two %02u may take */

    snprintf(buf, sizeof buf, "%02u:%02u", m / MINUTES_PER_HOUR, m % MINUTES_PER_HOUR);
    return json_string(buf);
}

/* The own reminders as the body names them: [{"minutes_before", "channels"}], or null. */
static json_t *
own_encode(const struct prefs *p)
{
    json_t *a = p->has_own ? json_array() : json_null();

    for (size_t i = 0; p->has_own && a != NULL && i < p->n_own; i++)
        if (json_array_append_new(a, json_pack("{s:i, s:o*}", "minutes_before",
                                               p->own[i].minutes_before, "channels",
                                               codec_channel_list(p->own[i].channels))) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

json_t *
codec_prefs_encode(const struct prefs *p)
{
    json_t *quiet = p->has_quiet
                        ? json_pack("{s:s, s:o, s:o}", "time_zone", p->quiet_zone, "start",
                                    hhmm_text(p->quiet_start), "end", hhmm_text(p->quiet_end))
                        : json_null();

    return json_pack("{s:{s:b, s:b}, s:o, s:o}", "channels", "email", p->email, "push", p->push,
                     "quiet_hours", quiet, "reminders", own_encode(p));
}
