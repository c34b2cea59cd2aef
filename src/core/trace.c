/* trace.c -- the ids of trace.h. */
#include "trace.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "crypto.h"
#include "hex.h"

bool
trace_request_id_valid(const char *s)
{
    size_t n = strlen(s);

    return n >= 1 && n <= TRACE_REQUEST_ID_MAX &&
           strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.:/+=@") == n;
}

int
trace_request_id_make(char out[TRACE_REQUEST_ID_MAX + 1])
{
    uint8_t b[16];

    if (crypto_random_bytes(b, sizeof b) != 0)
        return -1;
    hex_encode(b, sizeof b, out);
    return 0;
}

/* n lower-case hex digits at s, not all zero when nonzero is set. */
static bool
hex_field(const char *s, size_t n, bool nonzero)
{
    bool any = false;

    for (size_t i = 0; i < n; i++) {
        if (hex_value(s[i]) < 0)
            return false;
        any = any || s[i] != '0';
    }
    return any || !nonzero;
}

int
trace_parent_parse(const char *s, char trace_id[TRACE_ID_LEN + 1], char span_id[TRACE_SPAN_LEN + 1])
{
    size_t n = strlen(s);

    /* version "-" trace-id "-" parent-id "-" flags: 2 + 1 + 32 + 1 + 16 + 1 + 2 */
    if (n < TRACE_PARENT_LEN || !hex_field(s, 2, false) || strncmp(s, "ff", 2) == 0 ||
        s[2] != '-' || !hex_field(s + 3, TRACE_ID_LEN, true) || s[35] != '-' ||
        !hex_field(s + 36, TRACE_SPAN_LEN, true) || s[52] != '-' || !hex_field(s + 53, 2, false))
        return -1;
    if (strncmp(s, "00", 2) == 0 ? n != TRACE_PARENT_LEN
                                 : n > TRACE_PARENT_LEN && s[TRACE_PARENT_LEN] != '-')
        return -1;
    memcpy(trace_id, s + 3, TRACE_ID_LEN);
    trace_id[TRACE_ID_LEN] = '\0';
    if (span_id != NULL) {
        memcpy(span_id, s + 36, TRACE_SPAN_LEN);
        span_id[TRACE_SPAN_LEN] = '\0';
    }
    return 0;
}

/* An id of zeros only is invalid in Trace Context; at 2^-64 odds or less, one bit fixes it. */
static void
not_zero(uint8_t *b, size_t n)
{
    uint8_t any = 0;

    for (size_t i = 0; i < n; i++)
        any |= b[i];
    if (any == 0)
        b[n - 1] = 1;
}

int
trace_parent_for(const char *key, char out[TRACE_PARENT_LEN + 1])
{
    static const char domain[] = "tocsin trace id\n"; /* keeps these hashes apart from others */
    uint8_t digest[CRYPTO_SHA256_LEN], span[TRACE_SPAN_LEN / 2];
    char trace_hex[TRACE_ID_LEN + 1], span_hex[TRACE_SPAN_LEN + 1];
    char buf[256];
    int n = snprintf(buf, sizeof buf, "%s%s", domain, key);

    if (n < 0 || crypto_random_bytes(span, sizeof span) != 0)
        return -1;
    crypto_sha256(buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1, digest);
    not_zero(digest, TRACE_ID_LEN / 2);
    not_zero(span, sizeof span);
    hex_encode(digest, TRACE_ID_LEN / 2, trace_hex);
    hex_encode(span, sizeof span, span_hex);
    snprintf(out, TRACE_PARENT_LEN + 1, "00-%s-%s-00", trace_hex, span_hex);
    return 0;
}
