/* test_codec_page.c -- a meeting written for a list page (its stored participants and metadata
 * texts spliced into a shell's representation) is byte for byte what codec_dump writes of
 * codec_meeting_encode, for texts that escape, non-ASCII, numbers of every kind, nesting, members
 * named like the shell's marks inside strings, and meetings without participants or metadata; a
 * shell with members added after the metadata (expand=true's items) keeps them; codec_dump_append
 * writes what codec_dump does. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "codec.h"
#include "codec_page.h"

static const char *const inputs[] = {
    "{\"title\":\"t\",\"starts_at\":\"2030-01-01T09:00:00Z\"}",
    ("{\"title\":\"\\\"participants\\\":[] and \\\"metadata\\\":null\",\"description\":"
     "\"line\\nnext\\ttab \\\\ / \\u00e9\\u20ac\\ud83d\\ude00\",\"starts_at\":"
     "\"2030-01-01T09:00:00+01:00\",\"ends_at\":\"2030-01-01T10:00:00Z\",\"time_zone\":"
     "\"Europe/Berlin\",\"location\":\"\\\"metadata\\\":null\",\"participants\":[{\"id\":"
     "\"u1\",\"name\":\"A \\\"q\\\" \\u00e9\",\"email\":\"a@example.com\"},{\"id\":"
     "\"\\\"participants\\\":[]\"}],\"reminders\":[{\"minutes_before\":5},{\"minutes_before\":60}],"
     "\"metadata\":{\"participants\":[],\"metadata\":null,\"n\":[0,-1,1.5,0.1,1e300,-2.5e-300,"
     "9007199254740993,true,false,null],\"o\":{\"a\":{\"b\":[{}]}},\"s\":\"\\u2028 \\u0001\"}}"),
    "{\"title\":\"only metadata\",\"starts_at\":\"2030-01-01T09:00:00Z\",\"metadata\":{}}",
    ("{\"title\":\"only people\",\"starts_at\":\"2030-01-01T09:00:00Z\",\"participants\":[{\"id\":"
     "\"x\"}],\"reminders\":[]}"),
};

static int
decoded(const char *text, struct meeting *m)
{
    char err[CODEC_MESSAGE_MAX];
    struct codec_errors errs = {0};
    json_t *doc = codec_parse(text, strlen(text), err, sizeof err);
    enum api_error e = doc != NULL ? codec_meeting_decode(doc, m, &errs) : API_E_BAD_JSON;

    json_decref(doc);
    strcpy(m->id, "0b6f1d6e-1c1b-4a8e-9a51-2f0f8e1d9a77");
    m->version = 3;
    m->created_at_ms = m->updated_at_ms = 1893488400000;
    return e == API_E_NONE ? 0 : -1;
}

static void
test_same_bytes(void)
{
    for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
        struct meeting m;
        struct strbuf b = {0};

        meeting_init(&m);
        CHECK(decoded(inputs[i], &m) == 0, "input %zu decodes", i);
        json_t *v = codec_meeting_encode(&m);
        char *want = codec_dump(v);
        CHECK(codec_meeting_append(&m, &b) == 0 && want != NULL && strcmp(b.p, want) == 0,
              "input %zu: spliced %s\n  != dumped %s", i, b.p ? b.p : "(none)", want ? want : "");
        strbuf_clear(&b);
        CHECK(codec_dump_append(v, &b) == 0 && strcmp(b.p, want) == 0, "input %zu: dump_append", i);
        free(want);
        json_decref(v);
        strbuf_fini(&b);
        meeting_fini(&m);
    }
}

static void
test_shell_members(void)
{
    struct meeting m;
    struct strbuf b = {0};

    meeting_init(&m);
    CHECK(decoded(inputs[1], &m) == 0, "decodes");
    struct meeting view = codec_meeting_shell(&m);
    json_t *shell = codec_meeting_encode(&view), *full = codec_meeting_encode(&m);
    json_object_set_new(shell, "occurrence", json_pack("{s:b}", "cancelled", 1));
    json_object_set_new(full, "occurrence", json_pack("{s:b}", "cancelled", 1));
    char *want = codec_dump(full);
    CHECK(codec_meeting_shell_append(shell, &m, &b) == 0 && strcmp(b.p, want) == 0,
          "a member added after the metadata: %s", b.p ? b.p : "(none)");
    CHECK(m.participants_json != NULL && strcmp(view.participants_json, "[]") == 0 &&
              view.metadata_json == NULL && view.title == m.title,
          "the shell borrows all but the texts it leaves out");
    free(want);
    json_decref(shell);
    json_decref(full);
    strbuf_fini(&b);
    meeting_fini(&m);
}

int
main(void)
{
    test_same_bytes();
    test_shell_members();
    return check_summary("test_codec_page");
}
