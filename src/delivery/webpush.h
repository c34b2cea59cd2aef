/* webpush.h -- Web Push messages as a push service takes them, without I/O: the subscriber's keys
 * from PushSubscription.toJSON() (decoded and validated), the encrypted body (RFC 8291 on RFC 8188
 * "aes128gcm", one record), the VAPID key pair of a tenant and its ES256 JWT (RFC 8292), the
 * Authorization header, the audience (origin) of an endpoint and the Topic header (RFC 8030).
 * The delivery code sends what this module makes; the crypto is crypto.h and crypto_ec.h.
 * Thread-safe; no clock (the caller passes the time). */
#ifndef TOCSIN_WEBPUSH_H
#define TOCSIN_WEBPUSH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b64.h"
#include "crypto_ec.h"

/* ---- sizes (RFC 8291 section 4, RFC 8188 section 2) ---------------------------------------- */

#define WEBPUSH_P256DH_LEN 65 /* the browser's key: an uncompressed P-256 point */
#define WEBPUSH_AUTH_LEN 16   /* the browser's authentication secret */
#define WEBPUSH_SALT_LEN 16
#define WEBPUSH_RECORD_SIZE 4096 /* rs written in the header; one record holds the message */
/* salt(16) || rs(4) || idlen(1) || keyid: the sender's public key (65) */
#define WEBPUSH_HEADER_LEN (WEBPUSH_SALT_LEN + 4 + 1 + WEBPUSH_P256DH_LEN)
#define WEBPUSH_TAG_LEN 16
#define WEBPUSH_CEK_LEN 16    /* the AES-128-GCM content-encryption key */
#define WEBPUSH_NONCE_LEN 12  /* the AES-GCM nonce of the (only) record */
#define WEBPUSH_PADDING_LEN 1 /* the 0x02 delimiter of the last record; no further padding */
/* Push services must accept 4096-byte bodies (RFC 8030 section 7.2) and need not take more. */
#define WEBPUSH_BODY_MAX 4096
#define WEBPUSH_PLAINTEXT_MAX                                                                      \
    (WEBPUSH_BODY_MAX - WEBPUSH_HEADER_LEN - WEBPUSH_PADDING_LEN - WEBPUSH_TAG_LEN) /* 3993 */
/* Bytes of the body that carries n bytes of plaintext. */
#define WEBPUSH_BODY_LEN(n) (WEBPUSH_HEADER_LEN + (n) + WEBPUSH_PADDING_LEN + WEBPUSH_TAG_LEN)

/* Longest key texts read from a subscription: base64url, unpadded or padded (an 88-character
 * p256dh and a 24-character auth, as some browsers write them); anything longer is refused
 * before it is decoded. */
#define WEBPUSH_KEY_TEXT_MAX 128

/* VAPID keys as text, base64url without padding: the private scalar for storage, and the public
 * point, which is what GET /v1/push/vapid-public-key returns and the k= of Authorization. */
#define WEBPUSH_VAPID_PRIVATE_TEXT_LEN B64URL_ENCODED_LEN(CRYPTO_P256_PRIVATE_LEN) /* 43 */
#define WEBPUSH_VAPID_PUBLIC_TEXT_LEN B64URL_ENCODED_LEN(WEBPUSH_P256DH_LEN)       /* 87 */

/* Endpoints and their origins. An origin is scheme://host[:port] with the host of at most
 * WEBPUSH_HOST_MAX bytes (a DNS name's limit; an IPv6 literal is shorter). */
#define WEBPUSH_ENDPOINT_MAX 2048
#define WEBPUSH_HOST_MAX 253
#define WEBPUSH_ORIGIN_MAX (sizeof "https://" - 1 + WEBPUSH_HOST_MAX + sizeof ":65535" - 1)

/* The VAPID JWT: a subject of "mailto:" or "https:" and at most WEBPUSH_SUBJECT_MAX bytes, a
 * lifetime of at most 24 hours (RFC 8292 section 2; push services refuse more). */
#define WEBPUSH_SUBJECT_MAX 256
#define WEBPUSH_JWT_LIFETIME_MAX 86400
#define WEBPUSH_JWT_MAX 1024 /* longest token webpush_vapid_jwt writes; webpush.c checks it */
#define WEBPUSH_NOW_MAX (INT64_C(1) << 40) /* latest "now" taken, seconds: year 36812 */
#define WEBPUSH_AUTHORIZATION_MAX                                                                  \
    (sizeof "vapid t=, k=" - 1 + WEBPUSH_JWT_MAX + WEBPUSH_VAPID_PUBLIC_TEXT_LEN)

/* The Topic header: at most 32 base64url characters (RFC 8030 section 5.4). */
#define WEBPUSH_TOPIC_LEN 32

