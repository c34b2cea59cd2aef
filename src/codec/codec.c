/* codec.c -- the codec's toolkit (codec.h; codec_internal.h for the parts): a request body parsed
 * with its depth bounded, field errors, unknown members, the string check, times, merge patches
 * and compact text. The parts that know one kind of data (codec_meeting.c, codec_series.c,
 * codec_notification.c, ...) build on these. Error texts never quote more than CODEC_ECHO_MAX
 * bytes of client input (only unknown member names are quoted, in field paths). */
#include "codec_internal.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timefmt.h"
#include "tz.h"

/* "YYYY-MM-DDTHH:MM:SS.mmm+HH:MM" and its NUL, with room for any int a year may hold. */
#define CODEC_LOCAL_TIME_BUF 48

#define PARSE_TEXT_MAX 96 /* bytes of jansson's own message kept in a parse error */

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

void
codec_add_error(struct codec_errors *errs, const char *field, const char *fmt, ...)
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

const char *
codec_item_path(char buf[CODEC_FIELD_NAME_MAX], const char *list, size_t i, const char *member)
{
    snprintf(buf, CODEC_FIELD_NAME_MAX, "%s[%zu]%s%s", list, i, member ? "." : "",
             member ? member : "");
    return buf;
}

void
codec_unknown_fields(const json_t *obj, const char *const *known, const char *prefix,
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
        codec_add_error(errs, field, "unknown field");
    }
}

/* ---- strings ---------------------------------------------------------------------------- */

bool
codec_text_ok(const json_t *v, const char *field, size_t min_cp, size_t max_cp, bool multiline,
              struct codec_errors *errs)
{
    const char *s;
    size_t len, cp = 0;

    if (!json_is_string(v)) {
        codec_add_error(errs, field, "must be a string");
        return false;
    }
    s = json_string_value(v);
    len = json_string_length(v);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        bool allowed = multiline && (c == '\t' || c == '\n' || c == '\r');

        if ((c < 0x20 || c == 0x7f) && !allowed) {
            codec_add_error(errs, field, "must not contain control characters");
            return false;
        }
        cp += (c & 0xc0) != 0x80;
    }
    if (cp < min_cp || cp > max_cp) {
        codec_add_error(errs, field, "must be %zu to %zu characters long", min_cp, max_cp);
        return false;
    }
    return true;
}

void
codec_opt_text(const json_t *doc, const char *key, size_t max_cp, bool multiline, char **out,
               struct codec_errors *errs)
{
    const json_t *v = json_object_get(doc, key);

    if (v == NULL || json_is_null(v))
        return;
    if (codec_text_ok(v, key, 0, max_cp, multiline, errs))
        *out = strdup(json_string_value(v));
}

/* ---- output ---------------------------------------------------------------------------- */

json_t *
codec_time(int64_t ms)
{
    char buf[TIMEFMT_BUF];

    return json_string(timefmt_format(ms, buf));
}

json_t *
codec_local_time(const char *zone, int64_t ms)
{
    struct tz_local l;
    char buf[CODEC_LOCAL_TIME_BUF];

    if (zone == NULL || tz_local(zone, ms, &l) != 0)
        return json_null();
    /* RFC 3339 offsets are whole minutes; the few zones with seconds in theirs (local mean time
     * before 1900 or so) are shown at the minute below, as the same instant. */
    int off_min = l.offset_s / 60, sec_rest = l.offset_s - off_min * 60;
    if (sec_rest != 0 && tz_local(zone, ms - sec_rest * 1000LL, &l) != 0)
        return json_null();
    int a = off_min < 0 ? -off_min : off_min;
    int64_t milli = ((ms % 1000) + 1000) % 1000;
    snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03d%c%02d:%02d", l.year, l.month,
             l.day, l.hour, l.minute, l.second, (int)milli, off_min < 0 ? '-' : '+', a / 60,
             a % 60);
    return json_string(buf);
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
