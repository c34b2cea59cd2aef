/* timefmt.h -- RFC 3339 time stamps <-> milliseconds since the Unix epoch (UTC). Pure but for
 * the two clock reads at the end. */
#ifndef TOCSIN_TIMEFMT_H
#define TOCSIN_TIMEFMT_H

#include <stddef.h>
#include <stdint.h>

/* "2026-11-23T08:55:00.000Z" plus NUL. */
#define TIMEFMT_BUF 25
/* Longest input accepted by timefmt_parse (with fractional digits and an offset). */
#define TIMEFMT_INPUT_MAX 64
/* Range accepted on input: years 1970..9999 (the last millisecond of 9999 in ms). */
#define TIMEFMT_MS_MAX 253402300799999LL

/* Parses an RFC 3339 date-time that carries an offset ("Z", "z" or "+hh:mm"/"-hh:mm", hh <= 23,
 * mm <= 59). Accepts 'T' or 't' as separator, 0..9 fractional digits (truncated to milliseconds),
 * rejects impossible dates (Feb 30, hour 24, leap seconds), trailing bytes and a missing offset.
 * Returns 0 and sets *ms_out, or -1. */
int timefmt_parse(const char *s, size_t len, int64_t *ms_out);

/* Writes ms as "YYYY-MM-DDTHH:MM:SS.mmmZ" into buf (TIMEFMT_BUF bytes). Returns buf. */
char *timefmt_format(int64_t ms, char buf[TIMEFMT_BUF]);

/* The proleptic Gregorian calendar, for modules that count wall-clock days (tz.c, tzfile.c,
 * recur.c): days from 1970-01-01 to y-m-d, its inverse, and the length of a month (1..12). */
int64_t timefmt_days_from_civil(int64_t y, int m, int d);
void timefmt_civil_from_days(int64_t days, int64_t *y, int *m, int *d);
int timefmt_days_in_month(int64_t y, int m);

/* Wall clock now, in milliseconds since the epoch. */
int64_t timefmt_now_ms(void);
/* Monotonic clock in milliseconds (for timeouts and backoff, never for fire times). */
int64_t timefmt_mono_ms(void);
/* The same clock in nanoseconds (rates, durations). */
int64_t timefmt_mono_ns(void);
/* Sleeps ms milliseconds (none when ms <= 0), through signals. */
void timefmt_sleep_ms(int64_t ms);

#endif
