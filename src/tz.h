/* tz.h -- time zones (libical lives only here and in what issue 12's recurrence adds to it): a UTC
 * instant as the wall-clock time of an IANA zone, from the system's zoneinfo. libical keeps global
 * zone state, so every call is serialised by one mutex; calls are short. */
#ifndef TOCSIN_TZ_H
#define TOCSIN_TZ_H

#include <stdint.h>

struct tz_local {
    int year, month, day, hour, minute, second;
    int offset_s; /* local minus UTC, seconds */
};

/* utc_ms as wall-clock time in zone (NULL or "" = UTC) into *out. 0, or -1 for an unknown zone. */
int tz_local(const char *zone, int64_t utc_ms, struct tz_local *out);

#endif
