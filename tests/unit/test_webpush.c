/* test_webpush.c -- webpush.c: RFC 8291 appendix A byte for byte (fixed salt and sender key, the
 * "watermelon" message), its published CEK and nonce, and its body decrypted; round trips with
 * random keys at every interesting length through a small decryptor written here from RFC 8188
 * (test-only: tocsin never decrypts); refusals of bad keys, bad points, too long plaintexts and
 * tampered bodies; VAPID keys out and back in; the JWT's exact shape, claims and signature; the
 * Authorization value; endpoint origins; topics. (npm http_ece and jose check the same outputs
 * independently in tests/api/webpush_cross.test.mjs.) */
#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "check.h"
#include "crypto.h"
#include "crypto_ec.h"
#include "webpush.h"

#define ROUND_TRIPS 40
#define TEXT_MAX 8192

/* RFC 8291 appendix A. */
static const char rfc_plaintext[] = "When I grow up, I want to be a watermelon";
static const char rfc_ua_private[] = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94";
static const char rfc_ua_public[] =
    "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4";
static const char rfc_auth[] = "BTBZMqHH6r4Tts7J_aSIgg";
static const char rfc_as_private[] = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw";
static const char rfc_as_public[] =
    "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8";
static const char rfc_salt[] = "DGv6ra1nlYgDCS1FRnbzlw";
static const char rfc_ecdh[] = "kyrL1jIIOHEzg3sM2ZWRHDRB62YACZhhSlknJ672kSs";
static const char rfc_cek[] = "oIhVW04MRdy2XN9CiKLxTg";
static const char rfc_nonce[] = "4h_95klXJ5E_qnoN";
static const char rfc_body[] = "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27ml"
                               "mlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPT"
                               "pK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN";

/* The bytes of a base64url text, exactly want of them, into out. */
static bool
decode(const char *text, uint8_t *out, size_t want)
{
    size_t n = 0;

    return b64url_decode(text, strlen(text), out, want, &n) == 0 && n == want;
}

static uint32_t
be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* A user agent's decryption of an aes128gcm body of one record (RFC 8188 section 2, RFC 8291
 * section 3.4), written from the RFCs: header, ECDH with the keyid, the shared key schedule,
 * AES-GCM, then the padding: trailing zeros, then the 0x02 delimiter of a last record. Returns
 * the plaintext's length in out, or -1 for any body a user agent must refuse. */
static long
ua_decrypt(const struct crypto_ec_key *ua, const uint8_t auth[WEBPUSH_AUTH_LEN],
           const uint8_t *body, size_t len, uint8_t *out)
{
    uint8_t secret[CRYPTO_P256_SECRET_LEN], cek[WEBPUSH_CEK_LEN], nonce[WEBPUSH_NONCE_LEN];
    size_t rlen;
    long n;

    if (len < WEBPUSH_HEADER_LEN + 1 + WEBPUSH_TAG_LEN || body[20] != WEBPUSH_P256DH_LEN)
        return -1;
    rlen = len - WEBPUSH_HEADER_LEN;
    if (be32(body + 16) < 18 || rlen > be32(body + 16)) /* one record, at most rs */
        return -1;
    if (crypto_ec_ecdh(ua, body + 21, secret) != 0 ||
        webpush_derive_keys(secret, auth, crypto_ec_key_public(ua), body + 21, body, cek, nonce) !=
            0 ||
        crypto_aes128gcm_open(cek, nonce, body + WEBPUSH_HEADER_LEN, rlen - WEBPUSH_TAG_LEN,
                              body + len - WEBPUSH_TAG_LEN, out) != 0)
        return -1;
    n = (long)(rlen - WEBPUSH_TAG_LEN) - 1;
    while (n >= 0 && out[n] == 0)
        n--;
    return n >= 0 && out[n] == 0x02 ? n : -1;
}

static struct crypto_ec_key *
import_text(const char *text)
{
    uint8_t d[CRYPTO_P256_PRIVATE_LEN];

    return decode(text, d, sizeof d) ? crypto_ec_key_import(d) : NULL;
}

