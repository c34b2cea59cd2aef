/* meeting.h -- the domain: a meeting, its reminders, their limits and fire-time rules.
 * Pure (but meeting_new_id's random bytes): no I/O and no library types. codec_meeting.c fills
 * these structs from JSON, db*.c from rows. */
#ifndef TOCSIN_MEETING_H
#define TOCSIN_MEETING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MEETING_TITLE_MAX 200        /* characters (Unicode code points), at least 1 */
#define MEETING_DESCRIPTION_MAX 5000 /* characters */
#define MEETING_LOCATION_MAX 500     /* characters */
#define MEETING_TIME_ZONE_MAX 64     /* bytes of an IANA name */
#define MEETING_PARTICIPANTS_MAX 500
#define PARTICIPANT_ID_MAX 200    /* characters, at least 1 */
#define PARTICIPANT_NAME_MAX 200  /* characters */
#define PARTICIPANT_EMAIL_MAX 254 /* bytes */
#define MEETING_REMINDERS_MAX 5
#define MEETING_MINUTES_BEFORE_MAX 40320 /* four weeks */
#define MEETING_METADATA_MAX 16384       /* bytes of compact JSON */
#define MEETING_DEFAULT_MINUTES_BEFORE 5
#define MEETING_ID_LEN 36 /* canonical UUID text */
#define MEETING_ID_BYTES 16

enum reminder_status { REMINDER_PENDING, REMINDER_FIRED, REMINDER_MISSED, REMINDER_CANCELLED };

/* The ways a fired reminder goes out (docs/design.md section 8), as bits of reminder.channels; the
 * database stores the same bits (migrations/007). */
enum channel {
    CHANNEL_WEBHOOK = 1, /* the tenant's receivers */
    CHANNEL_STREAM = 2,  /* participants' open pages and inbox */
    CHANNEL_PUSH = 4,    /* participants' Web Push subscriptions */
    CHANNEL_EMAIL = 8,   /* participants with an email address */
};
#define CHANNELS_ALL 15
#define CHANNELS_DEFAULT (CHANNEL_WEBHOOK | CHANNEL_STREAM | CHANNEL_PUSH) /* all but email */
#define CHANNEL_COUNT 4

struct reminder {
    int64_t id; /* database id; 0 before insert */
    int minutes_before;
    unsigned channels; /* enum channel bits, never 0 */
    int64_t fire_at_ms;
    enum reminder_status status;
    int64_t fired_at_ms; /* 0 while never fired */
};

/* A series' rule (docs/design.md section 9): RRULE text (recur.h's subset), and instants the rule
 * leaves out (exdates) or adds (rdates), each sorted and distinct. Heap-owned by its meeting. */
#define MEETING_RECURRENCE_DATES_MAX 100 /* exdates, and rdates */
struct meeting_recurrence {
    char *rrule;
    /* A COUNT rule's UNTIL equivalent (series_count_until), as stored with the series: with it an
     * expansion moves to its range instead of walking the rule from its start. Never from a
     * client: false in a series decoded from a request (and in one stored before migration 018,
     * or changed by a replica that predates it, until the reconciler fills it in). */
    bool has_count_until;
    int64_t count_until_ms;
    size_t n_exdates, n_rdates;
    int64_t exdates[MEETING_RECURRENCE_DATES_MAX];
    int64_t rdates[MEETING_RECURRENCE_DATES_MAX];
};

/* A meeting. Strings are heap-owned by the struct (NULL = absent) and freed by meeting_fini. */
struct meeting {
    char id[MEETING_ID_LEN + 1]; /* "" before insert */
    int64_t version;             /* 1 after insert, +1 per update */
    int64_t created_at_ms;
    int64_t updated_at_ms;
    char *title;
    char *description;
    char *time_zone;
    char *location;
    int64_t starts_at_ms;
    int64_t ends_at_ms;
    bool has_ends_at;
    char *participants_json; /* compact JSON array text; "[]" when none */
    char *metadata_json;     /* compact JSON object text; NULL when absent */
    char *organizer_id;      /* the participant id that organizes it; NULL when none. Set at
                                creation (a browser token's sub), never changed afterwards */
    size_t n_reminders;
    struct reminder reminders[MEETING_REMINDERS_MAX]; /* sorted by minutes_before descending */
    /* A series: its rule (NULL for a single meeting). Its reminders are then the definitions,
     * each showing its next firing (series.h). */
    struct meeting_recurrence *recurrence;
    /* One occurrence of a series as a notification shows it (db_meeting_get_many_for): starts_at,
     * ends_at and title are the occurrence's, reminders are its own. */
    bool is_occurrence;
    int64_t original_start_ms;
};

