/* crypto.c -- crypto.h on OpenSSL 3: EVP_MAC for HMAC, EVP_Digest for SHA-256, RAND_bytes,
 * CRYPTO_memcmp and OPENSSL_cleanse, EVP_KDF "HKDF" and EVP_aes_128_gcm. With crypto_ec.c the only
 * files that include OpenSSL headers (libcurl does its own TLS). */
#include "crypto.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hex.h"

_Static_assert(CRYPTO_RANDOM_MAX <= 1 << 30, "RAND_bytes takes an int length");
_Static_assert(CRYPTO_GCM_TEXT_MAX <= 1 << 30, "EVP_EncryptUpdate takes an int length");

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

/* SHA-256 fetched from the default provider once: EVP_sha256() is fetched again by each
 * EVP_Digest, which took 40 % of a digest's time (2 % of a replica's CPU creating meetings, whose
 * API key and ETag are each a digest). Never freed: it lives as long as the process. */
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;
static EVP_MD *sha256_md;

static void
sha256_fetch(void)
{
    sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

void
crypto_sha256(const void *data, size_t len, uint8_t out[CRYPTO_SHA256_LEN])
{
    unsigned int n = 0;

    /* SHA-256 is built into OpenSSL's default provider and needs no allocation that can fail in
     * practice. A failure would leave out unwritten, and callers compare it against stored key
     * hashes: stopping loudly beats authenticating against garbage. */
    pthread_once(&sha256_once, sha256_fetch);
    if (sha256_md == NULL || EVP_Digest(data, len, out, &n, sha256_md, NULL) != 1 ||
        n != CRYPTO_SHA256_LEN) {
        fprintf(stderr, "crypto_sha256: OpenSSL cannot compute SHA-256; aborting\n");
        abort();
    }
}

void
crypto_sha256_hex(const void *data, size_t len, char out[CRYPTO_SHA256_HEX_LEN + 1])
{
    uint8_t md[CRYPTO_SHA256_LEN];

    crypto_sha256(data, len, md);
    hex_encode(md, sizeof md, out);
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

void
crypto_wipe(void *p, size_t n)
{
    if (n > 0)
        OPENSSL_cleanse(p, n);
}

/* One HKDF derivation in the given mode (extract only or expand only): OpenSSL names the input
 * keying material of the first and the PRK of the second alike, "key". */
static int
hkdf(int mode, const void *salt, size_t saltlen, const void *key, size_t keylen, const void *info,
     size_t infolen, uint8_t *out, size_t outlen)
{
    EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
    EVP_KDF_CTX *ctx = kdf != NULL ? EVP_KDF_CTX_new(kdf) : NULL;
    OSSL_PARAM params[6], *p = params;
    int ok;

    /* OpenSSL takes the octet strings as non-const void *; it only reads them. */
    *p++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, "SHA256", 0);
    *p++ = OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode);
    *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)key, keylen);
    if (mode == EVP_KDF_HKDF_MODE_EXTRACT_ONLY)
        *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)salt, saltlen);
    else if (infolen > 0)
        *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)info, infolen);
    *p = OSSL_PARAM_construct_end();
    ok = ctx != NULL && EVP_KDF_derive(ctx, out, outlen, params) == 1;
    EVP_KDF_CTX_free(ctx);
    EVP_KDF_free(kdf);
    return ok ? 0 : -1;
}

int
crypto_hkdf_extract(const void *salt, size_t saltlen, const void *ikm, size_t ikmlen,
                    uint8_t prk[CRYPTO_SHA256_LEN])
{
    static const uint8_t zeros[CRYPTO_SHA256_LEN];

    if (saltlen > CRYPTO_HKDF_INPUT_MAX || ikmlen > CRYPTO_HKDF_INPUT_MAX)
        return -1;
    /* OpenSSL refuses an empty salt parameter; RFC 5869 defines it as HashLen zeros. */
    if (saltlen == 0) {
        salt = zeros;
        saltlen = sizeof zeros;
    }
    return hkdf(EVP_KDF_HKDF_MODE_EXTRACT_ONLY, salt, saltlen, ikm, ikmlen, NULL, 0, prk,
                CRYPTO_SHA256_LEN);
}

int
crypto_hkdf_expand(const uint8_t prk[CRYPTO_SHA256_LEN], const void *info, size_t infolen,
                   uint8_t *out, size_t outlen)
{
    if (infolen > CRYPTO_HKDF_INPUT_MAX || outlen == 0 || outlen > CRYPTO_HKDF_OUTPUT_MAX)
        return -1;
    return hkdf(EVP_KDF_HKDF_MODE_EXPAND_ONLY, NULL, 0, prk, CRYPTO_SHA256_LEN, info, infolen, out,
                outlen);
}

/* A GCM context for AES-128 under key and nonce, set up to encrypt or to decrypt; NULL when
 * OpenSSL fails. 12 bytes is GCM's default nonce length, so no EVP_CTRL_GCM_SET_IVLEN. */
static EVP_CIPHER_CTX *
gcm_new(const uint8_t *key, const uint8_t *nonce, int encrypt)
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();

    _Static_assert(CRYPTO_GCM_NONCE_LEN == 12, "GCM's default IV length");
    if (ctx != NULL && EVP_CipherInit_ex2(ctx, EVP_aes_128_gcm(), key, nonce, encrypt, NULL) != 1) {
        EVP_CIPHER_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

int
crypto_aes128gcm_seal(const uint8_t key[CRYPTO_AES128_KEY_LEN],
                      const uint8_t nonce[CRYPTO_GCM_NONCE_LEN], const uint8_t *in, size_t len,
                      uint8_t *out, uint8_t tag[CRYPTO_GCM_TAG_LEN])
{
    EVP_CIPHER_CTX *ctx;
    int n = 0, fin = 0, ok;

    if (len > CRYPTO_GCM_TEXT_MAX || (ctx = gcm_new(key, nonce, 1)) == NULL)
        return -1;
    ok = (len == 0 || EVP_EncryptUpdate(ctx, out, &n, in, (int)len) == 1) &&
         EVP_EncryptFinal_ex(ctx, out + n, &fin) == 1 && (size_t)n + (size_t)fin == len &&
         EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, CRYPTO_GCM_TAG_LEN, tag) == 1;
    EVP_CIPHER_CTX_free(ctx);
    return ok ? 0 : -1;
}

int
crypto_aes128gcm_open(const uint8_t key[CRYPTO_AES128_KEY_LEN],
                      const uint8_t nonce[CRYPTO_GCM_NONCE_LEN], const uint8_t *in, size_t len,
                      const uint8_t tag[CRYPTO_GCM_TAG_LEN], uint8_t *out)
{
    uint8_t expected[CRYPTO_GCM_TAG_LEN];
    EVP_CIPHER_CTX *ctx;
    int n = 0, fin = 0, ok;

    if (len > CRYPTO_GCM_TEXT_MAX)
        return -1;
    /* The tag is set before the final call, which compares it in constant time. OpenSSL wants a
     * writable buffer for it. */
    memcpy(expected, tag, sizeof expected);
    ctx = gcm_new(key, nonce, 0);
    ok = ctx != NULL &&
         EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, CRYPTO_GCM_TAG_LEN, expected) == 1 &&
         (len == 0 || EVP_DecryptUpdate(ctx, out, &n, in, (int)len) == 1) &&
         EVP_DecryptFinal_ex(ctx, out + n, &fin) == 1 && (size_t)n + (size_t)fin == len;
    EVP_CIPHER_CTX_free(ctx);
    if (!ok)
        crypto_wipe(out, len);
    return ok ? 0 : -1;
}
