/* test_http_framing.c -- the RFC 9112 framing verdicts over tables of request heads, a value
 * that is not NUL-terminated, and the refusals of raw request targets (%00 anywhere, %2F in the
 * path). The HTTP-level cases (raw sockets) are in tests/api/malformed.test.mjs. */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "http_framing.h"

#define FIELDS_MAX 4

static const struct {
    const char *what;
    bool http10;
    const char *fields[FIELDS_MAX][2]; /* name, value; a NULL name ends the list */
    bool ok;
} cases[] = {
    {"plain GET", false, {{"Host", "x"}}, true},
    {"HTTP/1.0 without Host", true, {{"Accept", "*/*"}}, true},
    {"HTTP/1.1 without Host", false, {{"Accept", "*/*"}}, false},
    {"two Host", false, {{"Host", "a"}, {"host", "b"}}, false},
    {"one length", false, {{"Host", "x"}, {"Content-Length", "12"}}, true},
    {"same length twice",
     false,
     {{"Host", "x"}, {"Content-Length", "12"}, {"content-length", "12"}},
     true},
    {"two lengths",
     false,
     {{"Host", "x"}, {"Content-Length", "12"}, {"Content-Length", "13"}},
     false},
    {"length with sign", false, {{"Host", "x"}, {"Content-Length", "+12"}}, false},
    {"length list", false, {{"Host", "x"}, {"Content-Length", "12, 12"}}, false},
    {"empty length", false, {{"Host", "x"}, {"Content-Length", ""}}, false},
    {"chunked", false, {{"Host", "x"}, {"Transfer-Encoding", "chunked"}}, true},
    {"Chunked", false, {{"Host", "x"}, {"Transfer-Encoding", " CHUNKED "}}, true},
    {"chunked and length",
     false,
     {{"Host", "x"}, {"Content-Length", "4"}, {"Transfer-Encoding", "chunked"}},
     false},
    {"gzip, chunked", false, {{"Host", "x"}, {"Transfer-Encoding", "gzip, chunked"}}, false},
    {"identity", false, {{"Host", "x"}, {"Transfer-Encoding", "identity"}}, false},
    {"chunked, chunked", false, {{"Host", "x"}, {"Transfer-Encoding", "chunked, chunked"}}, false},
    {"chunked in two fields",
     false,
     {{"Host", "x"}, {"Transfer-Encoding", "chunked"}, {"Transfer-Encoding", "chunked"}},
     false},
    {"chunked, gzip", false, {{"Host", "x"}, {"Transfer-Encoding", "chunked, gzip"}}, false},
    {"chunked with a parameter",
     false,
     {{"Host", "x"}, {"Transfer-Encoding", "chunked;q=1"}},
     false},
    {"empty list elements", false, {{"Host", "x"}, {"Transfer-Encoding", ", chunked,"}}, true},
    {"empty coding", false, {{"Host", "x"}, {"Transfer-Encoding", ""}}, false},
    {"chunked in HTTP/1.0", true, {{"Transfer-Encoding", "chunked"}}, false},
    {"space before colon", false, {{"Host", "x"}, {"Content-Length ", "4"}}, false},
    {"space in a name", false, {{"Host", "x"}, {"X A", "b"}}, false},
    {"empty name", false, {{"Host", "x"}, {"", "b"}}, false},
    {"CTL in a name", false, {{"Host", "x"}, {"X\x01", "b"}}, false},
    {"ESC in a value", false, {{"Host", "x"}, {"X-A", "a\x1b[31m"}}, false},
    {"CR in a value", false, {{"Host", "x"}, {"X-A", "a\rb"}}, false},
    {"DEL in a value", false, {{"Host", "x"}, {"X-A", "a\x7f"}}, false},
    {"tab and UTF-8 in a value", false, {{"Host", "x"}, {"X-A", "a\tb caf\xc3\xa9"}}, true},
};

static const struct {
    const char *target;
    bool refused;
} targets[] = {
    {"/v1/meetings", false},
    {"/v1/meetings/%00", true},
    {"/v1/meetings/abc%00def", true},
    {"/v1/meetings?cursor=%00", true},
    {"/v1/meetings?cursor=%0", false},
    {"/v1/meetings?cursor=%", false},
    {"/v1/meetings?cursor=%2500", false}, /* a literal "%00", encoded */
    {"/%20%00", true},
    {"/v1/meetings/x%2Foccurrences", true},
    {"/v1/meetings/x%2foccurrences", true},
    {"/v1/meetings%2F", true},
    {"/v1/meetings/%252F", false},        /* a literal "%2F", encoded */
    {"/v1/meetings?from=a%2Fb", false},   /* in the query a slash is data */
    {"/v1/meetings?x=1&y=%2F%2f", false}, /* however many */
    {"/v1/meetings/%2", false},
};

/* A field value is value_len bytes, not a C string: a Content-Length whose digits end the last
 * readable byte before an unmapped page is judged without a read past them (the crash of a read
 * to a NUL). */
static void
check_unterminated(void)
{
    long page = sysconf(_SC_PAGESIZE);
    char *p =
        mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    CHECK(p != MAP_FAILED, "mmap");
    if (p == MAP_FAILED)
        return;
    CHECK(mprotect(p + page, (size_t)page, PROT_NONE) == 0, "guard page");
    char *v = p + page - 2;
    memcpy(v, "12", 2);
    struct http_framing f = {0};
    const char *detail = NULL;
    http_framing_field(&f, "Host", 4, "x", 1);
    http_framing_field(&f, "Content-Length", 14, v, 2);
    CHECK(http_framing_verdict(&f, false, &detail) == API_E_NONE && strcmp(f.length, "12") == 0,
          "unterminated length: %s", detail ? detail : f.length);
    memcpy(v, "1x", 2);
    http_framing_field(&f, "Content-Length", 14, v, 2);
    CHECK(f.length_conflict, "unterminated \"1x\" refused");
    munmap(p, 2 * (size_t)page);
}