/* One firing of a reminder: the reminder and the fire time it had then. Its id names the
 * notification on every channel (the webhook-id, the "id" of the JSON a stream event or a push
 * carries, the email's Message-ID); the push Topic names the reminder instead (channel.c). */
struct occurrence {
    int64_t reminder_id;
    int64_t fire_at_ms;
    int64_t fired_at_ms; /* 0: as the reminder row says now */
};
#define OCCURRENCE_ID_MAX 48 /* "rem_" + two decimal int64 + "_" + NUL */

/* The Redis mirror's view of one pending reminder occurrence. */
struct reminder_key {
    int64_t reminder_id;
    int64_t fire_at_ms;
};

/* The newest live-stream event of a tenant: what a fire statement wrote, what a wake-up carries
 * between replicas, what a stream hub has seen. Sequence numbers are per tenant, from 1. */
struct stream_head {
    int64_t tenant_id;
    int64_t seq;
};

/* Keys that a write made stale (to delete) or fresh (to arm). Bounded by what one write touches. */
#define REMINDER_KEYS_MAX (2 * MEETING_REMINDERS_MAX)
struct reminder_keys {
    size_t n;
    struct reminder_key k[REMINDER_KEYS_MAX];
};

void meeting_init(struct meeting *m);
/* Frees the strings; accepts a zeroed or half-filled struct. Leaves m as after meeting_init. */
void meeting_fini(struct meeting *m);
/* The bytes of m's texts (title, description, location, participants, metadata): what its
 * representation grows with, and most of what it holds in memory. A list page is bounded by
 * them (the database counts the same with MEETING_TEXT_BYTES, db_meeting_sql.h). */
size_t meeting_text_bytes(const struct meeting *m);

/* fire_at = starts_at - minutes_before minutes, for every reminder. */
void meeting_derive_fire_times(struct meeting *m);

/* Appends to out the pending reminders of m that have a row (id != 0); nothing for NULL. */
void meeting_pending_keys(const struct meeting *m, struct reminder_keys *out);

/* "rem_<reminder_id>_<fire_at_ms>" into out. */
void meeting_occurrence_id(int64_t reminder_id, int64_t fire_at_ms, char out[OCCURRENCE_ID_MAX]);

/* The canonical lower-case UUID text of 16 bytes into out (MEETING_ID_LEN + 1 bytes). */
void meeting_id_format(const uint8_t b[MEETING_ID_BYTES], char out[MEETING_ID_LEN + 1]);
/* Writes a random (version 4) UUID into out (MEETING_ID_LEN + 1 bytes). Returns 0 or -1. */
int meeting_new_id(char out[MEETING_ID_LEN + 1]);
/* True when s is a canonical lower-case UUID text of MEETING_ID_LEN bytes. */
bool meeting_id_valid(const char *s);

/* "webhook" | "stream" | "push" | "email" for one bit (NULL for anything else); and back
 * (returns 0 for an unknown name). meeting_channel_at(i), i < CHANNEL_COUNT, is the i-th bit in
 * that order. These are the domain's names of a reminder's channels; channel.c is the delivery
 * that sends on them. */
const char *meeting_channel_name(unsigned channel);
unsigned meeting_channel_parse(const char *name);
unsigned meeting_channel_at(unsigned i);

/* "pending" | "fired" | "missed" | "cancelled"; and back (returns -1 for unknown text). */
const char *meeting_reminder_status_name(enum reminder_status s);
int meeting_reminder_status_parse(const char *s, enum reminder_status *out);

#endif
