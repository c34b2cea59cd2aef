/* fuzz_codec.c -- libFuzzer target for the request-body path: parse, decode as a meeting, encode
 * the result, and apply the input as a merge patch to a valid meeting and decode that too; decode
 * it as a webhook's recover body too (an accepted since is never after the now it was given). Any
 * crash, leak or sanitizer report is a bug; a rejection is the expected answer to garbage.
 * Built by tests/fuzz/run.sh with clang -fsanitize=fuzzer,address,undefined. */
#include <stdint.h>
#include <stdlib.h>

#include "codec.h"
#include "timefmt.h"

static const char base_doc[] = "{\"title\":\"a\",\"starts_at\":\"2030-01-01T09:00:00Z\","
                               "\"reminders\":[{\"minutes_before\":5}]}";

static void
decode_encode(const json_t *doc)
{
    struct meeting m;
    struct codec_errors errs = {0};

    meeting_init(&m);
    if (codec_meeting_decode(doc, &m, &errs) == API_E_NONE) {
        json_t *out = codec_meeting_encode(&m);
        free(codec_dump(out));
        json_decref(out);
    }
    meeting_fini(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[128];
    int64_t ms;
    json_t *doc, *base, *patched;

    (void)timefmt_parse((const char *)data, size, &ms);
    doc = codec_parse((const char *)data, size, err, sizeof err);
    if (doc == NULL)
        return 0;
    decode_encode(doc);
    struct codec_errors errs = {0};
    int64_t since = 0, now = 1900000000000;
    if (codec_webhook_recover_decode(doc, now, &since, &errs) == API_E_NONE && since > now)
        abort();
    base = codec_parse(base_doc, sizeof base_doc - 1, err, sizeof err);
    patched = codec_merge_patch(base, doc);
    decode_encode(patched);
    json_decref(patched);
    json_decref(base);
    json_decref(doc);
    return 0;
}
