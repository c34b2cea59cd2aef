/* route.h -- pure path matching over a static route table (the table itself is in http_routes.c,
 * where it reads as the API's table of contents). No HTTP library types here. */
#ifndef TOCSIN_ROUTE_H
#define TOCSIN_ROUTE_H

#include <stddef.h>

#define ROUTE_ARGS_MAX 2
#define ROUTE_ARG_MAX 64   /* bytes of one {param} path segment */
#define ROUTE_ALLOW_MAX 64 /* "GET, PUT, PATCH, DELETE, HEAD" */

struct request;
typedef int (*route_handler_fn)(struct request *rq);

/* Who may call a route (http_auth.c). API keys may call every non-public route but those that
 * need a participant (the stream, the inbox, push); a browser token needs the scope named. */
enum route_flags {
    ROUTE_PUBLIC = 1,         /* no credentials */
    ROUTE_API_KEY = 2,        /* API keys only: a browser token gets 403 insufficient_scope */
    ROUTE_READ = 4,           /* a browser token needs meetings:read */
    ROUTE_WRITE = 8,          /* meetings:write */
    ROUTE_NOTIFICATIONS = 16, /* notifications (browser tokens only) */
    ROUTE_PUSH = 32,          /* push (browser tokens only) */
    ROUTE_TOKEN_QUERY = 64, /* a token may come as ?access_token= (EventSource sends no headers) */
    ROUTE_ANY_ACCEPT = 128, /* the reply is not JSON: no Accept negotiation */
    ROUTE_KEY_TOO = 256,    /* with ROUTE_PUSH: an API key may call it as well */
    ROUTE_PROBE = 512,      /* health, readiness, metrics: polled, so the access line is debug */
    ROUTE_BULK = 1024, /* bodies up to HTTP_BULK_BODY_MAX (http_request.h), not HTTP_BODY_MAX */
};

struct route {
    const char *method;  /* "GET", "POST", ... */
    const char *pattern; /* "/v1/meetings/{id}" -- "{...}" matches one non-empty segment */
    route_handler_fn fn;
    unsigned flags;
};

enum route_result { ROUTE_FOUND, ROUTE_NOT_FOUND, ROUTE_METHOD_NOT_ALLOWED };

struct route_match {
    const struct route *route;
    const struct route *path_route; /* the first route whose pattern the path matched, any method */
    size_t nargs;
    char args[ROUTE_ARGS_MAX][ROUTE_ARG_MAX + 1];
    char allow[ROUTE_ALLOW_MAX]; /* filled for ROUTE_METHOD_NOT_ALLOWED */
};

/* Finds the route for method + path (path without query string). HEAD matches GET routes. */
enum route_result route_find(const struct route *table, size_t n, const char *method,
                             const char *path, struct route_match *out);

#endif
