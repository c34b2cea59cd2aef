/* test_codec.c -- body parsing, meeting validation (every field at its limit and one past it,
 * types, unknown fields, dates, time zones), RFC 7396 merge patch, encode and round trips.
 * Bodies in the tables are written with ' for " to stay readable; q() swaps them back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "codec.h"
#include "timefmt.h"
#include "webpush.h"

#define BODY_MAX 65536
#define ERR_MAX 200
#define BASE "{'title':'t','starts_at':'2030-01-01T09:00:00Z'"

/* A body is head + count copies of unit (joined by sep, '#' replaced by the copy's index) + tail.
 */
static const struct {
    const char *name;
    const char *head, *unit, *sep;
    int count;
    const char *tail;
    enum api_error want;
    const char *field; /* one of the reported fields, or NULL */
} cases[] = {
    {"minimal", BASE "}", NULL, NULL, 0, "", API_E_NONE, NULL},
    {"full",
     "{'title':'Weekly sync','description':'line1\\nline2\\ttab','starts_at':"
     "'2026-11-23T09:00:00+01:00','ends_at':'2026-11-23T09:30:00+01:00','time_zone':"
     "'Europe/Berlin','location':'Room 1','participants':[{'id':'u1','name':'Ada','email':"
     "'ada@example.com'},{'id':'u2'}],'reminders':[{'minutes_before':5},{'minutes_before':60}],"
     "'metadata':{'k':[1,2,{'x':null}]}}",
     NULL, NULL, 0, "", API_E_NONE, NULL},
    {"all optionals null",
     BASE ",'description':null,'ends_at':null,'time_zone':null,'location':null,"
          "'participants':null,'reminders':null,'metadata':null}",
     NULL, NULL, 0, "", API_E_NONE, NULL},
    {"not an object", "[1]", NULL, NULL, 0, "", API_E_VALIDATION, ""},
    {"scalar body", "'x'", NULL, NULL, 0, "", API_E_VALIDATION, ""},
    {"bad json", "{'title':", NULL, NULL, 0, "", API_E_BAD_JSON, NULL},
    {"duplicate key", BASE ",'title':'u'}", NULL, NULL, 0, "", API_E_BAD_JSON, NULL},
    {"escaped NUL", "{'title':'a\\u0000b','starts_at':'2030-01-01T09:00:00Z'}", NULL, NULL, 0, "",
     API_E_BAD_JSON, NULL},
    /* title */
    {"title missing", "{'starts_at':'2030-01-01T09:00:00Z'}", NULL, NULL, 0, "", API_E_VALIDATION,
     "title"},
    {"title null", "{'title':null,'starts_at':'2030-01-01T09:00:00Z'}", NULL, NULL, 0, "",
     API_E_VALIDATION, "title"},
    {"title number", "{'title':5,'starts_at':'2030-01-01T09:00:00Z'}", NULL, NULL, 0, "",
     API_E_VALIDATION, "title"},
    {"title empty", "{'title':'','starts_at':'2030-01-01T09:00:00Z'}", NULL, NULL, 0, "",
     API_E_VALIDATION, "title"},
    {"title at limit", "{'starts_at':'2030-01-01T09:00:00Z','title':'", "a", "", 200, "'}",
     API_E_NONE, NULL},
    {"title past limit", "{'starts_at':'2030-01-01T09:00:00Z','title':'", "a", "", 201, "'}",
     API_E_VALIDATION, "title"},
    {"title 200 two-byte chars", "{'starts_at':'2030-01-01T09:00:00Z','title':'", "\xc3\xa9", "",
     200, "'}", API_E_NONE, NULL},
    {"title 201 two-byte chars", "{'starts_at':'2030-01-01T09:00:00Z','title':'", "\xc3\xa9", "",
     201, "'}", API_E_VALIDATION, "title"},
    {"title 200 four-byte chars", "{'starts_at':'2030-01-01T09:00:00Z','title':'",
     "\xf0\x9f\x98\x80", "", 200, "'}", API_E_NONE, NULL},
    {"title newline", "{'title':'a\\nb','starts_at':'2030-01-01T09:00:00Z'}", NULL, NULL, 0, "",
     API_E_VALIDATION, "title"},
    {"title C0", "{'title':'a\\u0001b','starts_at':'2030-01-01T09:00:00Z'}", NULL, NULL, 0, "",
     API_E_VALIDATION, "title"},
    {"title DEL", "{'title':'a\\u007fb','starts_at':'2030-01-01T09:00:00Z'}", NULL, NULL, 0, "",
     API_E_VALIDATION, "title"},
    {"title blank kept", "{'title':' ','starts_at':'2030-01-01T09:00:00Z'}", NULL, NULL, 0, "",
     API_E_NONE, NULL},
    /* description and location */
    {"description at limit", BASE ",'description':'", "d", "", 5000, "'}", API_E_NONE, NULL},
    {"description past limit", BASE ",'description':'", "d", "", 5001, "'}", API_E_VALIDATION,
     "description"},
    {"description C0", BASE ",'description':'\\u0002'}", NULL, NULL, 0, "", API_E_VALIDATION,
     "description"},
    {"description array", BASE ",'description':[]}", NULL, NULL, 0, "", API_E_VALIDATION,
     "description"},
    {"location at limit", BASE ",'location':'", "l", "", 500, "'}", API_E_NONE, NULL},
    {"location past limit", BASE ",'location':'", "l", "", 501, "'}", API_E_VALIDATION, "location"},
    {"location newline", BASE ",'location':'a\\nb'}", NULL, NULL, 0, "", API_E_VALIDATION,
     "location"},
    /* times */
    {"starts_at missing", "{'title':'t'}", NULL, NULL, 0, "", API_E_VALIDATION, "starts_at"},
    {"starts_at no offset", "{'title':'t','starts_at':'2030-01-01T09:00:00'}", NULL, NULL, 0, "",
     API_E_VALIDATION, "starts_at"},
    {"starts_at Feb 30", "{'title':'t','starts_at':'2026-02-30T09:00:00Z'}", NULL, NULL, 0, "",
     API_E_VALIDATION, "starts_at"},
    {"starts_at month 13", "{'title':'t','starts_at':'2026-13-01T09:00:00Z'}", NULL, NULL, 0, "",
     API_E_VALIDATION, "starts_at"},
    {"starts_at hour 24", "{'title':'t','starts_at':'2026-01-01T24:00:00Z'}", NULL, NULL, 0, "",
     API_E_VALIDATION, "starts_at"},
    {"starts_at number", "{'title':'t','starts_at':1700000000}", NULL, NULL, 0, "",
     API_E_VALIDATION, "starts_at"},
    {"ends_at before", BASE ",'ends_at':'2030-01-01T08:59:59.999Z'}", NULL, NULL, 0, "",
     API_E_VALIDATION, "ends_at"},
    {"ends_at equal", BASE ",'ends_at':'2030-01-01T10:00:00+01:00'}", NULL, NULL, 0, "",
     API_E_VALIDATION, "ends_at"},
    {"ends_at after", BASE ",'ends_at':'2030-01-01T09:00:00.001Z'}", NULL, NULL, 0, "", API_E_NONE,
     NULL},
    {"ends_at bad", BASE ",'ends_at':'tomorrow'}", NULL, NULL, 0, "", API_E_VALIDATION, "ends_at"},
    /* time zone */
    {"tz UTC", BASE ",'time_zone':'UTC'}", NULL, NULL, 0, "", API_E_NONE, NULL},
    {"tz three segments", BASE ",'time_zone':'America/Argentina/Buenos_Aires'}", NULL, NULL, 0, "",
     API_E_NONE, NULL},
    {"tz Etc/GMT+5", BASE ",'time_zone':'Etc/GMT+5'}", NULL, NULL, 0, "", API_E_NONE, NULL},
    {"tz traversal", BASE ",'time_zone':'../etc/passwd'}", NULL, NULL, 0, "", API_E_VALIDATION,
     "time_zone"},
    {"tz absolute", BASE ",'time_zone':'/etc/passwd'}", NULL, NULL, 0, "", API_E_VALIDATION,
     "time_zone"},
    {"tz unknown", BASE ",'time_zone':'Europe/Nowhere'}", NULL, NULL, 0, "", API_E_VALIDATION,
     "time_zone"},
    {"tz wrong case", BASE ",'time_zone':'europe/berlin'}", NULL, NULL, 0, "", API_E_VALIDATION,
     "time_zone"},
    {"tz empty segment", BASE ",'time_zone':'Europe//Berlin'}", NULL, NULL, 0, "", API_E_VALIDATION,
     "time_zone"},
    {"tz trailing slash", BASE ",'time_zone':'Europe/'}", NULL, NULL, 0, "", API_E_VALIDATION,
     "time_zone"},
    {"tz directory", BASE ",'time_zone':'Europe'}", NULL, NULL, 0, "", API_E_VALIDATION,
     "time_zone"},
    {"tz data file", BASE ",'time_zone':'zone.tab'}", NULL, NULL, 0, "", API_E_VALIDATION,
     "time_zone"},
    {"tz localtime", BASE ",'time_zone':'localtime'}", NULL, NULL, 0, "", API_E_VALIDATION,
     "time_zone"},
    {"tz empty", BASE ",'time_zone':''}", NULL, NULL, 0, "", API_E_VALIDATION, "time_zone"},
    {"tz past limit", BASE ",'time_zone':'", "A", "", 65, "'}", API_E_VALIDATION, "time_zone"},
    {"tz number", BASE ",'time_zone':1}", NULL, NULL, 0, "", API_E_VALIDATION, "time_zone"},
    /* participants */
    {"participants at limit", BASE ",'participants':[", "{'id':'u#'}", ",", 500, "]}", API_E_NONE,
     NULL},
    {"participants past limit", BASE ",'participants':[", "{'id':'u#'}", ",", 501, "]}",
     API_E_VALIDATION, "participants"},
    {"participants object", BASE ",'participants':{}}", NULL, NULL, 0, "", API_E_VALIDATION,
     "participants"},
    {"participant string", BASE ",'participants':['u1']}", NULL, NULL, 0, "", API_E_VALIDATION,
     "participants[0]"},
    {"participant unknown field", BASE ",'participants':[{'id':'a'},{'id':'b','role':'x'}]}", NULL,
     NULL, 0, "", API_E_VALIDATION, "participants[1].role"},
    {"participant id missing", BASE ",'participants':[{'name':'Ada'}]}", NULL, NULL, 0, "",
     API_E_VALIDATION, "participants[0].id"},
    {"participant id empty", BASE ",'participants':[{'id':''}]}", NULL, NULL, 0, "",
     API_E_VALIDATION, "participants[0].id"},
    {"participant id number", BASE ",'participants':[{'id':7}]}", NULL, NULL, 0, "",
     API_E_VALIDATION, "participants[0].id"},
    {"participant id at limit", BASE ",'participants':[{'id':'", "i", "", 200, "'}]}", API_E_NONE,
     NULL},
    {"participant id past limit", BASE ",'participants':[{'id':'", "i", "", 201, "'}]}",
     API_E_VALIDATION, "participants[0].id"},
    {"participant name at limit", BASE ",'participants':[{'id':'a','name':'", "n", "", 200, "'}]}",
     API_E_NONE, NULL},
    {"participant name past limit", BASE ",'participants':[{'id':'a','name':'", "n", "", 201,
     "'}]}", API_E_VALIDATION, "participants[0].name"},
    {"participant email at limit", BASE ",'participants':[{'id':'a','email':'", "e", "", 242,
     "@example.com'}]}", API_E_NONE, NULL},
    {"participant email past limit", BASE ",'participants':[{'id':'a','email':'", "e", "", 243,
     "@example.com'}]}", API_E_VALIDATION, "participants[0].email"},
    {"participant email no at", BASE ",'participants':[{'id':'a','email':'ada.example.com'}]}",
     NULL, NULL, 0, "", API_E_VALIDATION, "participants[0].email"},
    {"participant email no dot", BASE ",'participants':[{'id':'a','email':'ada@localhost'}]}", NULL,
     NULL, 0, "", API_E_VALIDATION, "participants[0].email"},
    {"participant email space", BASE ",'participants':[{'id':'a','email':'a da@example.com'}]}",
     NULL, NULL, 0, "", API_E_VALIDATION, "participants[0].email"},
    /* What the email channel could not write into a message (email_addr_ok). */
    {"participant email double dot",
     BASE ",'participants':[{'id':'a','email':'a..b@example.com'}]}", NULL, NULL, 0, "",
     API_E_VALIDATION, "participants[0].email"},
    {"participant email underscore domain",
     BASE ",'participants':[{'id':'a','email':'ada@mail_host.example.com'}]}", NULL, NULL, 0, "",
     API_E_VALIDATION, "participants[0].email"},
    {"participant email hyphen label",
     BASE ",'participants':[{'id':'a','email':'ada@example-.com'}]}", NULL, NULL, 0, "",
     API_E_VALIDATION, "participants[0].email"},
    {"participant email non-ASCII",
     BASE ",'participants':[{'id':'a','email':'j\xc3\xb6rg@example.com'}]}", NULL, NULL, 0, "",
     API_E_VALIDATION, "participants[0].email"},
    {"participant email quoted",
     BASE ",'participants':[{'id':'a','email':'\\\"ada\\\"@example.com'}]}", NULL, NULL, 0, "",
     API_E_VALIDATION, "participants[0].email"},
    {"participant email two ats", BASE ",'participants':[{'id':'a','email':'a@b@example.com'}]}",
     NULL, NULL, 0, "", API_E_VALIDATION, "participants[0].email"},
    {"participant email null", BASE ",'participants':[{'id':'a','email':null,'name':null}]}", NULL,
     NULL, 0, "", API_E_NONE, NULL},
    {"participant duplicate id", BASE ",'participants':[{'id':'a'},{'id':'b'},{'id':'a'}]}", NULL,
     NULL, 0, "", API_E_VALIDATION, "participants[2].id"},
    /* reminders */
    {"reminders empty", BASE ",'reminders':[]}", NULL, NULL, 0, "", API_E_NONE, NULL},
    {"reminders at limit", BASE ",'reminders':[", "{'minutes_before':#}", ",", 5, "]}", API_E_NONE,
     NULL},
    {"reminders past limit", BASE ",'reminders':[", "{'minutes_before':#}", ",", 6, "]}",
     API_E_VALIDATION, "reminders"},
    {"minutes at limit", BASE ",'reminders':[{'minutes_before':40320}]}", NULL, NULL, 0, "",
     API_E_NONE, NULL},
    {"minutes past limit", BASE ",'reminders':[{'minutes_before':40321}]}", NULL, NULL, 0, "",
     API_E_VALIDATION, "reminders[0].minutes_before"},
    {"minutes negative", BASE ",'reminders':[{'minutes_before':-1}]}", NULL, NULL, 0, "",
     API_E_VALIDATION, "reminders[0].minutes_before"},
    {"minutes real", BASE ",'reminders':[{'minutes_before':5},{'minutes_before':5.0}]}", NULL, NULL,
     0, "", API_E_VALIDATION, "reminders[1].minutes_before"},
    {"minutes string", BASE ",'reminders':[{'minutes_before':'5'}]}", NULL, NULL, 0, "",
     API_E_VALIDATION, "reminders[0].minutes_before"},
    {"minutes bool", BASE ",'reminders':[{'minutes_before':true}]}", NULL, NULL, 0, "",
     API_E_VALIDATION, "reminders[0].minutes_before"},
    {"minutes huge", BASE ",'reminders':[{'minutes_before':99999999999999}]}", NULL, NULL, 0, "",
     API_E_VALIDATION, "reminders[0].minutes_before"},
    {"minutes missing", BASE ",'reminders':[{}]}", NULL, NULL, 0, "", API_E_VALIDATION,
     "reminders[0].minutes_before"},
    {"reminder unknown field", BASE ",'reminders':[{'minutes_before':5,'channel':'sms'}]}", NULL,
     NULL, 0, "", API_E_VALIDATION, "reminders[0].channel"},
    {"reminder number", BASE ",'reminders':[5]}", NULL, NULL, 0, "", API_E_VALIDATION,
     "reminders[0]"},
    {"reminders duplicate", BASE ",'reminders':[{'minutes_before':10},{'minutes_before':10}]}",
     NULL, NULL, 0, "", API_E_VALIDATION, "reminders[1].minutes_before"},
    {"reminders object", BASE ",'reminders':{'minutes_before':5}}", NULL, NULL, 0, "",
     API_E_VALIDATION, "reminders"},
    /* metadata: {"k":"<n>"} is n + 8 bytes compact */
    {"metadata at limit", BASE ",'metadata':{'k':'", "m", "", 16376, "'}}", API_E_NONE, NULL},
    {"metadata past limit", BASE ",'metadata':{'k':'", "m", "", 16377, "'}}", API_E_VALIDATION,
     "metadata"},
    {"metadata spaces do not count", BASE ",'metadata':{ 'k' : '", "m", "", 16376, "' }}",
     API_E_NONE, NULL},
    {"metadata array", BASE ",'metadata':[]}", NULL, NULL, 0, "", API_E_VALIDATION, "metadata"},
    {"metadata string", BASE ",'metadata':'x'}", NULL, NULL, 0, "", API_E_VALIDATION, "metadata"},
    /* unknown and read-only fields */
    {"unknown top field", BASE ",'x':1}", NULL, NULL, 0, "", API_E_VALIDATION, "x"},
    {"read-only id", BASE ",'id':'123e4567-e89b-42d3-a456-426614174000'}", NULL, NULL, 0, "",
     API_E_VALIDATION, "id"},
    {"read-only version", BASE ",'version':1}", NULL, NULL, 0, "", API_E_VALIDATION, "version"},
    {"long unknown name is cut", BASE ",'", "z", "", 100, "':1}", API_E_VALIDATION,
     "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"},
};

