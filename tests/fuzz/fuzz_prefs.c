/* fuzz_prefs.c -- libFuzzer target for the preferences decoder (codec_prefs.c): parse, decode,
 * and for every accepted body check what the API promises: the quiet times in range and
 * different, the zone a known name, and the encoded document decoding to the same preferences
 * (what a GET answers is what a PUT of it keeps). Any crash, leak, sanitizer report or broken
 * promise is a bug; a rejection is the expected answer to garbage.
 * Built by tests/fuzz/run.sh with clang -fsanitize=fuzzer,address,undefined. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "tz.h"

/* The own reminders agree, and hold what the decoder promises: distinct offsets in range, by
 * minutes_before descending, channels that reach a person. */
static bool
same_own(const struct prefs *a, const struct prefs *b)
{
    if (a->has_own != b->has_own || a->n_own != b->n_own || a->n_own > PREFS_OWN_REMINDERS_MAX)
        return false;
    for (size_t i = 0; i < a->n_own; i++) {
        const struct reminder *x = &a->own[i];
        if (x->minutes_before != b->own[i].minutes_before || x->channels != b->own[i].channels ||
            x->channels == 0 || (x->channels & CHANNEL_WEBHOOK) != 0 || x->minutes_before < 0 ||
            x->minutes_before > MEETING_MINUTES_BEFORE_MAX ||
            (i > 0 && a->own[i - 1].minutes_before <= x->minutes_before))
            return false;
    }
    return true;
}

static bool
same(const struct prefs *a, const struct prefs *b)
{
    return same_own(a, b) && a->email == b->email && a->push == b->push &&
           a->has_quiet == b->has_quiet &&
           (!a->has_quiet || (strcmp(a->quiet_zone, b->quiet_zone) == 0 &&
                              a->quiet_start == b->quiet_start && a->quiet_end == b->quiet_end));
}

static void
check(const struct prefs *p)
{
    if (p->has_quiet && (p->quiet_start < 0 || p->quiet_start >= PREFS_MINUTES_PER_DAY ||
                         p->quiet_end < 0 || p->quiet_end >= PREFS_MINUTES_PER_DAY ||
                         p->quiet_start == p->quiet_end || !tz_known(p->quiet_zone)))
        abort();
    json_t *out = codec_prefs_encode(p);
    struct codec_errors errs = {0};
    struct prefs again;

    if (out == NULL || codec_prefs_decode(out, &again, &errs) != API_E_NONE || !same(p, &again))
        abort();
    json_decref(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[128];
    struct codec_errors errs = {0};
    struct prefs p;
    json_t *doc = codec_parse((const char *)data, size, err, sizeof err);

    if (doc == NULL)
        return 0;
    enum api_error e = codec_prefs_decode(doc, &p, &errs);
    if ((e == API_E_VALIDATION) != (errs.n > 0))
        abort();
    if (e == API_E_NONE)
        check(&p);
    json_decref(doc);
    return 0;
}