static void
test_rfc8291(void)
{
    struct webpush_subscriber sub;
    uint8_t salt[WEBPUSH_SALT_LEN], as_d[CRYPTO_P256_PRIVATE_LEN], body[WEBPUSH_BODY_MAX],
        want[WEBPUSH_BODY_MAX], out[WEBPUSH_BODY_MAX], ecdh[CRYPTO_P256_SECRET_LEN],
        as_pub[WEBPUSH_P256DH_LEN], cek[WEBPUSH_CEK_LEN], nonce[WEBPUSH_NONCE_LEN],
        want_cek[WEBPUSH_CEK_LEN], want_nonce[WEBPUSH_NONCE_LEN];
    size_t body_len = 0, want_len = strlen(rfc_plaintext) + 103;
    struct crypto_ec_key *ua = import_text(rfc_ua_private);
    long n;

    CHECK(webpush_subscriber_decode(rfc_ua_public, strlen(rfc_ua_public), rfc_auth,
                                    strlen(rfc_auth), &sub) == WEBPUSH_OK,
          "the RFC's subscription refused");
    CHECK(decode(rfc_salt, salt, sizeof salt) && decode(rfc_as_private, as_d, sizeof as_d) &&
              decode(rfc_body, want, want_len) && decode(rfc_ecdh, ecdh, sizeof ecdh) &&
              decode(rfc_as_public, as_pub, sizeof as_pub) &&
              decode(rfc_cek, want_cek, sizeof want_cek) &&
              decode(rfc_nonce, want_nonce, sizeof want_nonce) && ua != NULL,
          "bad vector");
    CHECK(webpush_derive_keys(ecdh, sub.auth, sub.p256dh, as_pub, salt, cek, nonce) == 0 &&
              memcmp(cek, want_cek, sizeof cek) == 0 &&
              memcmp(nonce, want_nonce, sizeof nonce) == 0,
          "CEK or NONCE differs from the RFC's");
    CHECK(webpush_encrypt_with(&sub, salt, as_d, rfc_plaintext, strlen(rfc_plaintext), body,
                               &body_len) == WEBPUSH_OK,
          "encryption failed");
    CHECK(body_len == want_len && body_len == WEBPUSH_BODY_LEN(strlen(rfc_plaintext)),
          "body of %zu bytes, want %zu", body_len, want_len);
    CHECK(memcmp(body, want, want_len) == 0, "the body differs from RFC 8291 appendix A");
    n = ua != NULL ? ua_decrypt(ua, sub.auth, want, want_len, out) : -1;
    CHECK(n == (long)strlen(rfc_plaintext) && memcmp(out, rfc_plaintext, (size_t)n) == 0,
          "the RFC's body does not decrypt to its plaintext");
    crypto_ec_key_free(ua);
}

/* A random subscriber, with its private key in *ua (the caller frees it). */
static void
random_subscriber(struct webpush_subscriber *s, struct crypto_ec_key **ua)
{
    *ua = crypto_ec_key_generate();
    memset(s, 0, sizeof *s);
    if (*ua != NULL)
        memcpy(s->p256dh, crypto_ec_key_public(*ua), WEBPUSH_P256DH_LEN);
    CHECK(*ua != NULL && crypto_random_bytes(s->auth, sizeof s->auth) == 0, "random keys");
}

static void
test_round_trips(void)
{
    static const size_t lengths[] = {
        0, 1, 15, 16, 17, 200, WEBPUSH_PLAINTEXT_MAX - 1, WEBPUSH_PLAINTEXT_MAX};
    static uint8_t plain[WEBPUSH_PLAINTEXT_MAX], body[WEBPUSH_BODY_MAX], prev[WEBPUSH_BODY_MAX],
        out[WEBPUSH_BODY_MAX];
    size_t nlen = sizeof lengths / sizeof lengths[0], body_len = 0;

    for (int i = 0; i < ROUND_TRIPS; i++) {
        struct webpush_subscriber sub;
        struct crypto_ec_key *ua;
        size_t len = i < (int)nlen ? lengths[i] : (size_t)(i * 97) % WEBPUSH_PLAINTEXT_MAX;
        random_subscriber(&sub, &ua);
        CHECK(crypto_random_bytes(plain, len) == 0, "random plaintext");
        CHECK(webpush_encrypt(&sub, plain, len, body, &body_len) == WEBPUSH_OK &&
                  body_len == WEBPUSH_BODY_LEN(len) && body_len <= WEBPUSH_BODY_MAX,
              "round trip %d: %zu bytes not encrypted", i, len);
        CHECK(be32(body + 16) == WEBPUSH_RECORD_SIZE && body[20] == 65 && body[21] == 0x04 &&
                  webpush_p256dh_valid(body + 21, 65),
              "round trip %d: header", i);
        long n = ua != NULL ? ua_decrypt(ua, sub.auth, body, body_len, out) : -1;
        CHECK(n == (long)len && memcmp(out, plain, len) == 0,
              "round trip %d: %zu bytes back as %ld", i, len, n);
        /* A fresh salt and sender key for every message. */
        if (i > 0)
            CHECK(memcmp(body, prev, WEBPUSH_HEADER_LEN) != 0 &&
                      memcmp(body, prev, WEBPUSH_SALT_LEN) != 0 &&
                      memcmp(body + 21, prev + 21, WEBPUSH_P256DH_LEN) != 0,
                  "round trip %d: salt or sender key reused", i);
        memcpy(prev, body, WEBPUSH_HEADER_LEN);
        /* Another subscriber's key, or another auth secret, does not open it. */
        struct crypto_ec_key *other = crypto_ec_key_generate();
        CHECK(other != NULL && ua_decrypt(other, sub.auth, body, body_len, out) == -1,
              "round trip %d: opened with another key", i);
        sub.auth[0] ^= 1;
        CHECK(ua == NULL || ua_decrypt(ua, sub.auth, body, body_len, out) == -1,
              "round trip %d: opened with another auth secret", i);
        crypto_ec_key_free(other);
        crypto_ec_key_free(ua);
    }
}

