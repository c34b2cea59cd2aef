/* tz.h -- time zones: a UTC instant as the wall-clock time of an IANA zone, from the system's
 * zoneinfo (tzfile.h says why tocsin reads it itself and not through libical), and back by
 * tocsin's own rule (docs/design.md section 9): a wall-clock time that a spring-forward gap skips
 * moves forward by the gap (02:30 -> 03:30 when 02:00 jumps to 03:00), and one that a fall-back
 * overlap repeats is its first (earlier) instant. Thread-safe. */
#ifndef TOCSIN_TZ_H
#define TOCSIN_TZ_H

#include <stdbool.h>
#include <stdint.h>

struct tz_local {
    int year, month, day, hour, minute, second;
    int offset_s; /* local minus UTC, seconds */
};

/* A wall-clock time without a zone, as a recurrence rule generates it. */
struct tz_wall {
    int year, month, day, hour, minute, second;
};

/* utc_ms as wall-clock time in zone (NULL or "" = UTC) into *out. 0, or -1 for an unknown zone
 * (one that codec_meeting.c would refuse, or whose file is missing or unreadable). */
int tz_local(const char *zone, int64_t utc_ms, struct tz_local *out);
/* Whether name is a zone tocsin can use: segments of [A-Za-z0-9_+-] joined by '/' (so no name
 * leaves the zoneinfo directory), at most 64 bytes, not the host's own setting (localtime,
 * posixrules) nor under posix/ or right/ (copies and leap-second variants), and a TZif file under
 * $TZDIR or the system zoneinfo that parses. */
bool tz_known(const char *name);

/* The UTC offset (local minus UTC, seconds) of zone at the instant utc_s (seconds since the
 * epoch). 0, or -1 for an unknown zone. */
int tz_offset(const char *zone, int64_t utc_s, int *offset_s);

/* The wall-clock time w of zone as a UTC instant (seconds since the epoch) by the rule above.
 * 0, or -1 for an unknown zone. */
int tz_resolve(const char *zone, const struct tz_wall *w, int64_t *utc_s);

/* The resolver itself, on any offset function (tz_offset of one zone, or a table in tests):
 * local_s is the wall-clock time counted as if it were UTC (tz_wall_seconds). Offsets are looked
 * up TZ_RESOLVE_REACH_S either side of it, which covers any transition that can make it a gap or
 * an overlap (offsets lie within -26 h..+26 h; Pacific/Apia's 2011 jump was 24 h). -1 when fn
 * fails. */
#define TZ_RESOLVE_REACH_S (30 * 3600)
typedef int (*tz_offset_fn)(void *arg, int64_t utc_s, int *offset_s);
int tz_resolve_with(tz_offset_fn fn, void *arg, int64_t local_s, int64_t *utc_s);

/* w counted as if it were UTC, in seconds since the epoch; and back. Proleptic Gregorian. */
int64_t tz_wall_seconds(const struct tz_wall *w);
void tz_wall_from_seconds(int64_t s, struct tz_wall *w);

#endif
