/* test_http_listen.c -- which pool a connection goes to by its first bytes: a stream request (with
 * or without a query) to the stream pool; anything else, a path that only starts like the
 * stream's, another method, or too few bytes in yet, to the API pool. */
#include "check.h"
#include "http_listen.h"

#include <string.h>

static enum http_pool
route(const char *s)
{
    size_t n = strlen(s);

    return http_listen_route(s, n < HTTP_LISTEN_PEEK_MAX ? n : HTTP_LISTEN_PEEK_MAX);
}

int
main(void)
{
    CHECK_EXPR(route("GET /v1/stream HTTP/1.1\r\n") == HTTP_POOL_STREAMS);
    CHECK_EXPR(route("GET /v1/stream?last_event_id=4 HTTP/1.1\r\n") == HTTP_POOL_STREAMS);
    CHECK_EXPR(route("GET /v1/streams HTTP/1.1\r\n") == HTTP_POOL_API);
    CHECK_EXPR(route("GET /v1/stream/x HTTP/1.1\r\n") == HTTP_POOL_API);
    CHECK_EXPR(route("POST /v1/stream HTTP/1.1\r\n") == HTTP_POOL_API);
    CHECK_EXPR(route("OPTIONS /v1/stream HTTP/1.1\r\n") == HTTP_POOL_API);
    CHECK_EXPR(route("GET /v1/meetings HTTP/1.1\r\n") == HTTP_POOL_API);
    CHECK_EXPR(route("GET /v1/stream") == HTTP_POOL_API); /* the next byte not in yet */
    CHECK_EXPR(route("GET /v1/st") == HTTP_POOL_API);
    CHECK_EXPR(route("") == HTTP_POOL_API);
    CHECK_EXPR(http_listen_route(NULL, 0) == HTTP_POOL_API);
    return check_summary("test_http_listen");
}
