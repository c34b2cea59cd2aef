/* meeting.c -- the domain: lifetime of struct meeting, fire-time rules, pending keys, ids,
 * reminder status names and channel names. Pure except meeting_new_id, which takes random bytes
 * from crypto.c. */
#include "meeting.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "hex.h"

#define MS_PER_MINUTE 60000LL

static const char *const status_names[] = {
    [REMINDER_PENDING] = "pending",
    [REMINDER_FIRED] = "fired",
    [REMINDER_MISSED] = "missed",
    [REMINDER_CANCELLED] = "cancelled",
};
#define STATUS_COUNT (sizeof(status_names) / sizeof(status_names[0]))

void
meeting_init(struct meeting *m)
{
    memset(m, 0, sizeof(*m));
}

void
meeting_fini(struct meeting *m)
{
    if (m == NULL)
        return;
    free(m->title);
    free(m->description);
    free(m->time_zone);
    free(m->location);
    free(m->participants_json);
    free(m->metadata_json);
    free(m->organizer_id);
    if (m->recurrence != NULL)
        free(m->recurrence->rrule);
    free(m->recurrence);
    meeting_init(m);
}

static size_t
len_or_0(const char *s)
{
    return s != NULL ? strlen(s) : 0;
}

size_t
meeting_text_bytes(const struct meeting *m)
{
    return len_or_0(m->title) + len_or_0(m->description) + len_or_0(m->location) +
           len_or_0(m->participants_json) + len_or_0(m->metadata_json);
}

void
meeting_derive_fire_times(struct meeting *m)
{
    for (size_t i = 0; i < m->n_reminders; i++)
        m->reminders[i].fire_at_ms =
            m->starts_at_ms - m->reminders[i].minutes_before * MS_PER_MINUTE;
}

/* Appends until out is full: REMINDER_KEYS_MAX is twice what one meeting holds, so callers that
 * collect one stale and one fresh meeting never lose a key. */
void
meeting_pending_keys(const struct meeting *m, struct reminder_keys *out)
{
    if (m == NULL)
        return;
    for (size_t i = 0; i < m->n_reminders && out->n < REMINDER_KEYS_MAX; i++) {
        if (m->reminders[i].status != REMINDER_PENDING || m->reminders[i].id == 0)
            continue;
        out->k[out->n].reminder_id = m->reminders[i].id;
        out->k[out->n].fire_at_ms = m->reminders[i].fire_at_ms;
        out->n++;
    }
}

void
meeting_id_format(const uint8_t b[MEETING_ID_BYTES], char out[MEETING_ID_LEN + 1])
{
    static const size_t groups[] = {4, 2, 2, 2, 6}; /* bytes between the dashes */
    size_t o = 0, i = 0;

    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
        if (g > 0)
            out[o++] = '-';
        o += hex_encode(b + i, groups[g], out + o);
        i += groups[g];
    }
}

int
meeting_new_id(char out[MEETING_ID_LEN + 1])
{
    uint8_t b[MEETING_ID_BYTES];

    if (crypto_random_bytes(b, sizeof(b)) != 0)
        return -1;
    b[6] = (uint8_t)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (uint8_t)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    meeting_id_format(b, out);
    return 0;
}

/* Any canonical lower-case UUID text is accepted, not only version 4: ids are opaque to clients
 * and a stricter check would only turn a future id scheme into 404s. */
bool
meeting_id_valid(const char *s)
{
    if (s == NULL)
        return false;
    for (size_t i = 0; i < MEETING_ID_LEN; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;

        if (dash ? s[i] != '-' : !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    }
    return s[MEETING_ID_LEN] == '\0';
}

const char *
meeting_reminder_status_name(enum reminder_status s)
{
    if ((size_t)s >= STATUS_COUNT)
        return "unknown";
    return status_names[s];
}

int
meeting_reminder_status_parse(const char *s, enum reminder_status *out)
{
    for (size_t i = 0; i < STATUS_COUNT; i++) {
        if (strcmp(s, status_names[i]) == 0) {
            *out = (enum reminder_status)i;
            return 0;
        }
    }
    return -1;
}

static const char *const channel_names[CHANNEL_COUNT] = {"webhook", "stream", "push", "email"};

unsigned
meeting_channel_at(unsigned i)
{
    return i < CHANNEL_COUNT ? 1u << i : 0;
}

const char *
meeting_channel_name(unsigned channel)
{
    for (unsigned i = 0; i < CHANNEL_COUNT; i++)
        if (channel == meeting_channel_at(i))
            return channel_names[i];
    return NULL;
}

unsigned
meeting_channel_parse(const char *name)
{
    for (unsigned i = 0; i < CHANNEL_COUNT; i++)
        if (strcmp(name, channel_names[i]) == 0)
            return meeting_channel_at(i);
    return 0;
}

_Static_assert(sizeof "rem_-9223372036854775808_-9223372036854775808" <= OCCURRENCE_ID_MAX,
               "an occurrence id of any two int64 fits");

void
meeting_occurrence_id(int64_t reminder_id, int64_t fire_at_ms, char out[OCCURRENCE_ID_MAX])
{
    snprintf(out, OCCURRENCE_ID_MAX, "rem_%" PRId64 "_%" PRId64, reminder_id, fire_at_ms);
}
