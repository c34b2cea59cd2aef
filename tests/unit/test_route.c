/* test_route.c -- route matching over the real route table: paths, methods, captures, 405s. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "http_routes.h"
#include "route.h"

static const struct {
    const char *method, *path;
    enum route_result want;
    const char *arg;   /* expected first capture, or NULL */
    const char *allow; /* expected Allow for 405 */
} cases[] = {
    {"GET", "/healthz", ROUTE_FOUND, NULL, NULL},
    {"HEAD", "/healthz", ROUTE_FOUND, NULL, NULL},
    {"POST", "/v1/meetings", ROUTE_FOUND, NULL, NULL},
    {"GET", "/v1/meetings", ROUTE_FOUND, NULL, NULL},
    {"GET", "/v1/meetings/abc", ROUTE_FOUND, "abc", NULL},
    {"PATCH", "/v1/meetings/abc", ROUTE_FOUND, "abc", NULL},
    {"DELETE", "/v1/meetings/x", ROUTE_FOUND, "x", NULL},
    {"PUT", "/v1/meetings", ROUTE_METHOD_NOT_ALLOWED, NULL, "POST, GET, HEAD"},
    {"POST", "/v1/meetings/abc", ROUTE_METHOD_NOT_ALLOWED, NULL, "GET, HEAD, PUT, PATCH, DELETE"},
    {"GET", "/v1/meetings/", ROUTE_NOT_FOUND, NULL, NULL},
    {"GET", "/v1/meetings//", ROUTE_NOT_FOUND, NULL, NULL},
    {"GET", "/v1/meetings/a/b", ROUTE_NOT_FOUND, NULL, NULL},
    {"GET", "/v1/meetingsX", ROUTE_NOT_FOUND, NULL, NULL},
    {"GET", "/v1/meeting", ROUTE_NOT_FOUND, NULL, NULL},
    {"GET", "/", ROUTE_NOT_FOUND, NULL, NULL},
    {"GET", "", ROUTE_NOT_FOUND, NULL, NULL},
    {"GET", "/healthz/", ROUTE_NOT_FOUND, NULL, NULL},
    {"GET", "//healthz", ROUTE_NOT_FOUND, NULL, NULL},
    {"GET",
     "/v1/meetings/"
     "0123456789012345678901234567890123456789012345678901234567890123456789",
     ROUTE_NOT_FOUND, NULL, NULL}, /* capture over ROUTE_ARG_MAX */
};

int
main(void)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct route_match m;
        enum route_result r =
            route_find(http_routes, http_routes_count, cases[i].method, cases[i].path, &m);
        int ok = r == cases[i].want;
        if (ok && cases[i].arg != NULL)
            ok = m.nargs == 1 && strcmp(m.args[0], cases[i].arg) == 0;
        if (ok && cases[i].allow != NULL)
            ok = strcmp(m.allow, cases[i].allow) == 0;
        CHECK(ok, "route %zu: %s %s -> %d (allow '%s')", i, cases[i].method, cases[i].path, r,
              m.allow);
    }
    return check_summary("test_route");
}
