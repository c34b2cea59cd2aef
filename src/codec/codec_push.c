/* codec_push.c -- the JSON of Web Push: the subscription a browser posts (what
 * PushSubscription.toJSON() gives) and the payload of a notification, small because push services
 * take about 4 KiB. The keys' and endpoint's meaning is webpush.c's to check. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_internal.h"
#include "timefmt.h"

/* ---- payloads --------------------------------------------------------------------------- */

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

/* ---- push subscriptions ------------------------------------------------------------------ */

/* A required text member at path (for error messages) of 1..max characters: malloc'ed or NULL. */
static char *
req_text(const json_t *v, const char *path, size_t max, struct codec_errors *errs)
{
    if (v == NULL) {
        codec_add_error(errs, path, "is required");
        return NULL;
    }
    return codec_text_ok(v, path, 1, max, false, errs) ? strdup(json_string_value(v)) : NULL;
}

enum api_error
codec_push_subscription_decode(const json_t *doc, struct codec_push_subscription *out,
                               struct codec_errors *errs)
{
    const json_t *keys = json_object_get(doc, "keys"),
                 *exp = json_object_get(doc, "expirationTime");

    memset(out, 0, sizeof *out);
    if (!json_is_object(doc)) {
        codec_add_error(errs, "", "must be a JSON object");
        return API_E_VALIDATION;
    }
    out->endpoint = req_text(json_object_get(doc, "endpoint"), "endpoint", CODEC_URL_MAX, errs);
    if (!json_is_object(keys)) {
        codec_add_error(errs, "keys", "must be an object with p256dh and auth");
    } else {
        out->p256dh =
            req_text(json_object_get(keys, "p256dh"), "keys.p256dh", CODEC_PUSH_KEY_TEXT_MAX, errs);
        out->auth =
            req_text(json_object_get(keys, "auth"), "keys.auth", CODEC_PUSH_KEY_TEXT_MAX, errs);
    }
    if (exp != NULL && !json_is_null(exp)) {
        double ms = json_number_value(exp);
        if (!json_is_number(exp) || !(ms >= 1 && ms <= (double)TIMEFMT_MS_MAX))
            codec_add_error(errs, "expirationTime", "must be null or a time in ms since the epoch");
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
