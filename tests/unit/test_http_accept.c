/* test_http_accept.c -- Accept negotiation: a table of values, and the cost of hostile ones, which
 * must grow linearly with their length (the parser runs before authentication). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "http_accept.h"

static const struct {
    const char *accept;
    bool want;
} cases[] = {
    {NULL, true},
    {"*/*", true},
    {"application/*", true},
    {"application/json", true},
    {"APPLICATION/JSON", true},
    {"application/problem+json", true},
    {"application/json; charset=utf-8", true},
    {"  application/json  ", true},
    {"text/html, application/json;q=0.5", true},
    {"application/xml;q=1, application/json;q=0", false},
    {"application/json;q=0.000", false},
    {"application/json; q=0.0 ", false},
    {"application/json;Q=0", false},
    {"application/json;q=0.001", true},
    {"application/json;q=1", true},
    {"application/json;q=garbage", true},
    {"application/json;level=1;q=0", false},
    {"application/json;q=0, */*", true},
    {"image/png", false},
    {"text/html", false},
    {"application/jsonx", false},
    {"application", false},
    {"", false},
    {",,,", false},
    {"x,x,x,application/json", true},
    {"text/plain;q=0,application/json", true},
    {"application/xml;xq=0,application/json;q=0", false},
};

static double
ms_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

/* n bytes of "x," repeated (many ranges), or of one JSON range whose parameters are ";q" repeated
 * (one long range with many parameters, none of them a weight). */
static char *
hostile(size_t n, int kind)
{
    static const char json[] = "application/json;";
    char *s = malloc(n + 1);
    if (s == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++)
        s[i] = kind == 0 ? (i % 2 ? ',' : 'x') : (i % 2 ? ';' : 'q');
    if (kind == 1)
        memcpy(s, json, sizeof(json) - 1);
    s[n] = '\0';
    return s;
}

/* 1 MB of either shape: linear work takes milliseconds even under ASan; the parser this replaced
 * searched to the end of the header from every range and needed 100 s for the first shape. */
#define HOSTILE_BYTES (1u << 20)
#define HOSTILE_MS_MAX 1500.0

int
main(void)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        CHECK(http_accept_json(cases[i].accept) == cases[i].want, "Accept: %s -> want %d",
              cases[i].accept ? cases[i].accept : "(none)", cases[i].want);
    for (int kind = 0; kind < 2; kind++) {
        char *s = hostile(HOSTILE_BYTES, kind);
        CHECK(s != NULL, "out of memory");
        if (s == NULL)
            break;
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        bool r = http_accept_json(s);
        double ms = ms_since(&t0);
        CHECK(r == (kind == 1), "hostile Accept %d: JSON only in the second shape", kind);
        CHECK(ms < HOSTILE_MS_MAX, "hostile Accept %d of %u bytes took %.1f ms", kind,
              HOSTILE_BYTES, ms);
        printf("hostile Accept shape %d, %u bytes: %.1f ms\n", kind, HOSTILE_BYTES, ms);
        free(s);
    }
    return check_summary("test_http_accept");
}