/* Swaps ' and " so table bodies can be written without escapes. */
static void
q(char *s)
{
    for (; *s; s++)
        *s = *s == '\'' ? '"' : *s;
}

static char *
build(size_t i)
{
    char *body = malloc(BODY_MAX), *p = body;

    p += sprintf(p, "%s", cases[i].head);
    for (int n = 0; n < cases[i].count; n++) {
        if (n > 0)
            p += sprintf(p, "%s", cases[i].sep);
        for (const char *u = cases[i].unit; *u; u++) {
            if (*u == '#')
                p += sprintf(p, "%d", n);
            else
                *p++ = *u;
        }
    }
    sprintf(p, "%s", cases[i].tail);
    q(body);
    return body;
}

static bool
has_field(const struct codec_errors *errs, const char *field)
{
    for (size_t i = 0; i < errs->n; i++) {
        if (strcmp(errs->e[i].field, field) == 0)
            return true;
    }
    return false;
}

/* Decodes a body; returns API_E_BAD_JSON when it does not even parse. */
static enum api_error
decode(const char *body, size_t len, struct meeting *m, struct codec_errors *errs)
{
    char err[ERR_MAX];
    json_t *doc = codec_parse(body, len, err, sizeof(err));
    enum api_error got;

    errs->n = 0;
    if (doc == NULL)
        return API_E_BAD_JSON;
    got = codec_meeting_decode(doc, m, errs);
    json_decref(doc);
    return got;
}

