/* apikey.c -- API key generation, shape checks and hashing (crypto.c's RNG and SHA-256).
 * Keys are high-entropy random strings, so a plain SHA-256 is the right hash: a slow password hash
 * would only cost every request time without adding anything. */
#include "apikey.h"

#include <string.h>

#include "b64.h"
#include "crypto.h"

#define SECRET_BYTES 32
#define SECRET_LEN 43 /* base64url of 32 bytes, unpadded */

_Static_assert(SECRET_LEN == B64URL_ENCODED_LEN(SECRET_BYTES), "secret length");
_Static_assert(APIKEY_LEN == 4 + APIKEY_PREFIX_LEN + 1 + SECRET_LEN, "key length");
_Static_assert(APIKEY_HASH_LEN == CRYPTO_SHA256_LEN, "key hash length");

static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
static const char hexdigits[] = "0123456789abcdef";

int
apikey_generate(char out[APIKEY_LEN + 1], char prefix[APIKEY_PREFIX_LEN + 1])
{
    uint8_t rnd[APIKEY_PREFIX_LEN / 2 + SECRET_BYTES];
    if (crypto_random_bytes(rnd, sizeof(rnd)) != 0)
        return -1;
    for (int i = 0; i < APIKEY_PREFIX_LEN / 2; i++) {
        prefix[2 * i] = hexdigits[rnd[i] >> 4];
        prefix[2 * i + 1] = hexdigits[rnd[i] & 15];
    }
    prefix[APIKEY_PREFIX_LEN] = '\0';
    memcpy(out, "tsk_", 4);
    memcpy(out + 4, prefix, APIKEY_PREFIX_LEN);
    out[4 + APIKEY_PREFIX_LEN] = '_';
    b64url_encode(rnd + APIKEY_PREFIX_LEN / 2, SECRET_BYTES, out + 5 + APIKEY_PREFIX_LEN);
    return 0;
}

int
apikey_parse(const char *key, size_t len, char prefix[APIKEY_PREFIX_LEN + 1])
{
    if (len != APIKEY_LEN || memcmp(key, "tsk_", 4) != 0 || key[4 + APIKEY_PREFIX_LEN] != '_')
        return -1;
    for (size_t i = 0; i < APIKEY_PREFIX_LEN; i++)
        if (strchr(hexdigits, key[4 + i]) == NULL || key[4 + i] == '\0')
            return -1;
    for (size_t i = 5 + APIKEY_PREFIX_LEN; i < len; i++)
        if (key[i] == '\0' || strchr(b64url, key[i]) == NULL)
            return -1;
    memcpy(prefix, key + 4, APIKEY_PREFIX_LEN);
    prefix[APIKEY_PREFIX_LEN] = '\0';
    return 0;
}

void
apikey_hash(const char *key, size_t len, uint8_t out[APIKEY_HASH_LEN])
{
    crypto_sha256(key, len, out);
}

void
apikey_sha256_hex(const void *data, size_t len, char out[65])
{
    uint8_t h[APIKEY_HASH_LEN];
    apikey_hash(data, len, h);
    for (int i = 0; i < APIKEY_HASH_LEN; i++) {
        out[2 * i] = hexdigits[h[i] >> 4];
        out[2 * i + 1] = hexdigits[h[i] & 15];
    }
    out[64] = '\0';
}

bool
apikey_tenant_name_valid(const char *name)
{
    size_t n = strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-");
    return n > 0 && n <= APIKEY_TENANT_NAME_MAX && name[n] == '\0';
}
