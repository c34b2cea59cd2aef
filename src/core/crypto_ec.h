/* crypto_ec.h -- the elliptic-curve primitives tocsin takes from OpenSSL 3, for Web Push only
 * (webpush.c): P-256 key pairs (the tenants' VAPID keys, the per-message sender keys), ECDH with a
 * browser's key, and ES256 signatures (ECDSA P-256 with SHA-256, in JOSE's raw r||s form). Keys
 * cross this interface as bytes: the 32-byte private scalar (big-endian) and the 65-byte
 * uncompressed point 0x04||x||y (SEC 1). Only crypto_ec.c includes OpenSSL headers.
 * Thread-safe: a key is read-only once made, so several threads may use one at once. */
#ifndef TOCSIN_CRYPTO_EC_H
#define TOCSIN_CRYPTO_EC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CRYPTO_P256_PRIVATE_LEN 32         /* the scalar d, big-endian, 1 <= d < the group order */
#define CRYPTO_P256_PUBLIC_LEN 65          /* 0x04 || x || y, coordinates big-endian */
#define CRYPTO_P256_SECRET_LEN 32          /* an ECDH shared secret: the x coordinate of d * Q */
#define CRYPTO_ES256_SIG_LEN 64            /* r || s, 32 bytes each (RFC 7518 section 3.4) */
#define CRYPTO_ES256_INPUT_MAX (64 * 1024) /* bytes one signature covers: a JWT is < 1 KiB */

/* A P-256 key pair. Opaque: made by crypto_ec_key_generate or _import, freed by _free. */
struct crypto_ec_key;

/* A new random key pair. Returns it (the caller frees it with crypto_ec_key_free), or NULL when
 * OpenSSL fails. */
struct crypto_ec_key *crypto_ec_key_generate(void);

/* The key pair of the private scalar d (CRYPTO_P256_PRIVATE_LEN bytes, big-endian); the public
 * point is computed from it. Returns the key (the caller frees it with crypto_ec_key_free), or
 * NULL when d is 0 or not below the group order, or OpenSSL fails. */
struct crypto_ec_key *crypto_ec_key_import(const uint8_t d[CRYPTO_P256_PRIVATE_LEN]);

/* Frees k and wipes its private scalar. Accepts NULL. */
void crypto_ec_key_free(struct crypto_ec_key *k);

/* Writes the private scalar of k into d, for storage; the caller wipes d (crypto_wipe) when done.
 * Returns 0, or -1 when OpenSSL fails (d is then wiped). */
int crypto_ec_key_export(const struct crypto_ec_key *k, uint8_t d[CRYPTO_P256_PRIVATE_LEN]);

/* The public point of k, borrowed from k (valid until crypto_ec_key_free). Cannot fail. */
const uint8_t *crypto_ec_key_public(const struct crypto_ec_key *k);

/* True when the len bytes at pub are an uncompressed point on P-256: len is
 * CRYPTO_P256_PUBLIC_LEN, the first byte 0x04, both coordinates below the field prime and
 * y^2 = x^3 - 3x + b. (The point at infinity has no such encoding; P-256's cofactor is 1, so
 * every point on the curve is in the group.) */
bool crypto_ec_public_valid(const uint8_t *pub, size_t len);

/* ECDH: the x coordinate of k's private scalar times the point peer, into secret. Returns 0, or
 * -1 when peer is not a valid point (see crypto_ec_public_valid) or OpenSSL fails (secret is then
 * wiped). The caller wipes secret when done. */
int crypto_ec_ecdh(const struct crypto_ec_key *k, const uint8_t peer[CRYPTO_P256_PUBLIC_LEN],
                   uint8_t secret[CRYPTO_P256_SECRET_LEN]);

/* ES256: signs SHA-256 of the len (0..CRYPTO_ES256_INPUT_MAX) bytes at msg with k, writes r || s
 * into sig. Signatures are randomised (a fresh nonce each time), so two signatures of one message
 * differ. Returns 0, or -1 when len is too large or OpenSSL fails. */
int crypto_ec_sign_es256(const struct crypto_ec_key *k, const void *msg, size_t len,
                         uint8_t sig[CRYPTO_ES256_SIG_LEN]);

/* True when sig (r || s) is a valid ES256 signature of the len bytes at msg under the public point
 * pub. False for an invalid point, r or s of 0 or not below the order, len over
 * CRYPTO_ES256_INPUT_MAX, or an OpenSSL failure. */
bool crypto_ec_verify_es256(const uint8_t pub[CRYPTO_P256_PUBLIC_LEN], const void *msg, size_t len,
                            const uint8_t sig[CRYPTO_ES256_SIG_LEN]);

#endif