static void
check_table(void)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *body = build(i);
        struct meeting m;
        struct codec_errors errs;
        enum api_error got;

        meeting_init(&m);
        got = decode(body, strlen(body), &m, &errs);
        CHECK(got == cases[i].want, "%s: got %s want %s (%s: %s)", cases[i].name,
              api_errors_code(got), api_errors_code(cases[i].want), errs.n ? errs.e[0].field : "-",
              errs.n ? errs.e[0].message : "-");
        CHECK(got != cases[i].want || cases[i].field == NULL || has_field(&errs, cases[i].field),
              "%s: no error for field \"%s\" (first: %s)", cases[i].name, cases[i].field,
              errs.n ? errs.e[0].field : "-");
        for (size_t k = 0; k < errs.n; k++)
            CHECK_EXPR(errs.e[k].message[0] != '\0' && strlen(errs.e[k].message) < 100);
        meeting_fini(&m);
        free(body);
    }
}

/* Bodies the table cannot hold: raw NUL bytes, nesting depth, parse error texts. */
static void
check_parse(void)
{
    static const char raw_nul[] = "{\"title\":\"a\0b\",\"starts_at\":\"2030-01-01T09:00:00Z\"}";
    char err[ERR_MAX], *deep = malloc(2 * (CODEC_DEPTH_MAX + 1) + 1);
    json_t *v;

    CHECK_EXPR(codec_parse(raw_nul, sizeof(raw_nul) - 1, err, sizeof(err)) == NULL);
    CHECK_EXPR(codec_parse("{}\0", 3, err, sizeof(err)) == NULL);
    CHECK_EXPR(codec_parse("", 0, err, sizeof(err)) == NULL && err[0] != '\0');
    CHECK_EXPR(codec_parse(NULL, 0, NULL, 0) == NULL);
    for (int depth = CODEC_DEPTH_MAX; depth <= CODEC_DEPTH_MAX + 1; depth++) {
        memset(deep, '[', (size_t)depth);
        memset(deep + depth, ']', (size_t)depth);
        v = codec_parse(deep, 2 * (size_t)depth, err, sizeof(err));
        CHECK_EXPR((v != NULL) == (depth <= CODEC_DEPTH_MAX));
        json_decref(v);
    }
    free(deep);
    /* The reason must not quote the client's bytes, and must stay printable ASCII. */
    CHECK_EXPR(codec_parse("{\"a\":secretword}", 16, err, sizeof(err)) == NULL);
    CHECK_EXPR(strstr(err, "secretword") == NULL && strstr(err, "line 1") != NULL);
    CHECK_EXPR(codec_parse("{\"a\":\"\xff\xfe\"}", 8, err, sizeof(err)) == NULL);
    for (const char *c = err; *c; c++)
        CHECK_EXPR(*c >= 0x20 && *c < 0x7f);
    v = codec_parse("{\"a\":1} ", 8, err, sizeof(err));
    CHECK_EXPR(v != NULL && err[0] == '\0');
    json_decref(v);
}

