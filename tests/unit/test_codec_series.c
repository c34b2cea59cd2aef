/* test_codec_series.c -- the JSON of recurring meetings: the recurrence member (a table of
 * inputs, the field each refusal names, the unknown names they quote), its output and input
 * forms, an occurrence's output with rows and without, the override document and its
 * validation; and series_page's order with moved and cancelled occurrences and its keyset
 * position. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "codec.h"
#include "timefmt.h"

#define BODY_MAX 4096

/* A meeting document from single-quoted JSON (quotes swapped), with base fields added. */
static json_t *
doc_q(const char *recurrence_q, const char *extra_q)
{
    char text[BODY_MAX];
    int n = snprintf(text, sizeof text,
                     "{'title':'t','starts_at':'2027-01-04T09:00:00+01:00',"
                     "'time_zone':'Europe/Berlin'%s%s%s}",
                     recurrence_q ? ",'recurrence':" : "", recurrence_q ? recurrence_q : "",
                     extra_q ? extra_q : "");
    for (int i = 0; i < n; i++)
        if (text[i] == '\'')
            text[i] = '"';
    return json_loads(text, 0, NULL);
}

static const struct {
    const char *recurrence, *extra;
    const char *field; /* NULL: valid */
} cases[] = {
    {"{'rrule':'FREQ=WEEKLY;BYDAY=MO'}", NULL, NULL},
    {"null", NULL, NULL},
    {"{'rrule':'FREQ=WEEKLY;BYDAY=MO','exdates':null,'rdates':null}", NULL, NULL},
    {"{'rrule':'FREQ=WEEKLY;BYDAY=MO','exdates':['2027-01-11T08:00:00Z']}", NULL, NULL},
    {"{'rrule':'FREQ=WEEKLY;BYDAY=TU'}", NULL, "starts_at"},
    {"{'rrule':'FREQ=WEEKLY;BYDAY=MO'}", ",'time_zone':null", "time_zone"},
    {"{'rrule':'FREQ=MINUTELY'}", NULL, "recurrence.rrule"},
    {"{'rrule':5}", NULL, "recurrence.rrule"},
    {"{}", NULL, "recurrence.rrule"},
    {"[]", NULL, "recurrence"},
    {"{'rrule':'FREQ=DAILY','x':1}", NULL, "recurrence.x"},
    {"{'rrule':'FREQ=DAILY','exdates':'2027-01-05T08:00:00Z'}", NULL, "recurrence.exdates"},
    {"{'rrule':'FREQ=DAILY','exdates':['2027-01-05']}", NULL, "recurrence.exdates[0]"},
    {"{'rrule':'FREQ=DAILY','rdates':['2027-01-05T08:00:00Z','2027-01-05T09:00:00+01:00']}", NULL,
     "recurrence.rdates[1]"},
    {"{'rrule':'FREQ=DAILY','rdates':['2027-01-04T08:00:00Z']}", NULL, "recurrence.rdates"},
};

static void
check_decode(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *doc = doc_q(cases[i].recurrence, cases[i].extra);
        struct meeting m;
        struct codec_errors errs;

        meeting_init(&m);
        CHECK(doc != NULL, "case %zu: bad test JSON", i);
        enum api_error e = codec_meeting_decode(doc, &m, &errs);
        if (cases[i].field == NULL) {
            CHECK(e == API_E_NONE, "case %zu refused: %s %s", i, errs.n ? errs.e[0].field : "",
                  errs.n ? errs.e[0].message : "");
        } else {
            bool named = false;
            for (size_t k = 0; k < errs.n; k++)
                named |= strcmp(errs.e[k].field, cases[i].field) == 0;
            CHECK(e == API_E_VALIDATION && named, "case %zu: want %s, got %s", i, cases[i].field,
                  errs.n ? errs.e[0].field : "(accepted)");
        }
        meeting_fini(&m);
        json_decref(doc);
    }
}

/* An unknown member's name is quoted in its field path up to CODEC_ECHO_MAX bytes, the bound
 * every codec part uses, cut on a UTF-8 boundary: in the recurrence member and in an override. */
