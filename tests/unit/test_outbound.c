/* test_outbound.c -- the Retry-After value a delivery waits by (outbound_retry_after_s): seconds,
 * the three HTTP-date forms RFC 9110 allows taken against the current time, a date already past,
 * the bound, and values that are neither. */
#include "check.h"
#include "outbound.h"

#include <string.h>

#define NOW_S 784111777LL /* Sun, 06 Nov 1994 08:49:37 GMT, RFC 9110's example */

static int64_t
after(const char *v)
{
    return outbound_retry_after_s(v, strlen(v), NOW_S);
}

int
main(void)
{
    CHECK(after(" 120\r\n") == 120, "seconds: %lld", (long long)after(" 120\r\n"));
    CHECK(after("0") == 0, "zero");
    CHECK(after("99999999999999999999") == OUTBOUND_RETRY_AFTER_MAX, "bounded: %lld",
          (long long)after("99999999999999999999"));
    CHECK(after(" Sun, 06 Nov 1994 08:51:37 GMT\r\n") == 120, "IMF-fixdate: %lld",
          (long long)after(" Sun, 06 Nov 1994 08:51:37 GMT\r\n"));
    CHECK(after("Sunday, 06-Nov-94 08:50:37 GMT") == 60, "RFC 850 date: %lld",
          (long long)after("Sunday, 06-Nov-94 08:50:37 GMT"));
    CHECK(after("Sun Nov  6 08:49:47 1994") == 10, "asctime date: %lld",
          (long long)after("Sun Nov  6 08:49:47 1994"));
    CHECK(after("Sat, 05 Nov 1994 08:49:37 GMT") == 0, "a date past is no wait");
    CHECK(after("Mon, 06 Nov 1995 08:49:37 GMT") == OUTBOUND_RETRY_AFTER_MAX, "a date far ahead");
    CHECK(after("") == 0 && after("\r\n") == 0 && after("soon") == 0, "neither");
    return check_summary("test_outbound");
}