/* Several bad fields are all reported; more than CODEC_FIELD_ERRORS_MAX are capped. */
static void
check_error_collection(void)
{
    char body[BODY_MAX], *p = body;
    struct meeting m;
    struct codec_errors errs;

    strcpy(body, "{'title':'','starts_at':'x','location':1,'reminders':[{'minutes_before':-1}]}");
    q(body);
    meeting_init(&m);
    CHECK_EXPR(decode(body, strlen(body), &m, &errs) == API_E_VALIDATION && errs.n == 4);
    meeting_fini(&m);

    p += sprintf(p, "{");
    for (int i = 0; i < 40; i++)
        p += sprintf(p, "%s\"x%d\":1", i ? "," : "", i);
    sprintf(p, "}");
    meeting_init(&m);
    CHECK_EXPR(decode(body, strlen(body), &m, &errs) == API_E_VALIDATION);
    CHECK_EXPR(errs.n == CODEC_FIELD_ERRORS_MAX);
    meeting_fini(&m);
}

/* Defaults, sorting, fire times and the canonical participants text. */
static void
check_decoded_values(void)
{
    static const struct {
        const char *tail;
        size_t n;
        int minutes[MEETING_REMINDERS_MAX];
    } rems[] = {
        {"}", 1, {5}},
        {",'reminders':null}", 1, {5}},
        {",'reminders':[]}", 0, {0}},
        {",'reminders':[{'minutes_before':5},{'minutes_before':60},{'minutes_before':0}]}",
         3,
         {60, 5, 0}},
    };
    char body[BODY_MAX];
    struct meeting m;
    struct codec_errors errs;

    for (size_t i = 0; i < sizeof(rems) / sizeof(rems[0]); i++) {
        snprintf(body, sizeof(body), "%s%s", BASE, rems[i].tail);
        q(body);
        meeting_init(&m);
        CHECK_EXPR(decode(body, strlen(body), &m, &errs) == API_E_NONE);
        CHECK_EXPR(m.n_reminders == rems[i].n);
        for (size_t k = 0; k < m.n_reminders; k++) {
            CHECK_EXPR(m.reminders[k].minutes_before == rems[i].minutes[k]);
            CHECK_EXPR(m.reminders[k].fire_at_ms ==
                       1893488400000LL - rems[i].minutes[k] * 60000LL); /* 2030-01-01T09:00Z */
            CHECK_EXPR(m.reminders[k].status == REMINDER_PENDING && m.reminders[k].id == 0);
        }
        CHECK_EXPR(strcmp(m.participants_json, "[]") == 0 && m.metadata_json == NULL);
        CHECK_EXPR(m.description == NULL && m.location == NULL && m.time_zone == NULL);
        CHECK_EXPR(!m.has_ends_at);
        meeting_fini(&m);
    }
    snprintf(body, sizeof(body), "%s",
             BASE ",'participants':[{'email':'ada@example.com',"
                  "'name':'Ada','id':'u1'},{'name':null,'id':'u2'}]}");
    q(body);
    meeting_init(&m);
    CHECK_EXPR(decode(body, strlen(body), &m, &errs) == API_E_NONE);
    CHECK_EXPR(
        m.participants_json != NULL &&
        strcmp(
            m.participants_json,
            "[{\"id\":\"u1\",\"name\":\"Ada\",\"email\":\"ada@example.com\"},{\"id\":\"u2\"}]") ==
            0);
    meeting_fini(&m);
}

