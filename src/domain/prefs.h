/* prefs.h -- a participant's preferences (DESIGN section 13, migrations/028): which of the
 * channels to people reach them, quiet hours in their own time zone during which push and email
 * wait, or are skipped when the wait would reach past the meeting's start, and their own reminder
 * offsets, which replace the meeting's for them (db_own.c plans them). Header only:
 * the codec (codec_prefs.c) reads and writes them, the database (db_prefs.c) keeps them, the fire
 * statement (db_fire.c) applies them. */
#ifndef TOCSIN_PREFS_H
#define TOCSIN_PREFS_H

#include <stdbool.h>

#include "meeting.h"

#define PREFS_MINUTES_PER_DAY 1440 /* a quiet-hours time is minutes after local midnight */
/* A participant's own reminders are at most as many as a meeting's. */
#define PREFS_OWN_REMINDERS_MAX MEETING_REMINDERS_MAX
/* The channels an own reminder takes when it names none: those that reach a person and need no
 * address (a webhook is the tenant's, never one participant's: an own reminder cannot name it). */
#define PREFS_OWN_CHANNELS_DEFAULT (CHANNEL_STREAM | CHANNEL_PUSH)

struct prefs {
    bool email, push; /* the channel reaches them (a participant with no preferences: both) */
    bool has_quiet;   /* quiet hours set: the three below hold them */
    char quiet_zone[MEETING_TIME_ZONE_MAX + 1];
    int quiet_start, quiet_end; /* 0..PREFS_MINUTES_PER_DAY-1, different; start > end: overnight */
    /* Own reminders set ("reminders" not null): they replace the meeting's for this participant.
     * own[] by minutes_before descending, distinct; n_own may be 0 (none at all). */
    bool has_own;
    size_t n_own;
    struct reminder own[PREFS_OWN_REMINDERS_MAX];
};

/* What a participant who never set anything has. */
static inline struct prefs
prefs_default(void)
{
    return (struct prefs){.email = true, .push = true};
}

#endif