static void
test_tampering(void)
{
    static uint8_t body[WEBPUSH_BODY_MAX], out[WEBPUSH_BODY_MAX];
    struct webpush_subscriber sub;
    struct crypto_ec_key *ua;
    size_t body_len = 0;

    random_subscriber(&sub, &ua);
    CHECK(webpush_encrypt(&sub, "hello", 5, body, &body_len) == WEBPUSH_OK, "encrypt");
    for (size_t i = 0; ua != NULL && i < body_len; i++) {
        /* The rs field may grow without changing the meaning of a one-record body. */
        if (i >= 16 && i < 20)
            continue;
        body[i] ^= 0x40;
        CHECK(ua_decrypt(ua, sub.auth, body, body_len, out) == -1, "byte %zu flipped opened", i);
        body[i] ^= 0x40;
    }
    CHECK(ua != NULL && ua_decrypt(ua, sub.auth, body, body_len, out) == 5, "untampered");
    CHECK(ua != NULL && ua_decrypt(ua, sub.auth, body, body_len - 1, out) == -1, "truncated");
    crypto_ec_key_free(ua);
}

static void
test_encrypt_refusals(void)
{
    static uint8_t plain[WEBPUSH_PLAINTEXT_MAX + 1], body[WEBPUSH_BODY_MAX];
    uint8_t salt[WEBPUSH_SALT_LEN] = {0}, d[CRYPTO_P256_PRIVATE_LEN] = {0};
    struct webpush_subscriber sub;
    struct crypto_ec_key *ua;
    size_t body_len = 0;

    random_subscriber(&sub, &ua);
    CHECK(webpush_encrypt(&sub, plain, WEBPUSH_PLAINTEXT_MAX + 1, body, &body_len) ==
              WEBPUSH_E_TOO_LONG,
          "3994 bytes of plaintext accepted");
    CHECK(webpush_encrypt(&sub, plain, WEBPUSH_PLAINTEXT_MAX, body, &body_len) == WEBPUSH_OK &&
              body_len == WEBPUSH_BODY_MAX,
          "3993 bytes of plaintext do not make a 4096-byte body");
    d[31] = 1;
    CHECK(webpush_encrypt_with(&sub, salt, d, plain, WEBPUSH_PLAINTEXT_MAX + 1, body, &body_len) ==
              WEBPUSH_E_TOO_LONG,
          "3994 bytes accepted with a fixed key");
    sub.p256dh[64] ^= 1; /* off the curve */
    CHECK(webpush_encrypt(&sub, plain, 1, body, &body_len) == WEBPUSH_E_P256DH_POINT,
          "a point off the curve accepted");
    sub.p256dh[64] ^= 1;
    sub.p256dh[0] = 0x02;
    CHECK(webpush_encrypt(&sub, plain, 1, body, &body_len) == WEBPUSH_E_P256DH_POINT,
          "a 0x02 prefix accepted");
    sub.p256dh[0] = 0x04;
    memset(d, 0, sizeof d);
    CHECK(webpush_encrypt_with(&sub, salt, d, plain, 1, body, &body_len) == WEBPUSH_E_INTERNAL,
          "the sender scalar 0 accepted");
    crypto_ec_key_free(ua);
}

