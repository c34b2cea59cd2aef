/* crypto.h -- the primitives tocsin takes from OpenSSL 3, behind one module: HMAC-SHA256 (webhook
 * signatures, browser tokens), SHA-256 (API key hashes, request hashes, migration checksums), the
 * random source (secrets, keys) and a constant-time comparison. Only crypto.c includes OpenSSL
 * headers. Every function is thread-safe: OpenSSL 3 needs no locking set-up. */
#ifndef TOCSIN_CRYPTO_H
#define TOCSIN_CRYPTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CRYPTO_SHA256_LEN 32   /* bytes of a SHA-256 digest and of an HMAC-SHA256 */
#define CRYPTO_RANDOM_MAX 4096 /* bytes one crypto_random_bytes call may ask for */

/* One piece of a message that is MACed as the concatenation of its pieces, so that a caller
 * never has to copy "<id>.<timestamp>." and a body into one buffer first. */
struct crypto_part {
    const void *data;
    size_t len;
};

/* HMAC-SHA256 under key (keylen bytes, at least 1) of the concatenation of parts[0..n_parts)
 * into out. Returns 0, or -1 when keylen is 0 or OpenSSL fails (out is then unspecified). */
int crypto_hmac_sha256(const void *key, size_t keylen, const struct crypto_part *parts,
                       size_t n_parts, uint8_t out[CRYPTO_SHA256_LEN]);

/* SHA-256 of len bytes at data into out. Cannot fail short of a broken OpenSSL, which aborts the
 * process (see crypto.c). */
void crypto_sha256(const void *data, size_t len, uint8_t out[CRYPTO_SHA256_LEN]);

/* Fills buf with n (at most CRYPTO_RANDOM_MAX) bytes from OpenSSL's CSPRNG. Returns 0, or -1 when
 * n is too large or the generator cannot deliver (buf is then unspecified: do not use it). */
int crypto_random_bytes(void *buf, size_t n);

/* True when the n bytes at a and b are equal. The time taken depends on n only, never on where
 * the bytes differ: use it for every comparison of a secret or a MAC. */
bool crypto_memeq(const void *a, const void *b, size_t n);

#endif
