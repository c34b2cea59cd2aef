/* codec_internal.h -- what the codec's parts (codec_*.c) share and nobody else sees: collecting
 * field errors, the checks of unknown members and of strings, and a reminder's output form. It
 * includes codec.h (the public part); codec.h never includes it. Implemented in codec.c, but for
 * codec_meeting_reminder_encode (codec_meeting.c). */
#ifndef TOCSIN_CODEC_INTERNAL_H
#define TOCSIN_CODEC_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "codec.h"

/* An "unknown field" error for each member of obj not in known (NULL-terminated), its field
 * prefix and the name cut to CODEC_ECHO_MAX bytes. */
void codec_unknown_fields(const json_t *obj, const char *const *known, const char *prefix,
                          struct codec_errors *errs);
/* "list[i]" or "list[i].member" into buf; returns buf. */
const char *codec_item_path(char buf[CODEC_FIELD_NAME_MAX], const char *list, size_t i,
                            const char *member);
/* Checks a string value: no NUL, no C0 control or DEL (multiline text may hold tab, CR and LF),
 * min_cp..max_cp code points. jansson has already checked that it is valid UTF-8. False, with
 * the error added under field, when it fails. */
bool codec_text_ok(const json_t *v, const char *field, size_t min_cp, size_t max_cp, bool multiline,
                   struct codec_errors *errs);
/* An optional text member key of doc, checked as codec_text_ok does (0..max_cp): absent or null
 * leaves *out NULL, a valid one is copied into *out (malloc'ed). */
void codec_opt_text(const json_t *doc, const char *key, size_t max_cp, bool multiline, char **out,
                    struct codec_errors *errs);

/* The list v of a "reminders" member (an array of at most MEETING_REMINDERS_MAX objects
 * {"minutes_before" 0..MEETING_MINUTES_BEFORE_MAX, distinct, "channels"?}) into rs, sorted by
 * minutes_before descending, *n of them; errors under "reminders[i]..." (codec_meeting.c). */
void codec_reminder_list_decode(const json_t *v, struct reminder rs[MEETING_REMINDERS_MAX],
                                size_t *n, struct codec_errors *errs);

/* A reminder's channel bits as the list of their names (section 8's order). New reference, NULL
 * when out of memory (codec_meeting.c). */
json_t *codec_channel_list(unsigned bits);

/* A reminder in the output form of a meeting's (id, minutes_before, channels, fire_at, status,
 * fired_at), for the occurrences of a series and the notification bodies. New reference, NULL
 * when out of memory (codec_meeting.c). */
json_t *codec_meeting_reminder_encode(const struct reminder *r);

#endif