/* A zone directory of our own (TZDIR): the 64-byte limit and a TZif file that must parse. */
static void
check_tzdir(void)
{
    char dir[] = "/tmp/test_codec_tzXXXXXX", path[256], body[512];
    static const char *const files[] = {
        "ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ/Zone", "Fake/Plain"};
    /* A real TZif file (the system's UTC) under the longest name, and one that is not. */
    static const char *const sources[] = {"/usr/share/zoneinfo/UTC", NULL};
    struct meeting m;
    struct codec_errors errs;
    FILE *f;

    CHECK_EXPR(strlen(files[0]) == MEETING_TIME_ZONE_MAX);
    if (mkdtemp(dir) == NULL)
        return;
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "%s/%.*s", dir, (int)(strchr(files[i], '/') - files[i]),
                 files[i]);
        mkdir(path, 0700);
        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        f = fopen(path, "w");
        if (f != NULL) {
            FILE *src = sources[i] ? fopen(sources[i], "rb") : NULL;
            size_t n;
            char chunk[256];

            if (src == NULL)
                fputs("hello", f);
            while (src != NULL && (n = fread(chunk, 1, sizeof chunk, src)) > 0)
                fwrite(chunk, 1, n, f);
            if (src != NULL)
                fclose(src);
            fclose(f);
        }
    }
    setenv("TZDIR", dir, 1);
    for (int i = 0; i < 3; i++) {
        /* A system zone this program has not read yet: not in our directory (zones, once read, are
         * kept for the life of the process). */
        const char *tz = i < 2 ? files[i] : "Pacific/Fiji";

        snprintf(body, sizeof(body), BASE ",'time_zone':'%s'}", tz);
        q(body);
        meeting_init(&m);
        CHECK_EXPR(decode(body, strlen(body), &m, &errs) ==
                   (i == 0 ? API_E_NONE : API_E_VALIDATION));
        meeting_fini(&m);
    }
    unsetenv("TZDIR");
    for (int i = 1; i >= 0; i--) {
        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        unlink(path);
        *strrchr(path, '/') = '\0';
        rmdir(path);
    }
    rmdir(dir);
}

/* RFC 7396 appendix A, plus a check that neither input is modified. */
static const struct {
    const char *target, *patch, *want;
} patches[] = {
    {"{'a':'b'}", "{'a':'c'}", "{'a':'c'}"},
    {"{'a':'b'}", "{'b':'c'}", "{'a':'b','b':'c'}"},
    {"{'a':'b'}", "{'a':null}", "{}"},
    {"{'a':'b','b':'c'}", "{'a':null}", "{'b':'c'}"},
    {"{'a':['b']}", "{'a':'c'}", "{'a':'c'}"},
    {"{'a':'c'}", "{'a':['b']}", "{'a':['b']}"},
    {"{'a':{'b':'c'}}", "{'a':{'b':'d','c':null}}", "{'a':{'b':'d'}}"},
    {"{'a':[{'b':'c'}]}", "{'a':[1]}", "{'a':[1]}"},
    {"['a','b']", "['c','d']", "['c','d']"},
    {"{'a':'b'}", "['c']", "['c']"},
    {"{'a':'foo'}", "null", "null"},
    {"{'a':'foo'}", "'bar'", "'bar'"},
    {"{'e':null}", "{'a':1}", "{'e':null,'a':1}"},
    {"[1,2]", "{'a':'b','c':null}", "{'a':'b'}"},
    {"{}", "{'a':{'bb':{'ccc':null}}}", "{'a':{'bb':{}}}"},
    {"{'a':1}", "{}", "{'a':1}"},
    {"{'a':{'x':1,'y':2}}", "{'a':{'y':null,'z':3}}", "{'a':{'x':1,'z':3}}"},
};

static json_t *
load_q(const char *text)
{
    char buf[ERR_MAX];

    snprintf(buf, sizeof(buf), "%s", text);
    q(buf);
    return json_loads(buf, JSON_DECODE_ANY, NULL);
}

static void
check_merge_patch(void)
{
    for (size_t i = 0; i < sizeof(patches) / sizeof(patches[0]); i++) {
        json_t *t = load_q(patches[i].target), *p = load_q(patches[i].patch);
        json_t *want = load_q(patches[i].want), *got;
        char *t_before = codec_dump(t), *p_before = codec_dump(p), *t_after, *p_after;

        got = codec_merge_patch(t, p);
        t_after = codec_dump(t);
        p_after = codec_dump(p);
        char *g = got ? codec_dump(got) : NULL;
        CHECK(got != NULL && json_equal(got, want), "merge %s + %s: got %s", patches[i].target,
              patches[i].patch, g ? g : "NULL");
        free(g);
        CHECK_EXPR(strcmp(t_before, t_after) == 0 && strcmp(p_before, p_after) == 0);
        CHECK_EXPR(got != t && (got != p || json_is_null(p))); /* null is a singleton */
        free(t_before);
        free(p_before);
        free(t_after);
        free(p_after);
        json_decref(t);
        json_decref(p);
        json_decref(want);
        json_decref(got);
    }
}

#define FULL_IN                                                                                    \
    "{'title':'Weekly sync','description':'d\\n','starts_at':'2026-11-23T09:00:00+01:00',"         \
    "'ends_at':'2026-11-23T09:30:00.5+01:00','time_zone':'Europe/Berlin','location':'Room 1',"     \
    "'participants':[{'id':'u1','name':'Ada','email':'ada@example.com'},{'id':'u2'}],"             \
    "'reminders':[{'minutes_before':5},{'minutes_before':60}],'metadata':{'k':[1,{'x':null}]}}"

static const char full_input_doc[] =
    "{'title':'Weekly sync','description':'d\\n','starts_at':'2026-11-23T08:00:00.000Z',"
    "'ends_at':'2026-11-23T08:30:00.500Z','time_zone':'Europe/Berlin','location':'Room 1',"
    "'participants':[{'id':'u1','name':'Ada','email':'ada@example.com'},{'id':'u2'}],"
    "'reminders':[{'minutes_before':60},{'minutes_before':5}],'metadata':{'k':[1,{'x':null}]},"
    "'recurrence':null}";

