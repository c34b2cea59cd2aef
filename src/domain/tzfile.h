/* tzfile.h -- a compiled time zone (TZif, RFC 8536, as the system's zoneinfo holds them): its
 * transitions and, past the last one, the POSIX TZ rule of its footer. Pure: bytes in, offsets
 * out; tz.c reads the files. tocsin reads zones itself because libical 3.0.16's conversion of
 * them is wrong for some: measured against Python's zoneinfo on 489 zones, eleven disagree
 * between 2024 and 2045 (Australia/Lord_Howe, America/St_Johns, Atlantic/Azores, Pacific/Chatham
 * from 2038 on; Africa/Cairo in 2041) and Asia/Tehran put its 2019 change an hour late. */
#ifndef TOCSIN_TZFILE_H
#define TOCSIN_TZFILE_H

#include <stddef.h>
#include <stdint.h>

#define TZFILE_BYTES_MAX (256 * 1024) /* the largest zone file read (New_York's is 3.5 KiB) */
#define TZFILE_TRANSITIONS_MAX 4096   /* transitions kept from one file */
#define TZFILE_TYPES_MAX 256          /* local time types (RFC 8536: at most 256) */
#define TZFILE_OFFSET_MAX (26 * 3600) /* |UTC offset|, seconds; RFC 8536: within -25..+26 h */
#define TZFILE_RULE_MAX 128           /* bytes of the footer's TZ string */

/* A day rule of a POSIX TZ string: Jn (1..365, no 29 February), n (0..365) or Mm.w.d. */
struct tzfile_day {
    char kind; /* 'J', 'n' or 'M' */
    int n;     /* J or n: the day; M: the month */
    int week, weekday;
    int time_s; /* seconds after local midnight the change happens (may be < 0 or > 24 h) */
};

/* The footer's rule: standard offset, and when dst: the summer offset and its start and end. */
struct tzfile_rule {
    int std_offset_s; /* local minus UTC */
    int has_dst;
    int dst_offset_s;
    struct tzfile_day start, end;
};

struct tzfile {
    size_t n;           /* transitions */
    int64_t *at;        /* n UTC instants, increasing (malloc'ed) */
    int *offset_after;  /* n offsets from each transition on (malloc'ed) */
    int first_offset_s; /* before the first transition (the first local time type) */
    int has_rule;       /* a footer rule applies from the last transition on */
    struct tzfile_rule rule;
};

/* Parses a TZif file (versions 1 to 4; the 64-bit block when there is one). 0, or -1 when the
 * bytes are not a valid zone file. tz is filled on 0 and must then be freed with tzfile_fini. */
int tzfile_parse(const unsigned char *buf, size_t len, struct tzfile *tz);
void tzfile_fini(struct tzfile *tz);
/* The UTC offset (local minus UTC, seconds) at the UTC instant t (seconds since the epoch). */
int tzfile_offset(const struct tzfile *tz, int64_t t);

/* Parses a POSIX TZ string ("EST5EDT,M3.2.0,M11.1.0", "<+0330>-3:30", with RFC 8536's
 * extensions: hours up to 167 and negative in rule times). 0 or -1. */
int tzfile_rule_parse(const char *s, size_t len, struct tzfile_rule *r);
/* The offset the rule gives at UTC instant t. */
int tzfile_rule_offset(const struct tzfile_rule *r, int64_t t);

#endif