/* Why an input was refused: X(name, short text for logs and problem details). */
#define WEBPUSH_ERRORS(X)                                                                          \
    X(WEBPUSH_OK, "ok")                                                                            \
    X(WEBPUSH_E_P256DH_ENCODING, "keys.p256dh is not base64url")                                   \
    X(WEBPUSH_E_P256DH_LENGTH, "keys.p256dh is not 65 bytes")                                      \
    X(WEBPUSH_E_P256DH_POINT, "keys.p256dh is not an uncompressed point on P-256")                 \
    X(WEBPUSH_E_AUTH_ENCODING, "keys.auth is not base64url")                                       \
    X(WEBPUSH_E_AUTH_LENGTH, "keys.auth is not 16 bytes")                                          \
    X(WEBPUSH_E_TOO_LONG, "plaintext longer than WEBPUSH_PLAINTEXT_MAX bytes")                     \
    X(WEBPUSH_E_VAPID_KEY, "VAPID private key is not base64url of a P-256 scalar")                 \
    X(WEBPUSH_E_VAPID_MISMATCH, "VAPID public key does not belong to the private key")             \
    X(WEBPUSH_E_ENDPOINT, "endpoint is not an http(s) URL with a plain host")                      \
    X(WEBPUSH_E_AUDIENCE, "audience is not a canonical origin")                                    \
    X(WEBPUSH_E_SUBJECT, "subject is not a mailto: or https: URI of printable ASCII")              \
    X(WEBPUSH_E_LIFETIME, "JWT lifetime not 1..86400 s or time out of range")                      \
    X(WEBPUSH_E_INTERNAL, "OpenSSL or allocation failure")

enum webpush_error {
#define X(name, text) name,
    WEBPUSH_ERRORS(X)
#undef X
};

/* A short, static text for e (never quotes the input). */
const char *webpush_error_text(enum webpush_error e);

/* ---- subscriptions ------------------------------------------------------------------------- */

/* The keys of one subscription, decoded. Plain bytes: copy, store, nothing to free. */
struct webpush_subscriber {
    uint8_t p256dh[WEBPUSH_P256DH_LEN];
    uint8_t auth[WEBPUSH_AUTH_LEN];
};

/* True when the len bytes at p are a valid p256dh: 65 bytes, 0x04 first, a point on P-256. */
bool webpush_p256dh_valid(const uint8_t *p, size_t len);

/* Decodes the keys.p256dh (p256dh_len bytes) and keys.auth (auth_len bytes) texts of a
 * PushSubscription into *out. Each is base64url (RFC 4648 section 5), unpadded or with the
 * padding of its last quantum; a text over WEBPUSH_KEY_TEXT_MAX, with other characters or
 * non-zero trailing bits is refused. Checks p256dh first, then auth. Returns WEBPUSH_OK, or the
 * first refusal (*out is then unspecified). Texts need not be NUL-terminated. */
enum webpush_error webpush_subscriber_decode(const char *p256dh, size_t p256dh_len,
                                             const char *auth, size_t auth_len,
                                             struct webpush_subscriber *out);

/* ---- encryption (RFC 8291, RFC 8188) ------------------------------------------------------- */

/* Encrypts the len bytes at plaintext for subscriber to, with a fresh sender key pair and a
 * fresh salt, into body (room for WEBPUSH_BODY_MAX bytes); *body_len = WEBPUSH_BODY_LEN(len).
 * The body is the aes128gcm content coding: salt || rs=4096 || idlen=65 || sender public key ||
 * AES-128-GCM(plaintext || 0x02) || tag. Returns WEBPUSH_OK; WEBPUSH_E_TOO_LONG when len is
 * over WEBPUSH_PLAINTEXT_MAX; WEBPUSH_E_P256DH_POINT when to->p256dh is not a valid point;
 * WEBPUSH_E_INTERNAL when OpenSSL fails. On any error body holds nothing to send. plaintext
 * must not overlap body. */
enum webpush_error webpush_encrypt(const struct webpush_subscriber *to, const void *plaintext,
                                   size_t len, uint8_t body[WEBPUSH_BODY_MAX], size_t *body_len);

/* webpush_encrypt with a given salt and sender private scalar instead of fresh ones: for tests
 * and known-answer vectors only (RFC 8291 appendix A). A salt or sender key must never be used
 * twice; the delivery code calls webpush_encrypt. Also WEBPUSH_E_INTERNAL when sender_private is
 * not a valid scalar. */
enum webpush_error webpush_encrypt_with(const struct webpush_subscriber *to,
                                        const uint8_t salt[WEBPUSH_SALT_LEN],
                                        const uint8_t sender_private[CRYPTO_P256_PRIVATE_LEN],
                                        const void *plaintext, size_t len,
                                        uint8_t body[WEBPUSH_BODY_MAX], size_t *body_len);

/* The key schedule of RFC 8291 section 3.4 and RFC 8188 sections 2.2 and 2.3, shared by encryption
 * and by decryptors: from the ECDH secret, the subscriber's auth secret and public key, the
 * sender's public key and the salt, the 16-byte content-encryption key and the 12-byte nonce (of
 * the first and only record). Returns 0, or -1 when OpenSSL fails (cek and nonce then wiped). */
