/* test_hub_event.c -- a stream event as the hub keeps it: built from a read (its audience parsed
 * and sorted, its frame made once; a deleted meeting gives no frame; an audience that is not a
 * JSON array of strings is refused), and matched to a stream's participant and meeting filter
 * (in the audience or not, an exact id and never a prefix of one, the meeting among the token's
 * or any when it names none, never an event without a frame). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hub_internal.h"

#define MTG_A "00000000-0000-4000-8000-00000000000a"
#define MTG_B "00000000-0000-4000-8000-00000000000b"
#define MTG_C "00000000-0000-4000-8000-00000000000c"
_Static_assert(sizeof MTG_A == MEETING_ID_LEN + 1, "a meeting id's length");

/* Fills e as a read would, from copies of audience and body (NULL: the meeting is gone). */
static int
fill(struct hub_event *e, int64_t seq, const char *meeting, const char *audience, const char *body)
{
    struct db_stream_event ev = {.seq = seq};

    memcpy(ev.meeting_id, meeting, sizeof ev.meeting_id);
    ev.audience_json = strdup(audience);
    int rc = hub_event_fill(e, &ev, body != NULL ? strdup(body) : NULL);
    free(ev.audience_json);
    return rc;
}

static void
test_fill(void)
{
    static const struct {
        const char *audience, *body;
        int rc;
        size_t n_audience;
        const char *first, *frame; /* the audience's first after sorting; the whole frame */
    } cases[] = {
        {"[\"bob\",\"alice\"]", "{\"a\":1}", 0, 2, "alice",
         "id: 7\nevent: reminder\ndata: {\"a\":1}\n\n"},
        {"[\"alice\"]", NULL, 0, 1, "alice", NULL}, /* deleted since it fired: nobody gets it */
        {"[]", "{}", 0, 0, NULL, "id: 7\nevent: reminder\ndata: {}\n\n"},
        {"[\"a\\nb\"]", "x\ny", 0, 1, "a\nb", "id: 7\nevent: reminder\ndata: x\ndata: y\n\n"},
        {"{\"alice\":1}", "{}", -1, 0, NULL, NULL}, /* not an array */
        {"[\"alice\",2]", "{}", -1, 0, NULL, NULL}, /* not all strings */
        {"[\"alice\"", "{}", -1, 0, NULL, NULL},    /* not JSON */
        {"", "{}", -1, 0, NULL, NULL},
    };

    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct hub_event e;
        int rc = fill(&e, 7, MTG_A, cases[i].audience, cases[i].body);

        CHECK(rc == cases[i].rc, "case %zu: rc %d", i, rc);
        if (rc != 0)
            continue;
        CHECK(e.seq == 7 && strcmp(e.meeting_id, MTG_A) == 0, "case %zu: seq, meeting", i);
        CHECK(e.n_audience == cases[i].n_audience, "case %zu: %zu in the audience", i,
              e.n_audience);
        CHECK(cases[i].first == NULL || strcmp(e.audience[0], cases[i].first) == 0,
              "case %zu: sorted", i);
        if (cases[i].frame == NULL)
            CHECK(e.frame == NULL && e.frame_len == 0, "case %zu: no frame", i);
        else
            CHECK(e.frame != NULL && e.frame_len == strlen(cases[i].frame) &&
                      memcmp(e.frame, cases[i].frame, e.frame_len) == 0,
                  "case %zu: frame %s", i, e.frame ? e.frame : "(null)");
        hub_event_clear(&e);
        CHECK(e.audience == NULL && e.frame == NULL && e.seq == 0, "case %zu: cleared", i);
    }
}

static void
test_matches(void)
{
    static const struct {
        const char *sub, *meeting, *audience;
        bool gone; /* the meeting was deleted: no frame */
        const char *mtg[3];
        size_t n_mtg;
        bool want;
    } cases[] = {
        {"alice", MTG_A, "[\"alice\",\"bob\"]", false, {NULL}, 0, true},
        {"bob", MTG_A, "[\"alice\",\"bob\"]", false, {NULL}, 0, true},
        {"carol", MTG_A, "[\"alice\",\"bob\"]", false, {NULL}, 0, false},
        {"al", MTG_A, "[\"alice\"]", false, {NULL}, 0, false},     /* a prefix is not the id */
        {"alice2", MTG_A, "[\"alice\"]", false, {NULL}, 0, false}, /* nor a longer one */
        {"Alice", MTG_A, "[\"alice\"]", false, {NULL}, 0, false},  /* ids are exact */
        {"alice", MTG_A, "[]", false, {NULL}, 0, false},
        {"alice", MTG_A, "[\"alice\"]", true, {NULL}, 0, false}, /* deleted meeting */
        {"alice", MTG_A, "[\"alice\"]", false, {MTG_A}, 1, true},
        {"alice", MTG_B, "[\"alice\"]", false, {MTG_A, MTG_C}, 2, false},
        {"alice", MTG_C, "[\"alice\"]", false, {MTG_A, MTG_B, MTG_C}, 3, true},
        {"bob", MTG_A, "[\"alice\"]", false, {MTG_A}, 1, false},             /* both must hold */
        {"zed", MTG_A, "[\"zed\",\"amy\",\"kim\"]", false, {NULL}, 0, true}, /* unsorted read */
    };

    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct hub_event e;
        char mtg[3][MEETING_ID_LEN + 1];

        for (size_t k = 0; k < cases[i].n_mtg; k++)
            memcpy(mtg[k], cases[i].mtg[k], sizeof mtg[k]);
        CHECK(fill(&e, 1, cases[i].meeting, cases[i].audience, cases[i].gone ? NULL : "{}") == 0,
              "case %zu: fill", i);
        bool got = hub_event_matches(&e, cases[i].sub, mtg, cases[i].n_mtg);
        CHECK(got == cases[i].want, "case %zu: %s gets it: %d", i, cases[i].sub, got);
        hub_event_clear(&e);
    }
}

int
main(void)
{
    test_fill();
    test_matches();
    return check_summary("test_hub_event");
}