static void
test_subscriber_decode(void)
{
    /* The RFC's key with its padded forms and some near misses. */
    static const struct {
        const char *p256dh, *auth;
        enum webpush_error want;
    } cases[] = {
        {rfc_ua_public, rfc_auth, WEBPUSH_OK},
        /* Padded as RFC 4648 pads (one '=' after 87, two after 22 characters): accepted. */
        {"BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4=",
         "BTBZMqHH6r4Tts7J_aSIgg==", WEBPUSH_OK},
        {"BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4="
         "=",
         rfc_auth, WEBPUSH_E_P256DH_ENCODING},
        {rfc_ua_public, "BTBZMqHH6r4Tts7J_aSIgg=", WEBPUSH_E_AUTH_ENCODING},
        {rfc_ua_public, "BTBZMqHH6r4Tts7J_aSIgg===", WEBPUSH_E_AUTH_ENCODING},
        /* The standard alphabet's '+' and '/' are not base64url. */
        {"BCVxsr7N/eNgVRqvHtD0zTZsEc6+VV+JvLexhqUzORcxaOzi6+AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4",
         rfc_auth, WEBPUSH_E_P256DH_ENCODING},
        {rfc_ua_public, "BTBZMqHH6r4Tts7J/aSIgg", WEBPUSH_E_AUTH_ENCODING},
        /* Non-zero bits after the last byte: another text of the same bytes. */
        {"BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw5",
         rfc_auth, WEBPUSH_E_P256DH_ENCODING},
        {rfc_ua_public, "BTBZMqHH6r4Tts7J_aSIgh", WEBPUSH_E_AUTH_ENCODING},
        /* Lengths: 63 and 68 bytes, an empty key, 15 and 17 bytes of auth. */
        {"BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIA",
         rfc_auth, WEBPUSH_E_P256DH_LENGTH},
        {"BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4A"
         "AAA",
         rfc_auth, WEBPUSH_E_P256DH_LENGTH},
        {"", rfc_auth, WEBPUSH_E_P256DH_LENGTH},
        {rfc_ua_public, "BTBZMqHH6r4Tts7J_aSI", WEBPUSH_E_AUTH_LENGTH},
        {rfc_ua_public, "BTBZMqHH6r4Tts7J_aSIggAA", WEBPUSH_E_AUTH_LENGTH},
        {rfc_ua_public, "", WEBPUSH_E_AUTH_LENGTH},
        /* 65 bytes, but a compressed-point prefix, or y changed (off the curve). */
        {"AiVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4",
         rfc_auth, WEBPUSH_E_P256DH_POINT},
        {"BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw8",
         rfc_auth, WEBPUSH_E_P256DH_POINT},
        /* p256dh is checked first. */
        {"", "", WEBPUSH_E_P256DH_LENGTH},
        {"x", "y", WEBPUSH_E_P256DH_ENCODING}, /* one character is no base64 length */
        {"B!", "y", WEBPUSH_E_P256DH_ENCODING},
    };
    char long_text[WEBPUSH_KEY_TEXT_MAX + 2];
    struct webpush_subscriber sub, rfc;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        enum webpush_error got = webpush_subscriber_decode(
            cases[i].p256dh, strlen(cases[i].p256dh), cases[i].auth, strlen(cases[i].auth), &sub);
        CHECK(got == cases[i].want, "case %zu: %s, want %s", i, webpush_error_text(got),
              webpush_error_text(cases[i].want));
        if (i == 0)
            rfc = sub;
        if (i == 1) /* the padded form decodes to the same keys */
            CHECK(got == WEBPUSH_OK && memcmp(&sub, &rfc, sizeof sub) == 0, "padded keys differ");
    }
    /* Texts are not NUL-terminated: a length short of the string is what counts. */
    CHECK(webpush_subscriber_decode(rfc_ua_public, strlen(rfc_ua_public),
                                    "BTBZMqHH6r4Tts7J_aSIggXX", 22, &sub) == WEBPUSH_OK,
          "the length argument is not honoured");
    /* Past WEBPUSH_KEY_TEXT_MAX a text is refused for its length before it is decoded. */
    memset(long_text, 'A', sizeof long_text);
    CHECK(webpush_subscriber_decode(long_text, WEBPUSH_KEY_TEXT_MAX + 1, rfc_auth, strlen(rfc_auth),
                                    &sub) == WEBPUSH_E_P256DH_LENGTH,
          "a key text past the bound");
    CHECK(webpush_subscriber_decode(rfc_ua_public, strlen(rfc_ua_public), long_text,
                                    WEBPUSH_KEY_TEXT_MAX + 1, &sub) == WEBPUSH_E_AUTH_LENGTH,
          "an auth text past the bound");
    long_text[WEBPUSH_KEY_TEXT_MAX] = '!';
    CHECK(webpush_subscriber_decode(long_text, WEBPUSH_KEY_TEXT_MAX, rfc_auth, strlen(rfc_auth),
                                    &sub) == WEBPUSH_E_P256DH_LENGTH,
          "a 128-character key text is decoded, and is 96 bytes");
    CHECK(strcmp(webpush_error_text(WEBPUSH_E_AUTH_LENGTH), "keys.auth is not 16 bytes") == 0 &&
              strcmp(webpush_error_text((enum webpush_error)999), "unknown error") == 0,
          "error texts");
}

