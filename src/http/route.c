/* route.c -- matches a request path against the route table, segment by segment. Pure. */
#include "route.h"

#include <string.h>

/* Does path match pattern? Captures {params} into m. Segments are compared whole, so
 * "/v1/meetingsX" never matches "/v1/meetings", and an empty or over-long segment matches
 * nothing. */
static int
match_path(const char *pattern, const char *path, struct route_match *m)
{
    m->nargs = 0;
    while (*pattern != '\0' && *path != '\0') {
        if (*pattern != '/' || *path != '/')
            return 0;
        pattern++;
        path++;
        size_t plen = strcspn(pattern, "/");
        size_t slen = strcspn(path, "/");
        if (pattern[0] == '{') {
            if (slen == 0 || slen > ROUTE_ARG_MAX || m->nargs >= ROUTE_ARGS_MAX)
                return 0;
            memcpy(m->args[m->nargs], path, slen);
            m->args[m->nargs++][slen] = '\0';
        } else if (plen != slen || memcmp(pattern, path, plen) != 0) {
            return 0;
        }
        pattern += plen;
        path += slen;
    }
    return *pattern == '\0' && *path == '\0';
}

static void
allow_add(char *allow, const char *method)
{
    size_t used = strlen(allow);
    if (strstr(allow, method) != NULL)
        return;
    if (used + strlen(method) + 3 > ROUTE_ALLOW_MAX)
        return;
    if (used > 0)
        strcat(allow, ", ");
    strcat(allow, method);
    if (strcmp(method, "GET") == 0)
        allow_add(allow, "HEAD");
}

enum route_result
route_find(const struct route *table, size_t n, const char *method, const char *path,
           struct route_match *out)
{
    int path_known = 0;
    const char *want = strcmp(method, "HEAD") == 0 ? "GET" : method;
    struct route_match tmp;

    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < n; i++) {
        if (!match_path(table[i].pattern, path, &tmp))
            continue;
        path_known = 1;
        if (out->path_route == NULL)
            out->path_route = &table[i];
        allow_add(out->allow, table[i].method);
        if (strcmp(table[i].method, want) == 0) {
            memcpy(out->args, tmp.args, sizeof(tmp.args));
            out->nargs = tmp.nargs;
            out->route = &table[i];
            return ROUTE_FOUND;
        }
    }
    return path_known ? ROUTE_METHOD_NOT_ALLOWED : ROUTE_NOT_FOUND;
}
