/* test_trace.c -- request ids and traceparent (trace.h): the safe set and its bounds, the made
 * ids, a traceparent accepted or refused field by field (W3C Trace Context section 3.2), and the
 * outgoing traceparent: valid, its trace id the same for one key, its span id new each time. */
#include <string.h>

#include "check.h"
#include "trace.h"

static const struct {
    const char *id;
    bool ok;
} ids[] = {
    {"a", true},
    {"0f7c3a2e-9d4b-4c1a-8e2f-6b5d4c3b2a19", true},
    {"req_1.2:3/4+5=6@host", true},
    {"", false},
    {"has space", false},
    {"line\nbreak", false},
    {"tab\t", false},
    {"quote\"", false},
    {"esc\x1b[0m", false},
    {"caf\xc3\xa9", false},
    {"semi;colon", false},
    {"back\\slash", false},
};

#define TP_OK "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

static const struct {
    const char *tp;
    bool ok;
} parents[] = {
    {TP_OK, true},
    {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", true},
    {"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-comes-next", true},
    {"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", true},
    {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-", false}, /* 00: nothing after */
    {"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x", false},
    {"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},
    {"00-00000000000000000000000000000000-00f067aa0ba902b7-01", false},
    {"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", false},
    {"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", false},
    {"00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", false},
    {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b-01", false},
    {"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},
    {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g", false},
    {"0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},
    {" 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},
    {"", false},
};

int
main(void)
{
    char big[TRACE_REQUEST_ID_MAX + 2], made[TRACE_REQUEST_ID_MAX + 1];
    char trace[TRACE_ID_LEN + 1], span[TRACE_SPAN_LEN + 1];

    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        CHECK(trace_request_id_valid(ids[i].id) == ids[i].ok, "id %zu", i);
    memset(big, 'x', sizeof big - 1);
    big[TRACE_REQUEST_ID_MAX] = '\0';
    CHECK(trace_request_id_valid(big), "128 bytes: kept");
    big[TRACE_REQUEST_ID_MAX] = 'x';
    big[TRACE_REQUEST_ID_MAX + 1] = '\0';
    CHECK(!trace_request_id_valid(big), "129 bytes: refused");
    for (int c = 1; c < 256; c++) {
        char one[2] = {(char)c, '\0'};
        bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    strchr("-_.:/+=@", c) != NULL;
        CHECK(trace_request_id_valid(one) == safe, "byte 0x%02x", c);
    }
    CHECK(trace_request_id_make(made) == 0 && strlen(made) == 32 &&
              strspn(made, "0123456789abcdef") == 32 && trace_request_id_valid(made),
          "made id %s", made);
    char made2[TRACE_REQUEST_ID_MAX + 1];
    CHECK(trace_request_id_make(made2) == 0 && strcmp(made, made2) != 0, "ids differ");

    for (size_t i = 0; i < sizeof parents / sizeof parents[0]; i++)
        CHECK((trace_parent_parse(parents[i].tp, trace, span) == 0) == parents[i].ok,
              "traceparent %zu: %s", i, parents[i].tp);
    CHECK(trace_parent_parse(TP_OK, trace, span) == 0 &&
              strcmp(trace, "4bf92f3577b34da6a3ce929d0e0e4736") == 0 &&
              strcmp(span, "00f067aa0ba902b7") == 0,
          "fields %s %s", trace, span);

    char a[TRACE_PARENT_LEN + 1], b[TRACE_PARENT_LEN + 1], c[TRACE_PARENT_LEN + 1];
    CHECK(trace_parent_for("rem_42_1767225600000", a) == 0 &&
              trace_parent_for("rem_42_1767225600000", b) == 0 &&
              trace_parent_for("rem_43_1767225600000", c) == 0,
          "made");
    CHECK(trace_parent_parse(a, trace, span) == 0 && strlen(a) == TRACE_PARENT_LEN &&
              strncmp(a, "00-", 3) == 0 && strcmp(a + 52, "-00") == 0,
          "valid: %s", a);
    CHECK(memcmp(a, b, 35) == 0, "one key, one trace id: %s %s", a, b);
    CHECK(strcmp(a + 36, b + 36) != 0, "a new span id each time: %s %s", a, b);
    CHECK(memcmp(a + 3, c + 3, TRACE_ID_LEN) != 0, "another key, another trace id");
    printf("test_trace: %s\n", fails ? "FAILED" : "ok");
    return fails != 0;
}
