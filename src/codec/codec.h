/* codec.h -- JSON <-> domain structs (jansson). Decoding validates: bounds, types, unknown fields,
 * each problem reported per field. Encoding writes the API's output representations. One header
 * for the whole codec, a section per file: the toolkit (codec.c), then one part per kind of data
 * (codec_<kind>.c). What the parts share with each other only is in codec_internal.h. */
#ifndef TOCSIN_CODEC_H
#define TOCSIN_CODEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "api_errors.h"
#include "meeting.h"
#include "prefs.h"
#include "series.h"

/* ---- the toolkit (codec.c) ---- */

#define CODEC_FIELD_ERRORS_MAX 16 /* further problems are dropped; the first ones say enough */
#define CODEC_FIELD_NAME_MAX 64
#define CODEC_MESSAGE_MAX 160
/* Bytes of client input an error may quote: only an unknown member's name is, in its field path
 * (cut on a UTF-8 boundary), by codec_unknown_fields for every part. */
#define CODEC_ECHO_MAX 40

struct codec_field_error {
    char field[CODEC_FIELD_NAME_MAX]; /* JSON path, e.g. "reminders[2].minutes_before" */
    char message[CODEC_MESSAGE_MAX];
};

struct codec_errors {
    size_t n;
    struct codec_field_error e[CODEC_FIELD_ERRORS_MAX];
};

/* Adds a field error (field: its JSON path; the message formatted from fmt). Further errors past
 * CODEC_FIELD_ERRORS_MAX are dropped. Handlers that check more than the codec does (a browser
 * token's writes) report through it too. */
