/* tz.c -- zones from the system's zoneinfo (tzfile.c reads them), each read once and kept for
 * the life of the process in a table sorted by name, and tocsin's own wall-clock -> UTC resolver.
 * A zone, once read, never changes, so offsets are computed without the table's lock. */
#include "tz.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "timefmt.h"
#include "tzfile.h"

#define SECONDS_PER_DAY 86400
#define TZ_CANDIDATES_MAX 3 /* offsets before and after a transition, and one between */
#define TZ_ZONES_MAX 1024   /* zones kept (the system has about 600) */
#define TZ_NAME_MAX 64
#define TZ_PATH_MAX 512
#define ZONEINFO_DIR "/usr/share/zoneinfo"

struct zone {
    char name[TZ_NAME_MAX + 1];
    struct tzfile tz;
};

static pthread_mutex_t tz_mu = PTHREAD_MUTEX_INITIALIZER; /* guards zones and n_zones */
static struct zone *zones[TZ_ZONES_MAX];                  /* sorted by name */
static size_t n_zones;
static const struct tzfile utc_zone; /* no transitions, offset 0 */

/* The names tz_known (and so codec_meeting.c) takes: the shape leaves no way out of the directory,
 * and the host's own setting and the posix/ and right/ copies are refused. */
static bool
name_ok(const char *s)
{
    size_t len = strlen(s), seg = 0;

    if (len == 0 || len > TZ_NAME_MAX || strcmp(s, "localtime") == 0 ||
        strcmp(s, "posixrules") == 0 || strncmp(s, "right/", 6) == 0 ||
        strncmp(s, "posix/", 6) == 0)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '/') {
            if (seg == 0)
                return false;
            seg = 0;
            continue;
        }
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '+' || c == '-'))
            return false;
        seg++;
    }
    return seg > 0;
}

static struct zone *
load(const char *name)
{
    const char *dir = getenv("TZDIR");
    char path[TZ_PATH_MAX];
    unsigned char *buf = NULL;
    struct zone *z = NULL;
    struct stat st;
    int fd;

    if (dir == NULL || dir[0] == '\0')
        dir = ZONEINFO_DIR;
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return NULL;
    if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0)
        return NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
        st.st_size <= TZFILE_BYTES_MAX && (buf = malloc((size_t)st.st_size)) != NULL &&
        read(fd, buf, (size_t)st.st_size) == st.st_size && (z = calloc(1, sizeof *z)) != NULL &&
        tzfile_parse(buf, (size_t)st.st_size, &z->tz) != 0) {
        free(z);
        z = NULL;
    }
    close(fd);
    free(buf);
    if (z != NULL)
        snprintf(z->name, sizeof z->name, "%s", name);
    return z;
}

/* The zone by name, read on first use; &utc_zone for NULL or ""; NULL when unknown. */
static const struct tzfile *
zone_get(const char *name)
{
    size_t lo = 0, hi;
    const struct tzfile *found = NULL;

    if (name == NULL || name[0] == '\0')
        return &utc_zone;
    if (!name_ok(name))
        return NULL;
    pthread_mutex_lock(&tz_mu);
    hi = n_zones;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(zones[mid]->name, name);
        if (c == 0) {
            found = &zones[mid]->tz;
            break;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (found == NULL && n_zones < TZ_ZONES_MAX) {
        struct zone *z = load(name);
        if (z != NULL) {
            memmove(&zones[lo + 1], &zones[lo], (n_zones - lo) * sizeof(struct zone *));
            zones[lo] = z;
            n_zones++;
            found = &z->tz;
        }
    }
    pthread_mutex_unlock(&tz_mu);
    return found;
}

static int64_t
floor_seconds(int64_t utc_ms)
{
    return utc_ms / 1000 - (utc_ms % 1000 < 0);
}

bool
tz_known(const char *name)
{
    return name != NULL && name[0] != '\0' && zone_get(name) != NULL;
}

int
tz_local(const char *zone, int64_t utc_ms, struct tz_local *out)
{
    const struct tzfile *z = zone_get(zone);
    struct tz_wall w;

    if (z == NULL)
        return -1;
    int64_t s = floor_seconds(utc_ms);
    int off = tzfile_offset(z, s);
    tz_wall_from_seconds(s + off, &w);
    *out = (struct tz_local){w.year, w.month, w.day, w.hour, w.minute, w.second, off};
    return 0;
}

int
tz_offset(const char *zone, int64_t utc_s, int *offset_s)
{
    const struct tzfile *z = zone_get(zone);

    if (z == NULL)
        return -1;
    *offset_s = tzfile_offset(z, utc_s);
    return 0;
}

/* Valid offsets o of local_s are those with offset(local_s - o) == o. Candidates are the offsets
 * in force TZ_RESOLVE_REACH_S before and after, and whatever a candidate's instant turns out to
 * have (a third offset when two transitions fall close together). Two valid: an overlap, the
 * earlier instant (the larger offset) wins. None: a gap, and the offset in force before it
 * applies, which moves the time forward by the gap's length. */
int
tz_resolve_with(tz_offset_fn fn, void *arg, int64_t local_s, int64_t *utc_s)
{
    int cand[TZ_CANDIDATES_MAX], before, after;
    size_t n = 0;
    bool found = false;
    int64_t best = 0;

    if (fn(arg, local_s - TZ_RESOLVE_REACH_S, &before) != 0 ||
        fn(arg, local_s + TZ_RESOLVE_REACH_S, &after) != 0)
        return -1;
    cand[n++] = before;
    if (after != before)
        cand[n++] = after;
    for (size_t i = 0; i < n; i++) {
        int got;
        int64_t t = local_s - cand[i];

        if (fn(arg, t, &got) != 0)
            return -1;
        if (got != cand[i]) {
            bool known = false;
            for (size_t k = 0; k < n; k++)
                known |= cand[k] == got;
            if (!known && n < TZ_CANDIDATES_MAX)
                cand[n++] = got;
            continue;
        }
        if (!found || t < best)
            best = t;
        found = true;
    }
    *utc_s = found ? best : local_s - before;
    return 0;
}

static int
zone_offset(void *arg, int64_t utc_s, int *offset_s)
{
    *offset_s = tzfile_offset(arg, utc_s);
    return 0;
}

int
tz_resolve(const char *zone, const struct tz_wall *w, int64_t *utc_s)
{
    const struct tzfile *z = zone_get(zone);

    if (z == NULL)
        return -1;
    return tz_resolve_with(zone_offset, (void *)z, tz_wall_seconds(w), utc_s);
}

int64_t
tz_wall_seconds(const struct tz_wall *w)
{
    return timefmt_days_from_civil(w->year, w->month, w->day) * SECONDS_PER_DAY +
           (w->hour * 60LL + w->minute) * 60 + w->second;
}

void
tz_wall_from_seconds(int64_t s, struct tz_wall *w)
{
    int64_t days = s / SECONDS_PER_DAY - (s % SECONDS_PER_DAY < 0), y;
    int64_t sod = s - days * SECONDS_PER_DAY;

    timefmt_civil_from_days(days, &y, &w->month, &w->day);
    w->year = (int)y;
    w->hour = (int)(sod / 3600);
    w->minute = (int)(sod / 60 % 60);
    w->second = (int)(sod % 60);
}
