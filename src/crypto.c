/* crypto.c -- crypto.h on OpenSSL 3: EVP_MAC for HMAC, EVP_Digest for SHA-256, RAND_bytes and
 * CRYPTO_memcmp. The only file that includes OpenSSL headers (libcurl does its own TLS). */
#include "crypto.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>

_Static_assert(CRYPTO_RANDOM_MAX <= 1 << 30, "RAND_bytes takes an int length");

int
crypto_hmac_sha256(const void *key, size_t keylen, const struct crypto_part *parts, size_t n_parts,
                   uint8_t out[CRYPTO_SHA256_LEN])
{
    /* OpenSSL reads a NULL or empty key as "keep the previous one"; no caller has an empty key,
     * so one would be a bug, refused here rather than MACed under whatever that means. */
    if (key == NULL || keylen == 0)
        return -1;
    EVP_MAC *hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    EVP_MAC_CTX *ctx = hmac != NULL ? EVP_MAC_CTX_new(hmac) : NULL;
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, "SHA256", 0),
                           OSSL_PARAM_construct_end()};
    size_t mac_len = 0;
    int ok = ctx != NULL && EVP_MAC_init(ctx, key, keylen, params) == 1;

    for (size_t i = 0; ok && i < n_parts; i++)
        ok = parts[i].len == 0 || EVP_MAC_update(ctx, parts[i].data, parts[i].len) == 1;
    ok = ok && EVP_MAC_final(ctx, out, &mac_len, CRYPTO_SHA256_LEN) == 1 &&
         mac_len == CRYPTO_SHA256_LEN;
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(hmac);
    return ok ? 0 : -1;
}

void
crypto_sha256(const void *data, size_t len, uint8_t out[CRYPTO_SHA256_LEN])
{
    unsigned int n = 0;

    /* SHA-256 is built into OpenSSL's default provider and needs no allocation that can fail in
     * practice. A failure would leave out unwritten, and callers compare it against stored key
     * hashes: stopping loudly beats authenticating against garbage. */
    if (EVP_Digest(data, len, out, &n, EVP_sha256(), NULL) != 1 || n != CRYPTO_SHA256_LEN) {
        fprintf(stderr, "crypto_sha256: OpenSSL cannot compute SHA-256; aborting\n");
        abort();
    }
}

int
crypto_random_bytes(void *buf, size_t n)
{
    if (n > CRYPTO_RANDOM_MAX)
        return -1;
    return RAND_bytes(buf, (int)n) == 1 ? 0 : -1;
}

bool
crypto_memeq(const void *a, const void *b, size_t n)
{
    return CRYPTO_memcmp(a, b, n) == 0;
}