static const char full_output[] =
    "{'id':'123e4567-e89b-42d3-a456-426614174000','title':'Weekly sync','description':'d\\n',"
    "'starts_at':'2026-11-23T08:00:00.000Z','ends_at':'2026-11-23T08:30:00.500Z',"
    "'time_zone':'Europe/Berlin','starts_at_local':'2026-11-23T09:00:00.000+01:00',"
    "'ends_at_local':'2026-11-23T09:30:00.500+01:00','location':'Room 1',"
    "'participants':[{'id':'u1','name':'Ada','email':'ada@example.com'},{'id':'u2'}],"
    "'reminders':[{'id':'9007199254740993','minutes_before':60,"
    "'channels':['webhook','stream','push'],'fire_at':"
    "'2026-11-23T07:00:00.000Z','status':'fired','fired_at':'2026-11-23T07:00:00.012Z'},"
    "{'id':'8','minutes_before':5,'channels':['webhook','stream','push'],"
    "'fire_at':'2026-11-23T07:55:00.000Z','status':'pending',"
    "'fired_at':null}],'organizer_id':null,'metadata':{'k':[1,{'x':null}]},'recurrence':null,"
    "'version':3,"
    "'created_at':'2026-01-01T00:00:00.000Z','updated_at':'2026-01-02T00:00:00.000Z'}";

static const char minimal_output[] =
    "{'id':'','title':'t','description':null,'starts_at':'2030-01-01T09:00:00.000Z',"
    "'ends_at':null,'time_zone':null,'starts_at_local':null,'ends_at_local':null,"
    "'location':null,'participants':[],'reminders':[],"
    "'organizer_id':null,'metadata':null,'recurrence':null,'version':0,"
    "'created_at':'1970-01-01T00:00:00.000Z',"
    "'updated_at':'1970-01-01T00:00:00.000Z'}";

static void
expect_dump(const json_t *v, const char *want_q, const char *what)
{
    char want[BODY_MAX], *got = codec_dump(v);

    snprintf(want, sizeof(want), "%s", want_q);
    q(want);
    CHECK(got != NULL && strcmp(got, want) == 0, "%s:\n got  %s\n want %s", what,
          got ? got : "NULL", want);
    free(got);
}

/* decode -> input doc -> decode gives the same document; encode writes the contract's order. */
static void
check_encode_round_trip(void)
{
    char body[BODY_MAX], *text;
    struct meeting m, again;
    struct codec_errors errs;
    json_t *doc, *out;

    snprintf(body, sizeof(body), "%s", FULL_IN);
    q(body);
    meeting_init(&m);
    CHECK_EXPR(decode(body, strlen(body), &m, &errs) == API_E_NONE);
    doc = codec_meeting_input_doc(&m);
    expect_dump(doc, full_input_doc, "input doc");
    text = codec_dump(doc);
    meeting_init(&again);
    CHECK_EXPR(text && decode(text, strlen(text), &again, &errs) == API_E_NONE);
    json_decref(doc);
    doc = codec_meeting_input_doc(&again);
    expect_dump(doc, full_input_doc, "input doc after round trip");
    json_decref(doc);
    free(text);
    meeting_fini(&again);

    strcpy(m.id, "123e4567-e89b-42d3-a456-426614174000");
    m.version = 3;
    m.created_at_ms = 1767225600000LL;
    m.updated_at_ms = 1767312000000LL;
    m.reminders[0].id = 9007199254740993LL; /* above 2^53: why ids are strings */
    m.reminders[0].status = REMINDER_FIRED;
    m.reminders[0].fired_at_ms = m.reminders[0].fire_at_ms + 12;
    m.reminders[1].id = 8;
    out = codec_meeting_encode(&m);
    expect_dump(out, full_output, "encode full");
    json_decref(out);
    meeting_fini(&m);

    snprintf(body, sizeof(body), "%s", BASE ",'reminders':[]}");
    q(body);
    meeting_init(&m);
    CHECK_EXPR(decode(body, strlen(body), &m, &errs) == API_E_NONE);
    out = codec_meeting_encode(&m);
    expect_dump(out, minimal_output, "encode minimal");
    json_decref(out);
    meeting_fini(&m);
}

/* PATCH flow: input doc + merge patch -> decode. */
static void
check_patch_flow(void)
{
    char body[BODY_MAX];
    struct meeting m, patched;
    struct codec_errors errs;
    json_t *doc, *patch, *merged;

    snprintf(body, sizeof(body), "%s", FULL_IN);
    q(body);
    meeting_init(&m);
    CHECK_EXPR(decode(body, strlen(body), &m, &errs) == API_E_NONE);
    doc = codec_meeting_input_doc(&m);
    patch = load_q("{'title':'New','location':null,'reminders':null,'metadata':{'k':null}}");
    merged = codec_merge_patch(doc, patch);
    meeting_init(&patched);
    CHECK_EXPR(codec_meeting_decode(merged, &patched, &errs) == API_E_NONE);
    CHECK_EXPR(patched.title && strcmp(patched.title, "New") == 0 && patched.location == NULL);
    CHECK_EXPR(patched.n_reminders == 1 && patched.reminders[0].minutes_before == 5);
    CHECK_EXPR(patched.metadata_json && strcmp(patched.metadata_json, "{}") == 0);
    CHECK_EXPR(patched.starts_at_ms == m.starts_at_ms);
    meeting_fini(&patched);
    json_decref(merged);
    json_decref(patch);

    patch = load_q("{'id':'x'}"); /* read-only fields stay errors through a patch */
    merged = codec_merge_patch(doc, patch);
    meeting_init(&patched);
    CHECK_EXPR(codec_meeting_decode(merged, &patched, &errs) == API_E_VALIDATION);
    CHECK_EXPR(has_field(&errs, "id"));
    meeting_fini(&patched);
    json_decref(merged);
    json_decref(patch);
    json_decref(doc);
    meeting_fini(&m);
}

