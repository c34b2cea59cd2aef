/* test_meeting.c -- the domain module: id generation and validation, status names, fire times,
 * pending keys and the init/fini lifetime. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "meeting.h"

#define ID_SAMPLES 1000

static const struct {
    const char *s;
    bool want;
} ids[] = {
    {"123e4567-e89b-42d3-a456-426614174000", true},
    {"00000000-0000-0000-0000-000000000000", true},
    {"123E4567-e89b-42d3-a456-426614174000", false},  /* upper case */
    {"123e4567-e89b-42d3-a456-42661417400", false},   /* short */
    {"123e4567-e89b-42d3-a456-4266141740000", false}, /* long */
    {"123e4567e89b-42d3-a456-426614174000-", false},
    {"123e4567-e89b-42d3-a456-42661417400g", false},
    {"{23e4567-e89b-42d3-a456-426614174000", false},
    {"", false},
    {"../../etc/passwd", false},
};

static void
check_ids(void)
{
    char a[MEETING_ID_LEN + 1], b[MEETING_ID_LEN + 1];

    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
        CHECK(meeting_id_valid(ids[i].s) == ids[i].want, "id_valid(%s) is not %d", ids[i].s,
              ids[i].want);
    }
    CHECK_EXPR(!meeting_id_valid(NULL));
    CHECK_EXPR(meeting_new_id(b) == 0);
    for (int i = 0; i < ID_SAMPLES; i++) {
        CHECK_EXPR(meeting_new_id(a) == 0);
        CHECK_EXPR(strlen(a) == MEETING_ID_LEN);
        CHECK_EXPR(meeting_id_valid(a));
        CHECK_EXPR(a[14] == '4');                                                 /* version */
        CHECK_EXPR(a[19] == '8' || a[19] == '9' || a[19] == 'a' || a[19] == 'b'); /* variant */
        CHECK_EXPR(strcmp(a, b) != 0);
        memcpy(b, a, sizeof(a));
    }
}

static void
check_statuses(void)
{
    static const enum reminder_status all[] = {REMINDER_PENDING, REMINDER_FIRED, REMINDER_MISSED,
                                               REMINDER_CANCELLED};
    static const char *const names[] = {"pending", "fired", "missed", "cancelled"};
    enum reminder_status got;

    for (size_t i = 0; i < 4; i++) {
        CHECK_EXPR(strcmp(meeting_reminder_status_name(all[i]), names[i]) == 0);
        CHECK_EXPR(meeting_reminder_status_parse(names[i], &got) == 0 && got == all[i]);
    }
    CHECK_EXPR(meeting_reminder_status_parse("PENDING", &got) == -1);
    CHECK_EXPR(meeting_reminder_status_parse("", &got) == -1);
    CHECK_EXPR(meeting_reminder_status_parse("pendingx", &got) == -1);
}

static void
check_fire_times_and_keys(void)
{
    struct meeting m;
    struct reminder_keys keys = {0};

    meeting_init(&m);
    m.starts_at_ms = 1795420800000LL;
    m.n_reminders = 3;
    m.reminders[0] = (struct reminder){.id = 11, .minutes_before = 40320};
    m.reminders[1] = (struct reminder){.id = 12, .minutes_before = 5};
    m.reminders[2] = (struct reminder){.id = 13, .minutes_before = 0};
    meeting_derive_fire_times(&m);
    CHECK_EXPR(m.reminders[0].fire_at_ms == 1795420800000LL - 40320LL * 60000);
    CHECK_EXPR(m.reminders[1].fire_at_ms == 1795420800000LL - 300000);
    CHECK_EXPR(m.reminders[2].fire_at_ms == 1795420800000LL);

    m.reminders[1].status = REMINDER_FIRED;
    meeting_pending_keys(&m, &keys);
    CHECK_EXPR(keys.n == 2);
    CHECK_EXPR(keys.k[0].reminder_id == 11 && keys.k[0].fire_at_ms == m.reminders[0].fire_at_ms);
    CHECK_EXPR(keys.k[1].reminder_id == 13 && keys.k[1].fire_at_ms == m.reminders[2].fire_at_ms);

    /* Appends; NULL adds nothing; never past REMINDER_KEYS_MAX. */
    meeting_pending_keys(NULL, &keys);
    CHECK_EXPR(keys.n == 2);
    for (int i = 0; i < 10; i++)
        meeting_pending_keys(&m, &keys);
    CHECK_EXPR(keys.n == REMINDER_KEYS_MAX);
    meeting_fini(&m);
}

/* The occurrence id is the webhook-id, the push Topic's source and the mail Message-ID's head:
 * the same text for every retry of one occurrence, and it fits at the int64 extremes. */
static void
check_occurrence_id(void)
{
    char id[OCCURRENCE_ID_MAX];

    meeting_occurrence_id(42, 1700000000123, id);
    CHECK_EXPR(strcmp(id, "rem_42_1700000000123") == 0);
    meeting_occurrence_id(INT64_MIN, INT64_MIN, id);
    CHECK_EXPR(strcmp(id, "rem_-9223372036854775808_-9223372036854775808") == 0);
}

static void
check_lifetime(void)
{
    struct meeting m;

    meeting_init(&m);
    CHECK_EXPR(m.title == NULL && m.n_reminders == 0 && m.id[0] == '\0');
    meeting_fini(&m); /* an empty meeting */
    m.title = strdup("t");
    m.metadata_json = strdup("{}");
    m.participants_json = strdup("[]");
    meeting_fini(&m); /* half-filled: ASan reports a leak if anything stays */
    CHECK_EXPR(m.title == NULL && m.metadata_json == NULL && m.participants_json == NULL);
    meeting_fini(&m); /* twice is harmless */
    meeting_fini(NULL);
}

int
main(void)
{
    check_ids();
    check_statuses();
    check_fire_times_and_keys();
    check_occurrence_id();
    check_lifetime();
    return check_summary("test_meeting");
}
