/* crypto.h -- the primitives tocsin takes from OpenSSL 3, behind one module: HMAC-SHA256 (webhook
 * signatures, browser tokens), SHA-256 (API key hashes, request hashes, migration checksums), the
 * random source (secrets, keys), a constant-time comparison, and for Web Push (webpush.c) HKDF
 * and AES-128-GCM. The elliptic-curve half (P-256 keys, ECDH, ES256) is crypto_ec.h. Only
 * crypto.c and crypto_ec.c include OpenSSL headers. Every function is thread-safe: OpenSSL 3
 * needs no locking set-up. */
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

#define CRYPTO_SHA256_HEX_LEN (2 * CRYPTO_SHA256_LEN) /* characters, without the NUL */

/* The same SHA-256 as 64 lower-case hex digits and a NUL into out: idempotency request hashes,
 * ETags, migration checksums. */
void crypto_sha256_hex(const void *data, size_t len, char out[CRYPTO_SHA256_HEX_LEN + 1]);

/* Fills buf with n (at most CRYPTO_RANDOM_MAX) bytes from OpenSSL's CSPRNG. Returns 0, or -1 when
 * n is too large or the generator cannot deliver (buf is then unspecified: do not use it). */
int crypto_random_bytes(void *buf, size_t n);

/* True when the n bytes at a and b are equal. The time taken depends on n only, never on where
 * the bytes differ: use it for every comparison of a secret or a MAC. */
bool crypto_memeq(const void *a, const void *b, size_t n);

/* Overwrites the n bytes at p with zeros in a way the compiler cannot drop as a dead store: for
 * keys and derived secrets on the stack once they are used. p may be NULL when n is 0. */
void crypto_wipe(void *p, size_t n);

/* ---- HKDF-SHA256 (RFC 5869) --------------------------------------------------------------- */

#define CRYPTO_HKDF_INPUT_MAX 1024 /* bytes of salt, IKM or info: OpenSSL 3.0 caps info at 1024 */
#define CRYPTO_HKDF_OUTPUT_MAX (255 * CRYPTO_SHA256_LEN) /* RFC 5869: L <= 255 * HashLen */

/* HKDF-Extract: prk = HMAC-SHA256(salt, ikm). saltlen and ikmlen 0..CRYPTO_HKDF_INPUT_MAX (an
 * empty salt means HashLen zeros, as RFC 5869 says). Returns 0, or -1 when a length is out of
 * range or OpenSSL fails (prk is then unspecified). */
int crypto_hkdf_extract(const void *salt, size_t saltlen, const void *ikm, size_t ikmlen,
                        uint8_t prk[CRYPTO_SHA256_LEN]);

/* HKDF-Expand: the first outlen (1..CRYPTO_HKDF_OUTPUT_MAX) bytes of the output keying material
 * of prk and info (infolen 0..CRYPTO_HKDF_INPUT_MAX) into out. Returns 0, or -1 when a length is
 * out of range or OpenSSL fails (out is then unspecified). */
int crypto_hkdf_expand(const uint8_t prk[CRYPTO_SHA256_LEN], const void *info, size_t infolen,
                       uint8_t *out, size_t outlen);

/* ---- AES-128-GCM (no associated data) ----------------------------------------------------- */

#define CRYPTO_AES128_KEY_LEN 16
#define CRYPTO_GCM_NONCE_LEN 12
#define CRYPTO_GCM_TAG_LEN 16
#define CRYPTO_GCM_TEXT_MAX (1 << 20) /* bytes one call encrypts or decrypts: a push is 4 KiB */

/* Encrypts len (0..CRYPTO_GCM_TEXT_MAX) bytes at in under key and nonce into out (len bytes) and
 * the 16-byte authentication tag into tag. out may be in (in place) but must not overlap it
 * otherwise. The caller must never use one nonce twice under one key. Returns 0, or -1 when len
 * is too large or OpenSSL fails (out and tag are then unspecified: send neither). */
int crypto_aes128gcm_seal(const uint8_t key[CRYPTO_AES128_KEY_LEN],
                          const uint8_t nonce[CRYPTO_GCM_NONCE_LEN], const uint8_t *in, size_t len,
                          uint8_t *out, uint8_t tag[CRYPTO_GCM_TAG_LEN]);

/* Decrypts len bytes at in (0..CRYPTO_GCM_TEXT_MAX) into out (len bytes, may be in) and checks
 * tag. Returns 0 when the tag is right, or -1 when it is not, len is too large (out untouched)
 * or OpenSSL fails; out is then zeroed, so that no unauthenticated plaintext is used by mistake. */
int crypto_aes128gcm_open(const uint8_t key[CRYPTO_AES128_KEY_LEN],
                          const uint8_t nonce[CRYPTO_GCM_NONCE_LEN], const uint8_t *in, size_t len,
                          const uint8_t tag[CRYPTO_GCM_TAG_LEN], uint8_t *out);

#endif
