/* fuzz_recur.c -- libFuzzer target for the recurrence input. Input starting with '{' is a JSON
 * document: as a meeting's "recurrence" member (codec_series_recurrence_decode through
 * codec_meeting_decode), and as an occurrence override (codec_series_override_decode). Anything
 * else is RRULE text: recur_rule_check, and when it is accepted, the series it makes in a zone
 * picked by the input is expanded (at most EXPAND_MAX occurrences), checking what must hold:
 * original starts strictly increase, none is past UNTIL, no more than COUNT, and each is its
 * wall-clock time's first instant in the zone (tz_resolve of its own local time gives it back). A
 * broken property aborts. Built by tests/fuzz/run.sh with clang
 * -fsanitize=fuzzer,address,undefined. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "recur.h"
#include "series.h"
#include "timefmt.h"
#include "tz.h"

#define EXPAND_MAX 200
#define TEXT_MAX 4096

static const char *const zones[] = {"America/New_York", "Europe/Berlin", "Australia/Lord_Howe",
                                    "Asia/Kolkata",     "Pacific/Apia",  "UTC"};
#define ZONES (sizeof zones / sizeof zones[0])

static void
must(int cond, const char *what, const char *rule)
{
    if (!cond) {
        fprintf(stderr, "property broken: %s (%s)\n", what, rule);
        abort();
    }
}

static void
json_input(const char *text, size_t len)
{
    char err[128];
    json_t *rec = codec_parse(text, len, err, sizeof err);
    struct codec_errors errs;
    struct meeting m;
    struct series_override ov;

    if (rec == NULL)
        return;
    json_t *doc =
        json_pack("{s:s, s:s, s:s, s:O}", "title", "a", "starts_at", "2030-01-07T09:00:00+01:00",
                  "time_zone", "Europe/Berlin", "recurrence", rec);
    meeting_init(&m);
    if (doc != NULL && codec_meeting_decode(doc, &m, &errs) == API_E_NONE) {
        json_t *out = codec_meeting_encode(&m);
        free(codec_dump(out));
        json_decref(out);
        must(m.recurrence != NULL, "an accepted recurrence is kept", "");
        (void)series_has_upcoming(&m, m.starts_at_ms);
    }
    meeting_fini(&m);
    json_decref(doc);
    if (codec_series_override_decode(rec, 1893456000000LL, &ov, &errs) == API_E_NONE) {
        json_t *back = codec_series_override_doc(&ov);
        free(codec_dump(back));
        json_decref(back);
    }
    series_override_fini(&ov);
    json_decref(rec);
}

/* A start for the rule: its first time on or after a day picked by the input, 09:30 local. */
static int
first_start(const char *rule, const char *zone, unsigned pick, int64_t *start_ms)
{
    struct tz_wall seed = {2020 + (int)(pick % 12),
                           1 + (int)(pick / 12 % 12),
                           1 + (int)(pick / 144 % 28),
                           9,
                           30,
                           0},
                   first;
    struct recur_iter *it = recur_iter_new(rule, &seed);
    int64_t utc_s;
    int got = it != NULL ? recur_iter_next(it, &first) : 0;

    recur_iter_free(it);
    if (got != 1 || tz_resolve(zone, &first, &utc_s) != 0)
        return -1;
    *start_ms = utc_s * 1000;
    return 0;
}

static void
rule_input(const char *rule, unsigned pick)
{
    struct recur_info info, again;
    char why[RECUR_WHY_MAX], why2[RECUR_WHY_MAX];

    if (recur_rule_check(rule, &info, why) != 0)
        return;
    must(recur_rule_check(rule, &again, why2) == 0 && again.has_until == info.has_until &&
             again.until_ms == info.until_ms && again.has_count == info.has_count,
         "the check is deterministic", rule);
    const char *zone = zones[pick % ZONES];
    struct meeting m;
    struct meeting_recurrence rec = {.rrule = (char *)rule};
    meeting_init(&m);
    m.time_zone = (char *)zone;
    m.recurrence = &rec;
    if (first_start(rule, zone, pick / ZONES, &m.starts_at_ms) != 0 ||
        series_check_start(&m, why) != 0)
        return; /* a start in a gap or overlap, or a rule without a time near the pick */
    struct series_gen g;
    int64_t t, last = INT64_MIN;
    int n = 0;
    if (series_gen_init(&g, &m, m.starts_at_ms) == 0) {
        while (n < EXPAND_MAX && series_gen_next(&g, &t) == 1) {
            struct tz_local l;
            int64_t back;
            must(t > last, "original starts strictly increase", rule);
            must(!info.has_until || t - t % 1000 <= info.until_ms, "nothing past UNTIL", rule);
            must(tz_local(zone, t, &l) == 0, "local time of an occurrence", rule);
            struct tz_wall w = {l.year, l.month, l.day, l.hour, l.minute, l.second};
            must(tz_resolve(zone, &w, &back) == 0 && back * 1000 == t,
                 "an occurrence is the first instant of its wall-clock time", rule);
            last = t;
            n++;
        }
    }
    series_gen_fini(&g);
    if (info.has_count) {
        const char *c = strstr(rule, "COUNT=");
        must(c != NULL && n <= atoi(c + 6), "no more than COUNT", rule);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char text[TEXT_MAX + 1];
    unsigned pick = 0;

    if (size > TEXT_MAX)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    if (size > 0 && text[0] == '{') {
        json_input(text, size);
        return 0;
    }
    for (size_t i = 0; i < size; i++)
        pick = pick * 31 + data[i];
    if (strlen(text) == size) /* no NUL inside: the rule's text is all of it */
        rule_input(text, pick);
    return 0;
}
