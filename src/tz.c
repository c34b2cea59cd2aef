/* tz.c -- the libical side of tz.h. */
#include "tz.h"

#include <libical/ical.h>
#include <pthread.h>

static pthread_mutex_t tz_mu = PTHREAD_MUTEX_INITIALIZER; /* guards every libical call */

int
tz_local(const char *zone, int64_t utc_ms, struct tz_local *out)
{
    int rc = 0;
    time_t t = (time_t)(utc_ms / 1000 - (utc_ms % 1000 < 0));

    pthread_mutex_lock(&tz_mu);
    icaltimezone *z = zone == NULL || zone[0] == '\0' ? icaltimezone_get_utc_timezone()
                                                      : icaltimezone_get_builtin_timezone(zone);
    if (z == NULL) {
        rc = -1;
    } else {
        struct icaltimetype tt = icaltime_from_timet_with_zone(t, 0, z);
        int dst = 0;
        *out = (struct tz_local){tt.year,
                                 tt.month,
                                 tt.day,
                                 tt.hour,
                                 tt.minute,
                                 tt.second,
                                 icaltimezone_get_utc_offset(z, &tt, &dst)};
    }
    pthread_mutex_unlock(&tz_mu);
    return rc;
}
