/* fuzz_unsub.c -- libFuzzer target for the unsubscribe token (unsub.c). An input whose first
 * byte is 'M' makes a token: the next 8 bytes are the tenant id and the rest the participant;
 * every token made must parse back to the same subject, and one with any character changed
 * must not parse. Any other input is parsed as a link's t: only UNSUB_OK may fill the subject,
 * and an accepted text must be the very token the secret makes of what it names (one text per
 * subject). Any crash, sanitizer report or broken promise is a bug; a refusal is the expected
 * answer to garbage. Built by tests/fuzz/run.sh with clang -fsanitize=fuzzer,address,undefined. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "unsub.h"

#define SECRET "fuzzing-secret-0123456789abcdef0123"
#define PREVIOUS "fuzzing-previous-0123456789abcdef01"

static const struct unsub_keys keys = {SECRET, PREVIOUS};

static void
make_and_parse(const uint8_t *data, size_t size)
{
    struct unsub_subject s = {0, 1764806400, ""}, got;
    char tok[UNSUB_TOKEN_MAX + 1];

    if (size < 8 || size - 8 > UNSUB_PARTICIPANT_MAX)
        return;
    for (int i = 0; i < 8; i++)
        s.tenant_id = (int64_t)((uint64_t)s.tenant_id << 8 | data[i]);
    memcpy(s.participant, data + 8, size - 8);
    s.participant[size - 8] = '\0';
    size_t n = unsub_token_make(SECRET, &s, tok);
    if (n == 0) {
        if (s.tenant_id > 0 && s.participant[0] != '\0' && memchr(data + 8, '\0', size - 8) == NULL)
            abort(); /* a subject within bounds that got no token */
        return;
    }
    if (n > UNSUB_TOKEN_MAX || unsub_token_parse(&keys, tok, n, &got) != UNSUB_OK ||
        got.tenant_id != s.tenant_id || got.issued_s != s.issued_s ||
        strcmp(got.participant, s.participant) != 0)
        abort();
    size_t at = (size_t)data[size - 1] % n;
    tok[at] = tok[at] == 'x' ? 'y' : 'x';
    if (unsub_token_parse(&keys, tok, n, &got) == UNSUB_OK)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct unsub_subject got;
    char again[UNSUB_TOKEN_MAX + 1];

    if (size > 0 && data[0] == 'M') {
        make_and_parse(data + 1, size - 1);
        return 0;
    }
    if (unsub_token_parse(&keys, (const char *)data, size, &got) != UNSUB_OK)
        return 0;
    /* A text one of the secrets made (the seeds hold such): it must be what that secret makes
     * of the subject it names, byte for byte. */
    size_t n = unsub_token_make(SECRET, &got, again);
    bool current = n == size && memcmp(again, data, size) == 0;
    n = unsub_token_make(PREVIOUS, &got, again);
    if (!current && (n != size || memcmp(again, data, size) != 0))
        abort();
    return 0;
}
