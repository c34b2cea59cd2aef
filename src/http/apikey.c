/* apikey.c -- API key generation, shape checks and hashing (crypto.c's RNG and SHA-256).
 * Keys are high-entropy random strings, so a plain SHA-256 is the right hash: a slow password hash
 * would only cost every request time without adding anything. */
#include "apikey.h"

#include <string.h>

#include "b64.h"
#include "crypto.h"
#include "hex.h"

#define SECRET_BYTES 32
#define SECRET_LEN 43 /* base64url of 32 bytes, unpadded */

_Static_assert(SECRET_LEN == B64URL_ENCODED_LEN(SECRET_BYTES), "secret length");
_Static_assert(APIKEY_LEN == 4 + APIKEY_PREFIX_LEN + 1 + SECRET_LEN, "key length");
_Static_assert(APIKEY_HASH_LEN == CRYPTO_SHA256_LEN, "key hash length");

static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int
apikey_generate(char out[APIKEY_LEN + 1], char prefix[APIKEY_PREFIX_LEN + 1])
{
    uint8_t rnd[APIKEY_PREFIX_LEN / 2 + SECRET_BYTES];
    if (crypto_random_bytes(rnd, sizeof(rnd)) != 0)
        return -1;
    hex_encode(rnd, APIKEY_PREFIX_LEN / 2, prefix);
    memcpy(out, "tsk_", 4);
    memcpy(out + 4, prefix, APIKEY_PREFIX_LEN);
    out[4 + APIKEY_PREFIX_LEN] = '_';
    b64url_encode(rnd + APIKEY_PREFIX_LEN / 2, SECRET_BYTES, out + 5 + APIKEY_PREFIX_LEN);
    return 0;
}

int
apikey_parse(const char *key, size_t len, char prefix[APIKEY_PREFIX_LEN + 1])
{
    uint8_t prefix_bytes[APIKEY_PREFIX_LEN / 2];
    size_t n;

    if (len != APIKEY_LEN || memcmp(key, "tsk_", 4) != 0 || key[4 + APIKEY_PREFIX_LEN] != '_' ||
        hex_decode(key + 4, APIKEY_PREFIX_LEN, prefix_bytes, sizeof prefix_bytes, &n) != 0)
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

bool
apikey_tenant_name_valid(const char *name)
{
    size_t n = strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-");
    return n > 0 && n <= APIKEY_TENANT_NAME_MAX && name[n] == '\0';
}