static void
check_echo(void)
{
    char name[2 * CODEC_ECHO_MAX], want[CODEC_FIELD_NAME_MAX];
    struct codec_errors errs;
    struct series_override out;
    struct meeting m;

    memset(name, 'q', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    json_t *doc = doc_q("{'rrule':'FREQ=DAILY'}", NULL);
    json_object_set_new(json_object_get(doc, "recurrence"), name, json_integer(1));
    meeting_init(&m);
    snprintf(want, sizeof want, "recurrence.%.*s", CODEC_ECHO_MAX, name);
    CHECK(codec_meeting_decode(doc, &m, &errs) == API_E_VALIDATION && errs.n == 1 &&
              strcmp(errs.e[0].field, want) == 0,
          "recurrence: want %s, got %s", want, errs.n ? errs.e[0].field : "(accepted)");
    meeting_fini(&m);
    json_decref(doc);
    /* "a" then two-byte characters: byte CODEC_ECHO_MAX is inside one, so one byte less. */
    char utf8[1 + 2 * CODEC_ECHO_MAX + 1] = "a";
    for (int i = 0; i < CODEC_ECHO_MAX; i++)
        memcpy(utf8 + 1 + 2 * i, "\xc3\xa9", 2);
    utf8[sizeof utf8 - 1] = '\0';
    json_t *ov = json_pack("{s:i}", utf8, 1);
    snprintf(want, sizeof want, "%.*s", CODEC_ECHO_MAX - 1, utf8);
    CHECK(codec_series_override_decode(ov, 0, &out, &errs) == API_E_VALIDATION && errs.n == 1 &&
              strcmp(errs.e[0].field, want) == 0,
          "override: want %s, got %s", want, errs.n ? errs.e[0].field : "(accepted)");
    series_override_fini(&out);
    json_decref(ov);
}

static void
check_round_trip(void)
{
    json_t *doc = doc_q("{'rrule':'FREQ=WEEKLY;BYDAY=MO','exdates':['2027-01-18T09:00:00+01:00',"
                        "'2027-01-11T08:00:00Z'],'rdates':['2027-01-06T08:00:00Z']}",
                        NULL);
    struct meeting m;
    struct codec_errors errs;

    meeting_init(&m);
    CHECK(codec_meeting_decode(doc, &m, &errs) == API_E_NONE, "decode");
    CHECK(m.recurrence != NULL && m.recurrence->n_exdates == 2 &&
              m.recurrence->exdates[0] < m.recurrence->exdates[1],
          "exdates sorted");
    json_t *input = codec_meeting_input_doc(&m);
    char *text = codec_dump(json_object_get(input, "recurrence"));
    CHECK(text &&
              strcmp(text, "{\"rrule\":\"FREQ=WEEKLY;BYDAY=MO\",\"exdates\":[\"2027-01-11T08:00:"
                           "00.000Z\",\"2027-01-18T08:00:00.000Z\"],\"rdates\":[\"2027-01-06T08:"
                           "00:00.000Z\"]}") == 0,
          "recurrence output: %s", text ? text : "(null)");
    /* The input document decodes to the same meeting (what PATCH relies on). */
    struct meeting again;
    meeting_init(&again);
    CHECK(codec_meeting_decode(input, &again, &errs) == API_E_NONE, "input doc decodes");
    json_t *input2 = codec_meeting_input_doc(&again);
    CHECK(json_equal(input, input2), "input doc round trip");
    free(text);
    json_decref(input);
    json_decref(input2);
    meeting_fini(&again);
    meeting_fini(&m);
    json_decref(doc);
}

static int64_t
at(const char *s)
{
    int64_t ms = 0;
    timefmt_parse(s, strlen(s), &ms);
    return ms;
}

static void
check_occurrence_and_override(void)
{
    struct meeting m;
    struct codec_errors errs;
    json_t *doc = doc_q("{'rrule':'FREQ=DAILY'}", ",'ends_at':'2027-01-04T08:30:00Z',"
                                                  "'reminders':[{'minutes_before':10},"
                                                  "{'minutes_before':0}]");
    meeting_init(&m);
    CHECK(codec_meeting_decode(doc, &m, &errs) == API_E_NONE, "decode");
    /* A stored series' reminders carry the state of its next firing, another occurrence's. */
    for (size_t i = 0; i < m.n_reminders; i++) {
        m.reminders[i].id = 7;
        m.reminders[i].status = REMINDER_FIRED;
        m.reminders[i].fired_at_ms = at("2027-01-04T07:50:00.010Z");
    }
    struct series_override ov = {
        at("2027-01-05T08:00:00Z"), true, false, at("2027-01-05T12:00:00Z"), 0, NULL, false};
    struct series_occurrence o;
    series_occurrence_of(&m, ov.original_start_ms, &ov, &o);
    struct reminder row = {42,
                           0,
                           CHANNELS_DEFAULT,
                           at("2027-01-05T12:00:00Z"),
                           REMINDER_FIRED,
                           at("2027-01-05T12:00:00.010Z")};
    json_t *v = codec_series_occurrence_encode(&m, &o, &row, 1);
    char *text = codec_dump(v);
    CHECK(text && strstr(text, "\"original_start\":\"2027-01-05T08:00:00.000Z\",\"starts_at\":"
                               "\"2027-01-05T12:00:00.000Z\",\"ends_at\":\"2027-01-05T12:30:00."
                               "000Z\",\"starts_at_local\":\"2027-01-05T13:00:00.000+01:00\","
                               "\"ends_at_local\":\"2027-01-05T13:30:00.000+01:00\",\"title\":"
                               "\"t\",\"cancelled\":false") != NULL,
          "occurrence: %s", text ? text : "(null)");
    /* The 10-minute reminder has no row: shown ahead with id, status and fired_at null, whatever
     * the meeting's reminder says. */
    CHECK(text && strstr(text, "{\"id\":null,\"minutes_before\":10,\"channels\":[\"webhook\","
                               "\"stream\",\"push\"],\"fire_at\":\"2027-01-05T11:50:00.000Z\","
                               "\"status\":null,\"fired_at\":null}") != NULL,
          "reminder without a row: %s", text ? text : "(null)");
    CHECK(text && strstr(text, "{\"id\":\"42\"") != NULL, "reminder with a row");
    free(text);
    json_decref(v);
    /* Override documents: the current values, a patch, validation. */
    json_t *d = codec_series_override_doc(&ov);
    text = codec_dump(d);
    CHECK(text && strcmp(text, "{\"starts_at\":\"2027-01-05T12:00:00.000Z\",\"ends_at\":null,"
                               "\"title\":null,\"cancelled\":false}") == 0,
          "override doc: %s", text ? text : "(null)");
    free(text);
    json_t *patch = json_pack("{s:n, s:s, s:b}", "starts_at", "title", "Moved", "cancelled", 1);
    json_t *patched = codec_merge_patch(d, patch);
    struct series_override out;
    CHECK(codec_series_override_decode(patched, ov.original_start_ms, &out, &errs) == API_E_NONE,
          "patched override");
    CHECK(!out.has_starts_at && out.title && strcmp(out.title, "Moved") == 0 && out.cancelled,
          "patched values");
    series_override_fini(&out);
    json_decref(patched);
    json_decref(patch);
    json_decref(d);
    static const char *const bad[] = {"{\"starts_at\":\"tomorrow\"}",
                                      "{\"ends_at\":\"2027-01-05T07:00:00Z\"}",
                                      "{\"title\":\"\"}",
                                      "{\"title\":\"a\\u0001\"}",
                                      "{\"cancelled\":1}",
                                      "{\"location\":null}",
                                      "[]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *b = json_loads(bad[i], JSON_DECODE_ANY, NULL);
        CHECK(codec_series_override_decode(b, ov.original_start_ms, &out, &errs) ==
                      API_E_VALIDATION &&
                  errs.n > 0,
              "override accepted: %s", bad[i]);
        series_override_fini(&out);
        json_decref(b);
    }
    meeting_fini(&m);
    json_decref(doc);
}

/* series_page: by actual start, moved and cancelled ones included, the keyset position. */
static void
check_page(void)
{
    struct meeting m;
    struct codec_errors errs;
    json_t *doc = doc_q("{'rrule':'FREQ=DAILY;COUNT=6'}", NULL);
    meeting_init(&m);
    CHECK(codec_meeting_decode(doc, &m, &errs) == API_E_NONE, "decode");
    /* The 5th moved to before the 2nd, the 3rd cancelled. */
    struct series_override ov[2] = {
        {at("2027-01-06T08:00:00Z"), false, false, 0, 0, NULL, true},
        {at("2027-01-08T08:00:00Z"), true, false, at("2027-01-05T07:00:00Z"), 0, NULL, false}};
    struct series_occurrence out[8];
    struct series_page_pos none = {false, 0, 0};
    bool more;
    long n = series_page(&m, ov, 2, INT64_MIN, INT64_MAX, &none, out, 8, &more);
    static const char *const want[] = {"2027-01-04T08", "2027-01-05T07", "2027-01-05T08",
                                       "2027-01-06T08", "2027-01-07T08", "2027-01-09T08"};
    CHECK(n == 6 && !more, "six occurrences, got %ld", n);
    for (long i = 0; i < n && i < 6; i++) {
        char t[TIMEFMT_BUF];
        CHECK(strncmp(timefmt_format(out[i].starts_at_ms, t), want[i], 13) == 0, "#%ld: %s", i, t);
    }
    CHECK(n == 6 && out[3].cancelled && out[1].original_start_ms == at("2027-01-08T08:00:00Z"),
          "cancelled and moved");
    /* Two at a time from a position: the rest, no repeat. */
    struct series_page_pos pos = {true, out[1].starts_at_ms, out[1].original_start_ms};
    n = series_page(&m, ov, 2, INT64_MIN, INT64_MAX, &pos, out, 2, &more);
    CHECK(n == 2 && more && out[0].starts_at_ms == at("2027-01-05T08:00:00Z"), "page after #1");
    n = series_page(&m, ov, 2, at("2027-01-06T00:00:00Z"), at("2027-01-08T00:00:00Z"), &none, out,
                    8, &more);
    CHECK(n == 2 && !more, "range: the 6th and the 7th, got %ld", n);
    meeting_fini(&m);
    json_decref(doc);
}

int
main(void)
{
    check_decode();
    check_echo();
    check_round_trip();
    check_occurrence_and_override();
    check_page();
    if (fails == 0)
        printf("test_codec_series: ok\n");
    return fails != 0;
}