/* Splits a JWT into its three segments' decoded bytes; false unless there are exactly three. */
static bool
split_jwt(const char *jwt, char *header, char *claims, uint8_t sig[CRYPTO_ES256_SIG_LEN],
          size_t *signed_len)
{
    const char *d1 = strchr(jwt, '.'), *d2 = d1 != NULL ? strchr(d1 + 1, '.') : NULL;
    size_t n1 = 0, n2 = 0, n3 = 0;

    if (d2 == NULL || strchr(d2 + 1, '.') != NULL ||
        b64url_decode(jwt, (size_t)(d1 - jwt), (uint8_t *)header, TEXT_MAX - 1, &n1) != 0 ||
        b64url_decode(d1 + 1, (size_t)(d2 - d1 - 1), (uint8_t *)claims, TEXT_MAX - 1, &n2) != 0 ||
        b64url_decode(d2 + 1, strlen(d2 + 1), sig, CRYPTO_ES256_SIG_LEN, &n3) != 0 ||
        n3 != CRYPTO_ES256_SIG_LEN)
        return false;
    header[n1] = claims[n2] = '\0';
    *signed_len = (size_t)(d2 - jwt);
    return true;
}

static void
test_vapid_keys(void)
{
    struct webpush_vapid *v = webpush_vapid_generate(), *w = NULL;
    char priv[WEBPUSH_VAPID_PRIVATE_TEXT_LEN + 1], other[WEBPUSH_VAPID_PRIVATE_TEXT_LEN + 1];
    uint8_t pub[WEBPUSH_P256DH_LEN];

    CHECK(v != NULL && webpush_vapid_export(v, priv) == 0 &&
              strlen(priv) == WEBPUSH_VAPID_PRIVATE_TEXT_LEN,
          "generate and export");
    if (v == NULL)
        return;
    CHECK(strlen(webpush_vapid_public_key(v)) == WEBPUSH_VAPID_PUBLIC_TEXT_LEN &&
              decode(webpush_vapid_public_key(v), pub, sizeof pub) &&
              webpush_p256dh_valid(pub, sizeof pub),
          "the public key text is not base64url of a valid point");
    CHECK(webpush_vapid_import(priv, webpush_vapid_public_key(v), &w) == WEBPUSH_OK &&
              strcmp(webpush_vapid_public_key(w), webpush_vapid_public_key(v)) == 0,
          "export, import: another public key");
    webpush_vapid_free(w);
    CHECK(webpush_vapid_import(priv, NULL, &w) == WEBPUSH_OK, "import without a public key");
    webpush_vapid_free(w);
    /* The RFC's sender key: a known scalar gives a known public text. */
    CHECK(webpush_vapid_import(rfc_as_private, rfc_as_public, &w) == WEBPUSH_OK &&
              strcmp(webpush_vapid_public_key(w), rfc_as_public) == 0,
          "the RFC's key pair");
    webpush_vapid_free(w);
    CHECK(webpush_vapid_import(priv, rfc_as_public, &w) == WEBPUSH_E_VAPID_MISMATCH && w == NULL,
          "a public key of another pair accepted");
    static const char *const bad[] = {
        "",
        "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oR",   /* 42 characters */
        "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRwA", /* 44 */
        "yfWPiYE+n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw",  /* '+' */
        "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRx",  /* trailing bits */
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",  /* the scalar 0 */
        "_____wAAAAD__________7zm-q2nF56E87nKwvxjJVE",  /* the group order n */
        "__________________________________________8",  /* 2^256 - 1 */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(webpush_vapid_import(bad[i], NULL, &w) == WEBPUSH_E_VAPID_KEY && w == NULL,
              "private key text %zu accepted", i);
    /* n - 1 is the largest scalar: accepted. */
    CHECK(webpush_vapid_import("_____wAAAAD__________7zm-q2nF56E87nKwvxjJVA", NULL, &w) ==
              WEBPUSH_OK,
          "the scalar n - 1 refused");
    webpush_vapid_free(w);
    w = webpush_vapid_generate();
    CHECK(w != NULL && webpush_vapid_export(w, other) == 0 && strcmp(other, priv) != 0,
          "two generated keys are equal");
    webpush_vapid_free(w);
    webpush_vapid_free(v);
    webpush_vapid_free(NULL);
}

static void
test_vapid_jwt(void)
{
    static const char aud[] = "https://fcm.googleapis.com", subj[] = "mailto:ops@example.com";
    static char header[TEXT_MAX], claims[TEXT_MAX], jwt[WEBPUSH_JWT_MAX + 1],
        auth[WEBPUSH_AUTHORIZATION_MAX + 1], want[WEBPUSH_AUTHORIZATION_MAX + 1];
    struct webpush_vapid *v = webpush_vapid_generate();
    uint8_t sig[CRYPTO_ES256_SIG_LEN], pub[WEBPUSH_P256DH_LEN];
    const int64_t now = 1700000000;
    size_t signed_len = 0;

    if (v == NULL) {
        CHECK(false, "generate");
        return;
    }
    CHECK(decode(webpush_vapid_public_key(v), pub, sizeof pub), "public key text");
    CHECK(webpush_vapid_jwt(v, aud, subj, now, 43200, jwt) == WEBPUSH_OK, "a JWT refused");
    CHECK(split_jwt(jwt, header, claims, sig, &signed_len), "not three base64url segments: %s",
          jwt);
    CHECK(strcmp(header, "{\"typ\":\"JWT\",\"alg\":\"ES256\"}") == 0, "header %s", header);
    json_error_t err;
    json_t *c = json_loads(claims, JSON_REJECT_DUPLICATES, &err);
    json_int_t exp = 0;
    const char *a = NULL, *s = NULL;
    CHECK(c != NULL && json_object_size(c) == 3 &&
              json_unpack(c, "{s:s, s:I, s:s}", "aud", &a, "exp", &exp, "sub", &s) == 0 &&
              strcmp(a, aud) == 0 && exp == now + 43200 && strcmp(s, subj) == 0,
          "claims %s", claims);
    json_decref(c);
    CHECK(crypto_ec_verify_es256(pub, jwt, signed_len, sig), "the signature does not verify");
    jwt[signed_len - 1] ^= 1; /* a claims character changed */
    CHECK(!crypto_ec_verify_es256(pub, jwt, signed_len, sig), "a changed token verified");
    jwt[signed_len - 1] ^= 1;

    CHECK(webpush_vapid_authorization(v, jwt, auth) == 0, "authorization");
    snprintf(want, sizeof want, "vapid t=%s, k=%s", jwt, webpush_vapid_public_key(v));
    CHECK(strcmp(auth, want) == 0, "Authorization: %s", auth);

    /* Refusals, each with out left empty. */
    static const struct {
        const char *aud, *sub;
        int64_t now, lifetime;
        enum webpush_error want;
    } cases[] = {
        {aud, subj, now, WEBPUSH_JWT_LIFETIME_MAX, WEBPUSH_OK},
        {aud, subj, now, WEBPUSH_JWT_LIFETIME_MAX + 1, WEBPUSH_E_LIFETIME},
        {aud, subj, now, 0, WEBPUSH_E_LIFETIME},
        {aud, subj, -1, 60, WEBPUSH_E_LIFETIME},
        {aud, subj, WEBPUSH_NOW_MAX, 60, WEBPUSH_OK},
        {aud, subj, WEBPUSH_NOW_MAX + 1, 60, WEBPUSH_E_LIFETIME},
        {"https://FCM.googleapis.com", subj, now, 60, WEBPUSH_E_AUDIENCE},
        {"https://fcm.googleapis.com/", subj, now, 60, WEBPUSH_E_AUDIENCE},
        {"https://fcm.googleapis.com:443", subj, now, 60, WEBPUSH_E_AUDIENCE},
        {"fcm.googleapis.com", subj, now, 60, WEBPUSH_E_AUDIENCE},
        {"http://127.0.0.1:9", subj, now, 60, WEBPUSH_OK},
        {aud, "https://example.com/contact", now, 60, WEBPUSH_OK},
        {aud, "mailto:a", now, 60, WEBPUSH_OK},
        {aud, "mailto:", now, 60, WEBPUSH_E_SUBJECT},
        {aud, "https:", now, 60, WEBPUSH_E_SUBJECT},
        {aud, "http://example.com", now, 60, WEBPUSH_E_SUBJECT},
        {aud, "MAILTO:a@example.com", now, 60, WEBPUSH_E_SUBJECT},
        {aud, "mailto:a b@example.com", now, 60, WEBPUSH_E_SUBJECT},
        {aud, "mailto:\"a\"@example.com", now, 60, WEBPUSH_E_SUBJECT},
        {aud, "mailto:a\\b@example.com", now, 60, WEBPUSH_E_SUBJECT},
        {aud, "mailto:a@example.com\r\nX: y", now, 60, WEBPUSH_E_SUBJECT},
        {aud, "mailto:\xc3\xa9@example.com", now, 60, WEBPUSH_E_SUBJECT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        enum webpush_error got =
            webpush_vapid_jwt(v, cases[i].aud, cases[i].sub, cases[i].now, cases[i].lifetime, jwt);
        CHECK(got == cases[i].want && (got == WEBPUSH_OK) == (jwt[0] != '\0'),
              "case %zu: %s, want %s", i, webpush_error_text(got),
              webpush_error_text(cases[i].want));
    }

    /* The longest token: a subject of WEBPUSH_SUBJECT_MAX bytes, a host of WEBPUSH_HOST_MAX
     * and a port, the latest time. One byte more of subject is refused. */
    char long_sub[WEBPUSH_SUBJECT_MAX + 2], long_aud[WEBPUSH_ORIGIN_MAX + 1];
    memset(long_sub, 'a', sizeof long_sub);
    memcpy(long_sub, "mailto:", 7);
    long_sub[WEBPUSH_SUBJECT_MAX] = '\0';
    strcpy(long_aud, "https://");
    for (size_t i = 0; i < WEBPUSH_HOST_MAX; i++)
        long_aud[8 + i] = i % 64 == 63 ? '.' : 'h';
    strcpy(long_aud + 8 + WEBPUSH_HOST_MAX, ":65535");
    CHECK(strlen(long_aud) == WEBPUSH_ORIGIN_MAX, "the longest origin has %zu bytes",
          strlen(long_aud));
    CHECK(webpush_vapid_jwt(v, long_aud, long_sub, WEBPUSH_NOW_MAX, WEBPUSH_JWT_LIFETIME_MAX,
                            jwt) == WEBPUSH_OK &&
              strlen(jwt) <= WEBPUSH_JWT_MAX && split_jwt(jwt, header, claims, sig, &signed_len) &&
              crypto_ec_verify_es256(pub, jwt, signed_len, sig),
          "the longest JWT");
    CHECK(webpush_vapid_authorization(v, jwt, auth) == 0 &&
              strlen(auth) <= WEBPUSH_AUTHORIZATION_MAX,
          "the longest Authorization");
    long_sub[WEBPUSH_SUBJECT_MAX] = 'a';
    long_sub[WEBPUSH_SUBJECT_MAX + 1] = '\0';
    CHECK(webpush_vapid_jwt(v, aud, long_sub, now, 60, jwt) == WEBPUSH_E_SUBJECT,
          "a subject one byte past the bound");
    char too_long[WEBPUSH_JWT_MAX + 2];
    memset(too_long, 'a', sizeof too_long - 1);
    too_long[WEBPUSH_JWT_MAX + 1] = '\0';
    CHECK(webpush_vapid_authorization(v, too_long, auth) == -1 && auth[0] == '\0',
          "a JWT past the bound");
    webpush_vapid_free(v);
}

static void
test_origin(void)
{
    static const struct {
        const char *url, *want; /* want NULL: refused */
    } cases[] = {
        {"https://fcm.googleapis.com/fcm/send/abc:def", "https://fcm.googleapis.com"},
        {"HTTPS://Updates.Push.Services.Mozilla.com/wpush/v2/x",
         "https://updates.push.services.mozilla.com"},
        {"https://web.push.apple.com:443/QGuQ", "https://web.push.apple.com"},
        {"https://h:0443/", "https://h"},
        {"https://h:8443?x=1", "https://h:8443"},
        {"https://h#frag", "https://h"},
        {"https://h", "https://h"},
        {"https://h:65535", "https://h:65535"},
        {"http://127.0.0.1:8080/push/1", "http://127.0.0.1:8080"},
        {"http://127.0.0.1:80/", "http://127.0.0.1"},
        {"http://h:443/", "http://h:443"},
        {"https://[::1]:9000/p", "https://[::1]:9000"},
        {"https://[2001:DB8:0:0:1:0:0:1]/", "https://[2001:db8::1:0:0:1]"},
        {"https://[1:0:0:2:0:0:0:3]/", "https://[1:0:0:2::3]"},
        {"https://[0:0:0:0:0:0:0:0]/", "https://[::]"},
        {"https://[1:0:1:0:1:0:1:0]/", "https://[1:0:1:0:1:0:1:0]"},
        {"https://[::ffff:1.2.3.4]/", "https://[::ffff:102:304]"},
        {"https://h_x.example-1.com/", "https://h_x.example-1.com"},
        {"ftp://h/", NULL},
        {"https:/h/", NULL},
        {"https://user@h/", NULL},
        {"https://user:pw@h/", NULL},
        {"https://h:/", NULL},
        {"https://h:0/", NULL},
        {"https://h:65536/", NULL},
        {"https://h:99999999999999999999/", NULL},
        {"https://h:8a/", NULL},
        {"https://", NULL},
        {"https:///x", NULL},
        {"https://h..x/", NULL},
        {"https://.h/", NULL},
        {"https://h./", NULL},
        {"https://127.1/", NULL},
        {"https://0x7f.0.0.1/", NULL},
        {"https://01.2.3.4/", NULL},
        {"https://1.2.3.4.5/", NULL},
        {"https://a.b.123/", NULL},
        {"https://a.b.0x1f/", NULL},
        {"https://1.2.3.4/", "https://1.2.3.4"},
        {"https://h%41/", NULL},
        {"https://h\\x/", NULL},
        {"https://h x/", NULL},
        {" https://h/", NULL},
        {"https://[::1/", NULL},
        {"https://[::1]x/", NULL},
        {"https://[fe80::1%25eth0]/", NULL},
        {"https://[1.2.3.4]/", NULL},
        {"https://ex\xc3\xa4mple/", NULL},
    };
    char out[WEBPUSH_ORIGIN_MAX + 1];

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        enum webpush_error got = webpush_origin(cases[i].url, out);
        if (cases[i].want == NULL)
            CHECK(got == WEBPUSH_E_ENDPOINT && out[0] == '\0', "%s accepted as %s", cases[i].url,
                  out);
        else
            CHECK(got == WEBPUSH_OK && strcmp(out, cases[i].want) == 0, "%s: %s, want %s",
                  cases[i].url, out, cases[i].want);
    }

    /* Bounds: a host of WEBPUSH_HOST_MAX bytes and an endpoint of WEBPUSH_ENDPOINT_MAX, then one
     * more byte of each. */
    static char url[WEBPUSH_ENDPOINT_MAX + 2];
    strcpy(url, "https://");
    memset(url + 8, 'h', WEBPUSH_HOST_MAX);
    strcpy(url + 8 + WEBPUSH_HOST_MAX, "/");
    CHECK(webpush_origin(url, out) == WEBPUSH_OK && strlen(out) == 8 + WEBPUSH_HOST_MAX,
          "a host of WEBPUSH_HOST_MAX bytes");
    memset(url + 8, 'h', WEBPUSH_HOST_MAX + 1);
    strcpy(url + 8 + WEBPUSH_HOST_MAX + 1, "/");
    CHECK(webpush_origin(url, out) == WEBPUSH_E_ENDPOINT, "a host one byte too long");
    strcpy(url, "https://h/");
    memset(url + 10, 'p', WEBPUSH_ENDPOINT_MAX - 10);
    url[WEBPUSH_ENDPOINT_MAX] = '\0';
    CHECK(webpush_origin(url, out) == WEBPUSH_OK, "an endpoint of WEBPUSH_ENDPOINT_MAX bytes");
    url[WEBPUSH_ENDPOINT_MAX] = 'p';
    url[WEBPUSH_ENDPOINT_MAX + 1] = '\0';
    CHECK(webpush_origin(url, out) == WEBPUSH_E_ENDPOINT, "an endpoint one byte too long");
}

static void
test_topic(void)
{
    char t[WEBPUSH_TOPIC_LEN + 1], u[WEBPUSH_TOPIC_LEN + 1];

    /* SHA-256("rem_42_1700000000000"), first 24 bytes, base64url. */
    webpush_topic("rem_42_1700000000000", t);
    CHECK(strcmp(t, "ubBpVOQ59wsawnMZerxbpUHlBNSCnt5v") == 0, "topic %s", t);
    CHECK(strlen(t) == WEBPUSH_TOPIC_LEN &&
              strspn(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstu"
                        "vwxyz0123456789-_") == WEBPUSH_TOPIC_LEN,
          "topic not 32 base64url characters");
    webpush_topic("rem_42_1700000000001", u);
    CHECK(strcmp(t, u) != 0, "two ids, one topic");
    webpush_topic("", u);
    CHECK(strcmp(u, "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NM") == 0, "topic of the empty id %s", u);
}

int
main(void)
{
    test_rfc8291();
    test_round_trips();
    test_tampering();
    test_encrypt_refusals();
    test_subscriber_decode();
    test_vapid_keys();
    test_vapid_jwt();
    test_origin();
    test_topic();
    return check_summary("test_webpush");
}