/* PushSubscription.toJSON() bodies: the shape only (webpush.c checks the keys themselves). */
static void
check_push_subscription(void)
{
    static const struct {
        const char *body;      /* quotes as ' */
        const char *bad_field; /* NULL: accepted */
        int64_t expires_at_ms;
    } subs[] = {
        {"{'endpoint':'https://push.example/"
         "x','expirationTime':null,'keys':{'p256dh':'BA','auth':'AA'}}",
         NULL, 0},
        {"{'endpoint':'https://push.example/x','keys':{'p256dh':'BA','auth':'AA'},'extra':1}", NULL,
         0},
        {"{'endpoint':'https://p/"
         "x','expirationTime':1767225600000,'keys':{'p256dh':'B','auth':'A'}}",
         NULL, 1767225600000LL},
        {"{'keys':{'p256dh':'BA','auth':'AA'}}", "endpoint", 0},
        {"{'endpoint':'','keys':{'p256dh':'BA','auth':'AA'}}", "endpoint", 0},
        {"{'endpoint':7,'keys':{'p256dh':'BA','auth':'AA'}}", "endpoint", 0},
        {"{'endpoint':'https://p/x'}", "keys", 0},
        {"{'endpoint':'https://p/x','keys':[]}", "keys", 0},
        {"{'endpoint':'https://p/x','keys':{'auth':'AA'}}", "keys.p256dh", 0},
        {"{'endpoint':'https://p/x','keys':{'p256dh':'BA','auth':null}}", "keys.auth", 0},
        {"{'endpoint':'https://p/x','expirationTime':'soon','keys':{'p256dh':'B','auth':'A'}}",
         "expirationTime", 0},
        {"{'endpoint':'https://p/x','expirationTime':-1,'keys':{'p256dh':'B','auth':'A'}}",
         "expirationTime", 0},
        {"{'endpoint':'https://p/x','expirationTime':1e300,'keys':{'p256dh':'B','auth':'A'}}",
         "expirationTime", 0},
        {"[]", "", 0},
    };

    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
        struct codec_push_subscription out;
        struct codec_errors errs = {0};
        json_t *doc = load_q(subs[i].body);
        enum api_error e = codec_push_subscription_decode(doc, &out, &errs);
        if (subs[i].bad_field == NULL) {
            CHECK_EXPR(e == API_E_NONE && out.endpoint && out.p256dh && out.auth);
            CHECK_EXPR(out.expires_at_ms == subs[i].expires_at_ms);
        } else {
            CHECK_EXPR(e == API_E_VALIDATION && has_field(&errs, subs[i].bad_field));
        }
        codec_push_subscription_fini(&out);
        json_decref(doc);
    }
    /* A key text past CODEC_PUSH_KEY_TEXT_MAX is refused before anyone decodes it. */
    char body[BODY_MAX];
    snprintf(body, sizeof body,
             "{\"endpoint\":\"https://p/x\",\"keys\":{\"p256dh\":\"%0*d\",\"auth\":\"A\"}}",
             CODEC_PUSH_KEY_TEXT_MAX + 1, 0);
    struct codec_push_subscription out;
    struct codec_errors errs = {0};
    json_t *doc = json_loads(body, 0, NULL);
    CHECK_EXPR(codec_push_subscription_decode(doc, &out, &errs) == API_E_VALIDATION &&
               has_field(&errs, "keys.p256dh"));
    codec_push_subscription_fini(&out);
    json_decref(doc);
}

/* The push payload: small, the title cut, "url" only from an http(s) metadata.url. */
static void
check_push_payload(void)
{
    struct meeting m;
    struct occurrence o = {5, 1767225300000LL, 0};
    char title[300];
    int64_t ms = 0;

    meeting_init(&m);
    strcpy(m.id, "123e4567-e89b-42d3-a456-426614174000");
    memset(title, 'x', sizeof title - 1);
    title[sizeof title - 1] = '\0';
    m.title = strdup(title);
    m.starts_at_ms = 1767225600000LL;
    m.metadata_json = strdup("{\"url\":\"https://app.example/m/1\"}");
    m.n_reminders = 1;
    m.reminders[0].id = 5;
    m.reminders[0].minutes_before = 5;
    char *text = codec_push_payload(&m, &o);
    json_t *doc = text ? json_loads(text, 0, NULL) : NULL;
    CHECK_EXPR(doc != NULL);
    CHECK_EXPR(strlen(json_string_value(json_object_get(doc, "title"))) == CODEC_PUSH_TITLE_MAX);
    CHECK_EXPR(strcmp(json_string_value(json_object_get(doc, "url")), "https://app.example/m/1") ==
               0);
    CHECK_EXPR(json_integer_value(json_object_get(doc, "minutes_before")) == 5);
    CHECK_EXPR(codec_push_starts_at(text, &ms) == 0 && ms == m.starts_at_ms);
    json_decref(doc);
    free(text);
    free(m.metadata_json);
    m.metadata_json = strdup("{\"url\":\"javascript:alert(1)\"}");
    text = codec_push_payload(&m, &o);
    CHECK_EXPR(text != NULL && strstr(text, "\"url\"") == NULL);
    free(text);
    /* A URL of the longest length whose bytes JSON writes as six each, a title of the longest
     * length made of the same, still fit a push message: such a URL is left out. */
    static char meta[32 + 6 * CODEC_PUSH_URL_MAX];
    strcpy(meta, "{\"url\":\"https://x/");
    for (size_t i = strlen("https://x/"); i < CODEC_PUSH_URL_MAX; i++)
        strcat(meta, "\\u0001");
    strcat(meta, "\"}");
    free(m.metadata_json);
    m.metadata_json = strdup(meta);
    memset(title, '\x01', CODEC_PUSH_TITLE_MAX);
    title[CODEC_PUSH_TITLE_MAX] = '\0';
    free(m.title);
    m.title = strdup(title);
    text = codec_push_payload(&m, &o);
    CHECK(text != NULL && strstr(text, "\"url\"") == NULL, "a URL JSON escapes was kept: %zu bytes",
          text ? strlen(text) : 0);
    CHECK(text != NULL && strlen(text) <= WEBPUSH_PLAINTEXT_MAX, "%zu bytes",
          text ? strlen(text) : 0);
    free(text);
    CHECK_EXPR(codec_push_starts_at("{}", &ms) == -1 && codec_push_starts_at("nope", &ms) == -1);
    meeting_fini(&m);
}

/* A meeting's people, parsed once: participants by id (with or without a name), the organizer
 * only for codec_people_has, ids sorted so that lookups do not depend on the order. */
