/* fuzz_snooze.c -- libFuzzer target for the snooze body decoder (codec_inbox.c): parse, decode,
 * and check what the API promises: an accepted body's minutes are in range, a body refused as
 * out of range or invalid names its field, nothing else is answered. Any crash, leak, sanitizer
 * report or broken promise is a bug; a rejection is the expected answer to garbage.
 * Built by tests/fuzz/run.sh with clang -fsanitize=fuzzer,address,undefined. */
#include <stdint.h>
#include <stdlib.h>

#include "codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[128];
    struct codec_errors errs = {0};
    int minutes = 0;
    json_t *doc = codec_parse((const char *)data, size, err, sizeof err);

    if (doc == NULL)
        return 0;
    enum api_error e = codec_snooze_decode(doc, &minutes, &errs);
    if (e == API_E_NONE &&
        (errs.n > 0 || minutes < SNOOZE_MINUTES_MIN || minutes > SNOOZE_MINUTES_MAX))
        abort();
    if (e != API_E_NONE &&
        (errs.n == 0 || (e != API_E_VALIDATION && e != API_E_SNOOZE_OUT_OF_RANGE)))
        abort();
    json_decref(doc);
    return 0;
}