/* Heads laid out as libmicrohttpd 0.9.75 leaves them (http_framing.h): parsed in place, a NUL
 * over each CR and LF of a line end and over each field's colon, the value after the blanks that
 * follow the colon; a continuation line glued to a copy of the field's name, elsewhere. The real
 * parser meets the same heads in tests/api/malformed.test.mjs. */
#define LAYOUT_HEAD_MAX 256
#define LAYOUT_FIELDS_MAX 8

static const struct {
    const char *head;
    bool ok;
} layouts[] = {
    {"GET / HTTP/1.1\r\nHost: x\r\n\r\n", true},
    {"GET / HTTP/1.0\r\n\r\n", true},
    {"GET / HTTP/1.1\r\nHost:x\r\nX-E:\r\nX-T: a \t\r\n\r\n", true},
    {"GET / HTTP/1.1\nHost: x\r\n\r\n", false},
    {"GET / HTTP/1.1\r\nHost: x\nX-A: b\r\n\r\n", false},
    {"GET / HTTP/1.1\r\nHost: x\n\r\n", false},
    {"GET / HTTP/1.1\r\nHost: x\r\n\n", false},
    {"GET / HTTP/1.0\n\n", false},
    {"GET / HTTP/1.1\r\nX-A: a\r\n b\r\nHost: x\r\n\r\n", false},
    {"GET / HTTP/1.1\r\nHost: x\r\nX-A: a\r\n\tb\r\n\r\n", false},
};

struct layout {
    char buf[LAYOUT_HEAD_MAX], moved[LAYOUT_FIELDS_MAX][LAYOUT_HEAD_MAX];
    const char *version, *name[LAYOUT_FIELDS_MAX], *value[LAYOUT_FIELDS_MAX];
    size_t size, n;
};

/* The next line of l->buf from *at: its end as MHD finds it, CRLF or LF made NULs. */
static char *
next_line(struct layout *l, size_t *at)
{
    char *line = l->buf + *at, *lf = strchr(line, '\n');

    *at = (size_t)(lf - l->buf) + 1;
    if (lf > line && lf[-1] == '\r')
        lf[-1] = '\0';
    *lf = '\0';
    return line;
}

static void
layout_parse(struct layout *l, const char *head)
{
    size_t at = 0;
    char *line, *colon;

    memset(l, 0, sizeof *l);
    snprintf(l->buf, sizeof l->buf, "%s", head);
    line = next_line(l, &at);
    l->version = strrchr(line, ' ') + 1;
    while ((line = next_line(l, &at))[0] != '\0') {
        if (line[0] == ' ' || line[0] == '\t') { /* obs-fold: the name is copied and grows */
            char joined[LAYOUT_HEAD_MAX];        /* a second fold reads the copy it writes */
            snprintf(joined, sizeof joined, "%s%s", l->name[l->n - 1], line + 1);
            memcpy(l->moved[l->n - 1], joined, sizeof joined);
            l->name[l->n - 1] = l->moved[l->n - 1];
            continue;
        }
        colon = strchr(line, ':');
        *colon++ = '\0';
        colon += strspn(colon, " \t");
        l->name[l->n] = line;
        l->value[l->n++] = colon;
    }
    l->size = at;
}

static void
check_layouts(void)
{
    struct layout l;

    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++) {
        struct http_framing f = {0};
        const char *detail = NULL;
        layout_parse(&l, layouts[i].head);
        http_framing_lines_start(&f, l.buf, l.size, l.version + strlen(l.version));
        for (size_t k = 0; k < l.n; k++) {
            http_framing_field(&f, l.name[k], strlen(l.name[k]), l.value[k], strlen(l.value[k]));
            http_framing_line(&f, l.name[k], l.value[k], strlen(l.value[k]));
        }
        http_framing_lines_end(&f);
        enum api_error e = http_framing_verdict(&f, strstr(layouts[i].head, "HTTP/1.0"), &detail);
        CHECK((e == API_E_NONE) == layouts[i].ok, "layout %zu: verdict %d (%s)", i, e,
              detail ? detail : "none");
    }
}

int
main(void)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct http_framing f = {0};
        const char *detail = NULL;
        for (size_t k = 0; k < FIELDS_MAX && cases[i].fields[k][0] != NULL; k++) {
            const char *n = cases[i].fields[k][0], *v = cases[i].fields[k][1];
            http_framing_field(&f, n, strlen(n), v, strlen(v));
        }
        enum api_error e = http_framing_verdict(&f, cases[i].http10, &detail);
        CHECK((e == API_E_NONE) == cases[i].ok, "%s: verdict %d, want %s", cases[i].what, e,
              cases[i].ok ? "ok" : "refused");
        CHECK(e == API_E_NONE || e == API_E_BAD_REQUEST, "%s: refused with 400", cases[i].what);
        CHECK(e == API_E_NONE || (detail != NULL && detail[0] != '\0'), "%s: a detail",
              cases[i].what);
    }
    for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++)
        CHECK((http_framing_target_refusal(targets[i].target) != NULL) == targets[i].refused, "%s",
              targets[i].target);
    check_unterminated();
    check_layouts();
    return check_summary("test_http_framing");
}