static void
check_people(void)
{
    struct meeting m;
    const char *name = "unset";

    meeting_init(&m);
    m.participants_json = strdup("[{\"id\":\"zoe\",\"name\":\"Zo\u00eb\"},{\"id\":\"ada\"},"
                                 "{\"id\":\"mia\",\"name\":\"Mia\"},{\"name\":\"no id\"}]");
    m.organizer_id = strdup("org");
    struct codec_people *ps = codec_people_parse(&m);
    CHECK_EXPR(ps != NULL);
    CHECK_EXPR(codec_people_participant(ps, "zoe", &name) && strcmp(name, "Zo\xc3\xab") == 0);
    CHECK_EXPR(codec_people_participant(ps, "ada", &name) && name == NULL);
    CHECK_EXPR(codec_people_participant(ps, "mia", NULL));
    CHECK_EXPR(!codec_people_participant(ps, "org", &name) && name == NULL);
    CHECK_EXPR(!codec_people_participant(ps, "no id", NULL) && !codec_people_has(ps, ""));
    CHECK_EXPR(codec_people_has(ps, "org") && codec_people_has(ps, "ada"));
    CHECK_EXPR(!codec_people_has(ps, "bob") && !codec_people_has(ps, "Ada"));
    CHECK_EXPR(codec_people_in_meeting(&m, "mia") && !codec_people_in_meeting(&m, "bob"));
    codec_people_free(ps);
    free(m.participants_json);
    m.participants_json = strdup("not json");
    CHECK_EXPR(codec_people_parse(&m) == NULL && !codec_people_in_meeting(&m, "ada"));
    free(m.participants_json);
    m.participants_json = NULL; /* none: only the organizer */
    ps = codec_people_parse(&m);
    CHECK_EXPR(ps != NULL && codec_people_has(ps, "org") &&
               !codec_people_participant(ps, "org", NULL));
    codec_people_free(ps);
    meeting_fini(&m);
}

/* One instant as the zone's wall clock with its offset. Known offsets of the system zoneinfo
 * (Debian's tzdata, which the suite's other tz tests read too): summer and winter in Paris, a
 * half-hour zone, a 45-minute zone, and a zone before 1900 whose offset has seconds (shown at the
 * minute below, the same instant). */
static void
check_local_at(const char *zone, int64_t ms, const char *want)
{
    json_t *v = codec_local_time(zone, ms);
    CHECK(json_is_string(v) && strcmp(json_string_value(v), want) == 0,
          "%s at %lld ms: got %s want %s", zone, (long long)ms,
          json_is_string(v) ? json_string_value(v) : "(not a string)", want);
    json_decref(v);
}

static void
check_local_time(void)
{
    static const struct {
        const char *zone;
        const char *utc;
        const char *want;
    } local_cases[] = {
        {"Europe/Paris", "2026-12-07T08:00:00.250Z", "2026-12-07T09:00:00.250+01:00"},
        {"Europe/Paris", "2026-07-06T07:00:00.000Z", "2026-07-06T09:00:00.000+02:00"},
        {"America/St_Johns", "2026-01-05T12:30:00.000Z", "2026-01-05T09:00:00.000-03:30"},
        {"Asia/Kathmandu", "2026-01-05T03:15:00.000Z", "2026-01-05T09:00:00.000+05:45"},
        {"UTC", "2026-01-05T09:00:00.000Z", "2026-01-05T09:00:00.000+00:00"},
    };

    for (size_t i = 0; i < sizeof local_cases / sizeof local_cases[0]; i++) {
        int64_t ms;
        CHECK_EXPR(timefmt_parse(local_cases[i].utc, strlen(local_cases[i].utc), &ms) == 0);
        check_local_at(local_cases[i].zone, ms, local_cases[i].want);
    }
    /* Amsterdam Mean Time, +00:19:32 until 1937: 12:19:32 on the wall, shown as 12:19:00+00:19. */
    check_local_at("Europe/Amsterdam",
                   timefmt_days_from_civil(1900, 6, 1) * 86400000LL + 12 * 3600000LL,
                   "1900-06-01T12:19:00.000+00:19");
    json_t *none = codec_local_time(NULL, 0), *unknown = codec_local_time("Nowhere/Atlantis", 0);
    CHECK_EXPR(json_is_null(none) && json_is_null(unknown));
    json_decref(none);
    json_decref(unknown);
}

/* A webhook's recover body: since required, a time, not in the future; nothing else. */
static void
check_recover(void)
{
    static const int64_t now = 1900000000000; /* 2030-03-17T17:46:40Z */
    static const struct {
        const char *body;
        enum api_error want;
        const char *field;
    } recover_cases[] = {
        {"{\"since\":\"2030-03-17T17:46:40Z\"}", API_E_NONE, NULL}, /* now: at the bound */
        {"{\"since\":\"2001-01-01T00:00:00+02:00\"}", API_E_NONE, NULL},
        {"{\"since\":\"2030-03-17T17:46:40.001Z\"}", API_E_VALIDATION, "since"}, /* one past */
        {"{\"since\":\"2030-03-17T17:46:40\"}", API_E_VALIDATION, "since"},      /* no offset */
        {"{\"since\":5}", API_E_VALIDATION, "since"},
        {"{\"since\":null}", API_E_VALIDATION, "since"},
        {"{}", API_E_VALIDATION, "since"},
        {"{\"since\":\"2001-01-01T00:00:00Z\",\"x\":1}", API_E_VALIDATION, "x"},
        {"[]", API_E_VALIDATION, ""},
    };

    for (size_t i = 0; i < sizeof recover_cases / sizeof recover_cases[0]; i++) {
        struct codec_errors errs = {0};
        int64_t since = -1;
        json_t *doc = json_loads(recover_cases[i].body, 0, NULL);
        enum api_error got = codec_webhook_recover_decode(doc, now, &since, &errs);

        CHECK(got == recover_cases[i].want, "%s: %d", recover_cases[i].body, (int)got);
        if (recover_cases[i].field != NULL)
            CHECK(errs.n >= 1 && strcmp(errs.e[0].field, recover_cases[i].field) == 0,
                  "%s: field %s", recover_cases[i].body, errs.n ? errs.e[0].field : "(none)");
        else
            CHECK(errs.n == 0 && since >= 0 && since <= now, "%s: %lld", recover_cases[i].body,
                  (long long)since);
        json_decref(doc);
    }
}

int
main(void)
{
    check_table();
    check_parse();
    check_error_collection();
    check_decoded_values();
    check_tzdir();
    check_merge_patch();
    check_encode_round_trip();
    check_patch_flow();
    check_push_subscription();
    check_push_payload();
    check_people();
    check_local_time();
    check_recover();
    return check_summary("test_codec");
}
