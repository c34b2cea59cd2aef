/* http_rate.c -- the per-tenant request rate of http_rate.h. */
#include "http_rate.h"

#include "metrics.h"
#include "ratelimit.h"
#include "timefmt.h"

#define NS_PER_S 1000000000LL

enum api_error
http_rate_check(struct ratelimit *rl, struct request *rq)
{
    int64_t wait_ns;

    if (rl == NULL || (wait_ns = ratelimit_take(rl, rq->tenant_id, timefmt_mono_ns())) == 0)
        return API_E_NONE;
    /* A token comes back within one interval, at most a second: Retry-After is 1, a whole
     * number of seconds as the header takes, rounded up so a client that honours it is served. */
    rq->retry_after_s = (unsigned)((wait_ns + NS_PER_S - 1) / NS_PER_S);
    metrics_add(METRIC_HTTP_RATE_LIMITED, 1);
    return API_E_RATE_LIMITED;
}