int webpush_derive_keys(const uint8_t ecdh_secret[CRYPTO_P256_SECRET_LEN],
                        const uint8_t auth[WEBPUSH_AUTH_LEN],
                        const uint8_t ua_public[WEBPUSH_P256DH_LEN],
                        const uint8_t as_public[WEBPUSH_P256DH_LEN],
                        const uint8_t salt[WEBPUSH_SALT_LEN], uint8_t cek[WEBPUSH_CEK_LEN],
                        uint8_t nonce[WEBPUSH_NONCE_LEN]);

/* ---- VAPID (RFC 8292) ---------------------------------------------------------------------- */

/* A tenant's VAPID key pair. Opaque; read-only once made, so threads may share one. */
struct webpush_vapid;

/* A new random key pair; the caller frees it with webpush_vapid_free. NULL when OpenSSL fails. */
struct webpush_vapid *webpush_vapid_generate(void);

/* The key pair stored as private_text (WEBPUSH_VAPID_PRIVATE_TEXT_LEN characters of unpadded
 * base64url: the 32-byte scalar) and, when public_text is not NULL, checked against the stored
 * public key text (which must then be what the private key gives). Texts are NUL-terminated.
 * Returns WEBPUSH_OK with *out set (the caller frees it with webpush_vapid_free), or
 * WEBPUSH_E_VAPID_KEY, WEBPUSH_E_VAPID_MISMATCH or WEBPUSH_E_INTERNAL (*out is then NULL). */
enum webpush_error webpush_vapid_import(const char *private_text, const char *public_text,
                                        struct webpush_vapid **out);

/* Frees v and wipes its private key. Accepts NULL. */
void webpush_vapid_free(struct webpush_vapid *v);

/* Writes the private scalar of v as text (NUL-terminated) into out, for storage. Returns 0, or -1
 * when OpenSSL fails. Secret: never log it. */
int webpush_vapid_export(const struct webpush_vapid *v,
                         char out[WEBPUSH_VAPID_PRIVATE_TEXT_LEN + 1]);

/* The public key of v as text, borrowed from v (valid until webpush_vapid_free). */
const char *webpush_vapid_public_key(const struct webpush_vapid *v);

/* Writes into out (NUL-terminated) the VAPID JWT of v: header {"typ":"JWT","alg":"ES256"}, claims
 * {"aud":audience,"exp":now_s + lifetime_s,"sub":subject}, ES256 signature as r || s. audience must
 * be a canonical origin (what webpush_origin writes); subject "mailto:" or "https:" and at least
 * one more byte, at most WEBPUSH_SUBJECT_MAX bytes of printable ASCII without space, quote or
 * backslash; lifetime_s 1..WEBPUSH_JWT_LIFETIME_MAX (push_keys.c asks for 12 h, as common libraries
 * do, which leaves room for clock skew); now_s 0..WEBPUSH_NOW_MAX. Returns WEBPUSH_OK, or
 * WEBPUSH_E_AUDIENCE, _SUBJECT, _LIFETIME or _INTERNAL (out is then ""). A token may be reused for
 * its audience until shortly before exp. */
enum webpush_error webpush_vapid_jwt(const struct webpush_vapid *v, const char *audience,
                                     const char *subject, int64_t now_s, int64_t lifetime_s,
                                     char out[WEBPUSH_JWT_MAX + 1]);

/* Writes "vapid t=<jwt>, k=<public key of v>" into out (NUL-terminated): the Authorization
 * header value. jwt is a token from webpush_vapid_jwt. Returns 0, or -1 when jwt is longer than
 * WEBPUSH_JWT_MAX (out is then ""). */
int webpush_vapid_authorization(const struct webpush_vapid *v, const char *jwt,
                                char out[WEBPUSH_AUTHORIZATION_MAX + 1]);

/* ---- endpoints and topics ------------------------------------------------------------------ */

/* Writes the origin of the endpoint URL (NUL-terminated) into out, the "aud" of its VAPID JWT,
 * as browsers serialise it (WHATWG URL, what new URL(endpoint).origin gives): scheme and host in
 * lower case, the port only when it is not the scheme's default and without leading zeros, an
 * IPv6 literal in brackets in its canonical form. Takes "http" and "https" (whether plain http
 * is allowed is the caller's policy). Refuses (WEBPUSH_E_ENDPOINT, out then "") what it cannot
 * be sure to serialise as a browser does: another scheme, a text not starting with the scheme,
 * userinfo, an empty host, a host with bytes outside [A-Za-z0-9._-] (so no percent-escapes and
 * no raw non-ASCII), an empty label, a host whose last label is a number but that is not a
 * dotted quad (browsers rewrite 127.1 or 0x7f.0.0.1), a port not 1..65535, an endpoint over
 * WEBPUSH_ENDPOINT_MAX bytes. "xn--" labels are taken as they are, not checked as punycode. */
enum webpush_error webpush_origin(const char *endpoint, char out[WEBPUSH_ORIGIN_MAX + 1]);

/* Writes the Topic header value for the notification named id (NUL-terminated) into out: the
 * first 24 bytes of SHA-256(id) in base64url, 32 characters. Equal ids give equal topics, so a
 * push service replaces an undelivered message by a newer one of the same id. */
void webpush_topic(const char *id, char out[WEBPUSH_TOPIC_LEN + 1]);

#endif
