/* cors.h -- TOCSIN_CORS_ORIGINS: which web origins may call the API from a browser. Pure: the
 * list is parsed once at start (config.c) and consulted per reply (http_reply.c). An origin is
 * compared exactly, as browsers send it (scheme://host[:port], lower case); "*" allows any and is
 * echoed as "*" (no credentials are ever used: tokens travel in headers or the stream's query). */
#ifndef TOCSIN_CORS_H
#define TOCSIN_CORS_H

#include <stdbool.h>
#include <stddef.h>

#define CORS_ORIGINS_MAX 32 /* entries in TOCSIN_CORS_ORIGINS */
#define CORS_ORIGIN_MAX 256 /* bytes of one origin */

struct cors_origins {
    bool any; /* "*" */
    size_t n;
    char origin[CORS_ORIGINS_MAX][CORS_ORIGIN_MAX + 1];
};

/* Parses a comma-separated list ("" = no browser access). Entries are trimmed of blanks; each is
 * "*" or http(s)://host[:port] with a lower-case host name or a lower-case IPv6 address in
 * brackets, no path, query, user or trailing slash. Returns 0, or -1 with a reason in why (a
 * static string). */
int cors_origins_parse(const char *s, struct cors_origins *out, const char **why);
/* Whether a request's Origin header value may have CORS headers. "null" never does. */
bool cors_origin_allowed(const struct cors_origins *c, const char *origin);

#endif
