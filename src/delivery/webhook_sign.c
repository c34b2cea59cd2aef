/* webhook_sign.c -- the signing of webhook_sign.h: HMAC-SHA256 and randomness from crypto.c,
 * base64 from b64.c. */
#include "webhook_sign.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "b64.h"
#include "crypto.h"

#define SIGN_PREFIX "whsec_"

_Static_assert(WEBHOOK_SECRET_LEN == 6 + B64_ENCODED_LEN(WEBHOOK_SECRET_BYTES), "secret length");
_Static_assert(WEBHOOK_SIGNATURE_LEN == 3 + B64_ENCODED_LEN(CRYPTO_SHA256_LEN), "signature length");

int
webhook_sign_secret_new(char out[WEBHOOK_SECRET_LEN + 1])
{
    uint8_t rnd[WEBHOOK_SECRET_BYTES];

    if (crypto_random_bytes(rnd, sizeof rnd) != 0)
        return -1;
    memcpy(out, SIGN_PREFIX, 6);
    b64_encode(rnd, sizeof rnd, out + 6); /* 24 bytes: no padding */
    return 0;
}

/* Decodes the base64 after "whsec_" into key; returns its length (1..WEBHOOK_KEY_MAX), or -1. */
static int
secret_key(const char *secret, uint8_t key[WEBHOOK_KEY_MAX])
{
    size_t n;

    if (strncmp(secret, SIGN_PREFIX, 6) != 0)
        return -1;
    secret += 6;
    if (b64_decode(secret, strlen(secret), key, WEBHOOK_KEY_MAX, &n) != 0 || n == 0)
        return -1;
    return (int)n;
}

int
webhook_sign(const char *secret, const char *id, int64_t timestamp_s, const char *body,
             size_t body_len, char out[WEBHOOK_SIGNATURE_LEN + 1])
{
    uint8_t key[WEBHOOK_KEY_MAX], mac[CRYPTO_SHA256_LEN];
    char head[WEBHOOK_ID_MAX + 32];
    int klen = secret_key(secret, key);
    int hlen = snprintf(head, sizeof head, "%s.%" PRId64 ".", id, timestamp_s);

    if (klen < 0 || hlen < 0 || (size_t)hlen >= sizeof head)
        return -1;
    struct crypto_part parts[] = {{head, (size_t)hlen}, {body, body_len}};
    if (crypto_hmac_sha256(key, (size_t)klen, parts, 2, mac) != 0)
        return -1;
    memcpy(out, "v1,", 3);
    b64_encode(mac, sizeof mac, out + 3);
    return 0;
}
