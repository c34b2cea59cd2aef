/* webhook_sign.h -- Standard Webhooks secrets and signatures: a secret is "whsec_" + base64 of
 * WEBHOOK_SECRET_BYTES random bytes; a signature is "v1," + base64(HMAC-SHA256(key,
 * "<id>.<ts>.<body>")) where key is the secret's decoded bytes. Pure apart from the random
 * source. */
#ifndef TOCSIN_WEBHOOK_SIGN_H
#define TOCSIN_WEBHOOK_SIGN_H

#include <stddef.h>
#include <stdint.h>

#define WEBHOOK_SECRET_BYTES 24
#define WEBHOOK_SECRET_LEN (6 + 4 * WEBHOOK_SECRET_BYTES / 3) /* "whsec_" + base64, no padding */
#define WEBHOOK_KEY_MAX 64                                    /* decoded secret bytes accepted */
#define WEBHOOK_SIGNATURE_LEN (3 + 44)                        /* "v1," + base64 of 32 bytes */
/* During a secret's rotation a request carries the new secret's signature and the old one's,
 * space-separated (Standard Webhooks: a receiver accepts any one that verifies). */
#define WEBHOOK_SIGNATURES_LEN (2 * WEBHOOK_SIGNATURE_LEN + 1)
#define WEBHOOK_ID_MAX 64 /* a webhook-id this long, NUL included, always fits webhook_sign */

/* A new secret into out (WEBHOOK_SECRET_LEN + 1 bytes). 0, or -1 when the random source fails. */
int webhook_sign_secret_new(char out[WEBHOOK_SECRET_LEN + 1]);
/* The signature of (id, timestamp, body) under secret into out (WEBHOOK_SIGNATURE_LEN + 1 bytes).
 * 0, or -1 when secret is not "whsec_" + the canonical padded base64 of 1..WEBHOOK_KEY_MAX
 * bytes (b64_decode), id is too long for its buffer, or the MAC fails. */
int webhook_sign(const char *secret, const char *id, int64_t timestamp_s, const char *body,
                 size_t body_len, char out[WEBHOOK_SIGNATURE_LEN + 1]);

#endif