void codec_add_error(struct codec_errors *errs, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Parses a request body (len bytes, not NUL-terminated; NUL bytes inside are an error) into a
 * JSON value. Returns a new reference the caller json_decref()s, or NULL with a short reason in
 * err (API_E_BAD_JSON). Depth is bounded by CODEC_DEPTH_MAX. */
#define CODEC_DEPTH_MAX 32
json_t *codec_parse(const char *body, size_t len, char *err, size_t errlen);

/* RFC 7396 JSON merge patch: returns a new reference to the patched copy of target. */
json_t *codec_merge_patch(const json_t *target, const json_t *patch);

/* Compact, deterministic serialization (malloc'ed; free()). */
char *codec_dump(const json_t *v);

/* A time in the output form: RFC 3339 text in UTC with milliseconds. New reference. */
json_t *codec_time(int64_t ms);
/* The same instant as wall-clock time in zone with its UTC offset, RFC 3339 with milliseconds
 * ("2026-12-07T09:00:00.000+01:00"), so a client sees "09:00 in Paris" without a zone library;
 * JSON null when zone is NULL or unknown. New reference. */
json_t *codec_local_time(const char *zone, int64_t ms);

/* A webhook URL or a push endpoint, in characters here; webhook.c and webpush.c bound the bytes
 * again (WEBHOOK_URL_MAX, WEBPUSH_ENDPOINT_MAX). */
#define CODEC_URL_MAX 2048

/* ---- meetings (codec_meeting.c) ---- */

/* Validates a meeting input document (the fields a client may write: MeetingInput in
 * api/openapi.yaml) into m (which must be fresh from meeting_init). Reminders get minutes_before
 * set and fire times derived; ids and statuses are left for the database. Returns API_E_NONE, or
 * API_E_VALIDATION with errs filled. m must be meeting_fini'ed in both cases. */
enum api_error codec_meeting_decode(const json_t *doc, struct meeting *m,
                                    struct codec_errors *errs);

/* The meeting's input document (only the writable fields, absent optionals as null): the target
 * that a JSON merge patch applies to. New reference. */
json_t *codec_meeting_input_doc(const struct meeting *m);

/* The meeting's output representation (input fields + id, version, created_at, updated_at and
 * reminders with id, fire_at, status, fired_at). New reference. */
json_t *codec_meeting_encode(const struct meeting *m);

/* ---- recurring meetings (codec_series.c) ---- */

/* The "recurrence" member of a meeting input (v: NULL or null for a single meeting): {"rrule",
 * "exdates"?, "rdates"?}, the rule in recur.h's subset, the dates RFC 3339 with an offset, at
 * most MEETING_RECURRENCE_DATES_MAX each, distinct; rdates after starts_at. time_zone is then
 * required, and starts_at must be the rule's first occurrence (series_check_start). Sets
 * m->recurrence, or adds errors (fields "recurrence.rrule", "recurrence.exdates[2]", ...). Runs
 * after the other members were decoded into m. */
void codec_series_recurrence_decode(const json_t *v, struct meeting *m, struct codec_errors *errs);
/* {"rrule", "exdates", "rdates"} (times in the output form), or null for NULL. New reference. */
json_t *codec_series_recurrence_encode(const struct meeting_recurrence *rec);

/* An occurrence of a series: {"original_start", "starts_at", "ends_at", "title", "cancelled",
 * "reminders"}. rows[0..n_rows) are its reminder rows (any order); each reminder of m without a
 * row is shown as it will be (fire_at from the occurrence's start) with id, status and fired_at
 * null. New reference, NULL when out of memory. */
json_t *codec_series_occurrence_encode(const struct meeting *m, const struct series_occurrence *o,
                                       const struct reminder *rows, size_t n_rows);
/* The writable fields of an occurrence, as a merge patch's target: {"starts_at", "ends_at",
 * "title", "cancelled"}, null where it follows the series. New reference. */
json_t *codec_series_override_doc(const struct series_override *ov);
/* Validates a patched override document (codec_series_override_doc's shape) into out (fresh, its
 * title malloc'ed; series_override_fini it in both cases). original_ms is the occurrence's, ends_at
 * must come after its start. API_E_NONE or API_E_VALIDATION with errs filled. */
enum api_error codec_series_override_decode(const json_t *doc, int64_t original_ms,
                                            struct series_override *out, struct codec_errors *errs);

/* ---- notifications (codec_notification.c) ---- */

/* The body of a fired reminder for webhooks, the stream and the inbox (push and email have their
 * own), malloc'ed text or NULL when out of memory: {"type":"meeting.reminder","id":<occurrence id
 * = the webhook-id>,"timestamp":ts,"data":{"reminder":{...},"meeting":{...}}}, and in "data" an
 * "occurrence":{"original_start"} when m is an occurrence of a series. The reminder is the
 * meeting's own, with the occurrence's fire time (and fired state when o->fired_at_ms is set);
 * null if the meeting no longer has it. */
char *codec_notification_encode(const struct meeting *m, const struct occurrence *o, int64_t ts_ms);
/* The part of a stream event's audience (a JSON array of participant ids) that m lists now, as
 * organizer or participant, in the same order: the readers a body built from m may go to, so
 * that one removed since the fire reads nothing written after (migrations/017 and the stream's
 * README). Malloc'ed JSON text ("[]" when none is left), or NULL when out of memory or either
 * text is not of its shape. */
char *codec_notification_audience(const struct meeting *m, const char *audience_json);

/* ---- inbox marks (codec_inbox.c) ---- */

/* Sets "read_at" and "archived_at" of an inbox item (null when < 0). Steals item; returns it, or
 * NULL (item freed) when out of memory or item is NULL. */
json_t *codec_inbox_marks(json_t *item, int64_t read_at_ms, int64_t archived_at_ms);
/* A change of a participant's inbox, as the stream's `inbox` event tells it: one item's marks
 * ({"seq","read_at","archived_at","unread_count"}), or every item up to seq marked read
 * ({"up_to","read_at","unread_count"}). */
struct codec_inbox_event {
    int64_t seq;
    bool up_to;
    int64_t read_at_ms, archived_at_ms; /* < 0: unset */
    int64_t unread_count;
};
/* Its JSON text, malloc'ed, or NULL when out of memory. */
char *codec_inbox_event_encode(const struct codec_inbox_event *ev);
/* PATCH /v1/me/notifications/{seq}: {"read": bool, "archived": bool}, at least one; each out is
 * -1 (absent), 0 or 1. API_E_NONE or API_E_VALIDATION with errs. */
enum api_error codec_inbox_patch_decode(const json_t *doc, int *read, int *archived,
                                        struct codec_errors *errs);
/* POST /v1/me/notifications/read: {"up_to": seq >= 1}. */
enum api_error codec_inbox_read_decode(const json_t *doc, int64_t *up_to,
                                       struct codec_errors *errs);

/* How long a snooze lasts (DESIGN section 13): minutes. */
#define SNOOZE_MINUTES_MIN 1
#define SNOOZE_MINUTES_MAX 120

/* POST /v1/me/notifications/{seq}/snooze: {"minutes": SNOOZE_MINUTES_MIN..MAX}. Anything but an
 * object with an integer `minutes` is API_E_VALIDATION; an integer out of that range
 * API_E_SNOOZE_OUT_OF_RANGE. */
enum api_error codec_snooze_decode(const json_t *doc, int *minutes, struct codec_errors *errs);

/* ---- preferences (codec_prefs.c) ---- */

/* The body of a preferences PUT into *p: {"channels": {"email", "push"}, "quiet_hours": null |
 * {"time_zone", "start": "HH:MM", "end": "HH:MM"}, "reminders": null | [...]}, members left out
 * at their defaults; an own reminder's channels are stream, push or email (none named: stream and
 * push). API_E_NONE, or API_E_VALIDATION with errs. */
enum api_error codec_prefs_decode(const json_t *doc, struct prefs *p, struct codec_errors *errs);
/* The document a preferences GET or PUT answers with; NULL when out of memory. */
json_t *codec_prefs_encode(const struct prefs *p);

/* ---- Web Push (codec_push.c): subscriptions in, payloads out ---- */

/* POST /v1/push/subscriptions: what PushSubscription.toJSON() gives, {"endpoint",
 * "expirationTime"?: null or ms since the epoch, "keys": {"p256dh", "auth"}}; other members are
 * ignored (browsers add some). Only the JSON shape is checked here: the caller checks the URL and
 * the keys (webpush.h). Strings malloc'ed; codec_push_subscription_fini frees them. errs must be
 * empty on entry (this decoder does not reset it). */
#define CODEC_PUSH_KEY_TEXT_MAX 128
struct codec_push_subscription {
    char *endpoint, *p256dh, *auth;
    int64_t expires_at_ms; /* 0 = none */
};
enum api_error codec_push_subscription_decode(const json_t *doc,
                                              struct codec_push_subscription *out,
                                              struct codec_errors *errs);
void codec_push_subscription_fini(struct codec_push_subscription *s);

/* The Web Push payload of an occurrence: small, as push services take about 4 KiB: {"type",
 * "id" (the occurrence id), "meeting_id", "title" (cut to CODEC_PUSH_TITLE_MAX characters),
 * "starts_at", "minutes_before"}, and "url" when the meeting's metadata has a "url" string of
 * http(s) of at most CODEC_PUSH_URL_MAX bytes, printable ASCII with no quote or backslash (what
 * a click on the notification opens; JSON writes it unescaped, so it always fits).
 * Malloc'ed text, NULL when out of memory. */
#define CODEC_PUSH_TITLE_MAX 100
#define CODEC_PUSH_URL_MAX 1024
char *codec_push_payload(const struct meeting *m, const struct occurrence *o);
/* The "starts_at" of a payload codec_push_payload made, in ms into *ms: 0, or -1. */
int codec_push_starts_at(const char *payload, int64_t *ms);

/* ---- webhooks (codec_webhook.c) ---- */

#define CODEC_WEBHOOK_DESCRIPTION_MAX 500 /* characters */

/* Validates a webhook input document {"url", "description"?}: shape, unknown fields, lengths,
 * control characters. The URL's meaning (scheme, host, addresses) is webhook.c's to check. On
 * API_E_NONE *url (and *description unless absent or null) are malloc'ed copies; free() them in
 * both cases. errs must be empty on entry (this decoder does not reset it). */
enum api_error codec_webhook_decode(const json_t *doc, char **url, char **description,
                                    struct codec_errors *errs);

/* PATCH /v1/webhooks/{id}: a merge patch of {"url", "description", "disabled"}, each optional;
 * url a string (not null), description a string or null (which clears it), disabled a boolean.
 * On API_E_NONE *url and *description are malloc'ed copies (NULL when absent or null; free()
 * them in both cases), *set_description says whether description was given, *disabled is -1
 * (absent), 0 or 1. errs empty on entry. */
enum api_error codec_webhook_patch_decode(const json_t *doc, char **url, char **description,
                                          bool *set_description, int *disabled,
                                          struct codec_errors *errs);

/* POST /v1/webhooks/{id}/recover: {"since": RFC 3339 time}, not after now_ms (a since in the
 * future recovers nothing a client could mean). API_E_NONE with *since_ms set, or
 * API_E_VALIDATION with errs filled (errs empty on entry). */
enum api_error codec_webhook_recover_decode(const json_t *doc, int64_t now_ms, int64_t *since_ms,
                                            struct codec_errors *errs);

/* ---- browser tokens (codec_token.c) ---- */

/* POST /v1/browser-tokens: {"sub", "scope", "ttl_s"?, "mtg"?}. */
#define CODEC_TOKEN_TTL_DEFAULT_S 900
#define CODEC_TOKEN_TTL_MAX_S 86400
#define CODEC_TOKEN_MTG_MAX 100
struct codec_token_request {
    char *sub;   /* malloc'ed: 1..PARTICIPANT_ID_MAX characters, no control characters */
    char *scope; /* malloc'ed: the scope text, for the caller to parse */
    int64_t ttl_s;
    size_t n_mtg;
    char mtg[CODEC_TOKEN_MTG_MAX][MEETING_ID_LEN + 1];
};
/* Decodes and validates; API_E_NONE or API_E_VALIDATION with errs filled. Free the strings with
 * codec_token_request_fini in both cases. */
enum api_error codec_token_request_decode(const json_t *doc, struct codec_token_request *out,
                                          struct codec_errors *errs);
void codec_token_request_fini(struct codec_token_request *r);

/* ---- people (codec_people.c): a meeting's participants parsed once, for many lookups ---- */
struct codec_people;
/* m's participants (and organizer) for lookup; NULL when out of memory or participants_json is
 * not JSON. Borrows m's organizer_id: m must outlive it. */
struct codec_people *codec_people_parse(const struct meeting *m);
void codec_people_free(struct codec_people *ps);
/* True when person_id is one of the participants; *name (when name is not NULL) is then its
 * name, borrowed from ps, or NULL when it has none. */
bool codec_people_participant(const struct codec_people *ps, const char *person_id,
                              const char **name);
/* True when person_id is the organizer or one of the participants. */
bool codec_people_has(const struct codec_people *ps, const char *person_id);
/* The same for one question about m (parses m's participants each call). */
bool codec_people_in_meeting(const struct meeting *m, const char *person_id);

/* ---- stored JSON: string lists (codec_string.c) ---- */

/* Parses a JSON array of strings into *out: n malloc'ed strings in a malloc'ed array, sorted by
 * strcmp (free with codec_string_list_free). 0, or -1 for anything else or out of memory. */
int codec_string_list_parse(const char *json, char ***out, size_t *n);
void codec_string_list_free(char **v, size_t n);
/* A JSON array of the n strings v[0..n), null for a NULL one (malloc'ed text; NULL when out of
 * memory). */
char *codec_string_array(const char *const *v, size_t n);

#endif
