/* test_crypto_ec.c -- crypto_ec.c: the key pairs of RFC 8291 appendix A import to their published
 * public keys and agree on its published ECDH secret; the scalars 1 and n - 1 give the generator
 * and its negation, 0 and n are refused; generated keys export and import back; the point check
 * refuses every kind of bad point; ES256 signatures verify, and every tampering fails. (jose
 * verifies C's signatures independently: tests/api/webpush_cross.test.mjs.) */
#include <stdbool.h>
#include <string.h>

#include "b64.h"
#include "check.h"
#include "crypto.h"
#include "crypto_ec.h"

#define TEXT_MAX 128
#define SIGS 20 /* signatures made and checked in the round trip */

/* RFC 8291 appendix A: the application server's and the user agent's key pairs, and the secret
 * both derive. */
static const char as_private[] = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw";
static const char as_public[] =
    "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8";
static const char ua_private[] = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94";
static const char ua_public[] =
    "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4";
static const char ecdh_secret[] = "kyrL1jIIOHEzg3sM2ZWRHDRB62YACZhhSlknJ672kSs";

/* P-256 (SEC 2 / FIPS 186-4): the generator, the group order n and the field prime p. */
static const uint8_t gen[CRYPTO_P256_PUBLIC_LEN] = {
    0x04, 0x6b, 0x17, 0xd1, 0xf2, 0xe1, 0x2c, 0x42, 0x47, 0xf8, 0xbc, 0xe6, 0xe5,
    0x63, 0xa4, 0x40, 0xf2, 0x77, 0x03, 0x7d, 0x81, 0x2d, 0xeb, 0x33, 0xa0, 0xf4,
    0xa1, 0x39, 0x45, 0xd8, 0x98, 0xc2, 0x96, 0x4f, 0xe3, 0x42, 0xe2, 0xfe, 0x1a,
    0x7f, 0x9b, 0x8e, 0xe7, 0xeb, 0x4a, 0x7c, 0x0f, 0x9e, 0x16, 0x2b, 0xce, 0x33,
    0x57, 0x6b, 0x31, 0x5e, 0xce, 0xcb, 0xb6, 0x40, 0x68, 0x37, 0xbf, 0x51, 0xf5};
static const uint8_t order[32] = {0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff,
                                  0xff, 0xff, 0xff, 0xff, 0xff, 0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17,
                                  0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51};
static const uint8_t prime[32] = {0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
                                  0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff,
                                  0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

/* The bytes of a base64url text (exactly want of them) into out; false when it is not that. */
static bool
decode(const char *text, uint8_t *out, size_t want)
{
    size_t n = 0;

    return b64url_decode(text, strlen(text), out, want, &n) == 0 && n == want;
}

/* out = a - b over 32-byte big-endian numbers (a >= b). */
static void
sub32(const uint8_t *a, const uint8_t *b, uint8_t *out)
{
    int borrow = 0;

    for (int i = 31; i >= 0; i--) {
        int d = a[i] - b[i] - borrow;
        borrow = d < 0;
        out[i] = (uint8_t)(d + (borrow ? 256 : 0));
    }
}

static struct crypto_ec_key *
import_text(const char *text)
{
    uint8_t d[CRYPTO_P256_PRIVATE_LEN];

    return decode(text, d, sizeof d) ? crypto_ec_key_import(d) : NULL;
}

static void
test_rfc8291_keys(void)
{
    struct crypto_ec_key *as = import_text(as_private), *ua = import_text(ua_private);
    uint8_t want[CRYPTO_P256_PUBLIC_LEN], secret[CRYPTO_P256_SECRET_LEN],
        expect[CRYPTO_P256_SECRET_LEN], d[CRYPTO_P256_PRIVATE_LEN];

    CHECK(as != NULL && ua != NULL, "the RFC's private keys did not import");
    if (as == NULL || ua == NULL)
        goto done;
    CHECK(decode(as_public, want, sizeof want) &&
              memcmp(crypto_ec_key_public(as), want, sizeof want) == 0,
          "the sender's public key differs from the RFC's");
    CHECK(decode(ua_public, want, sizeof want) &&
              memcmp(crypto_ec_key_public(ua), want, sizeof want) == 0,
          "the user agent's public key differs from the RFC's");
    CHECK(decode(ecdh_secret, expect, sizeof expect), "bad vector");
    CHECK(crypto_ec_ecdh(as, crypto_ec_key_public(ua), secret) == 0 &&
              memcmp(secret, expect, sizeof secret) == 0,
          "sender-side ECDH differs from the RFC's secret");
    CHECK(crypto_ec_ecdh(ua, crypto_ec_key_public(as), secret) == 0 &&
              memcmp(secret, expect, sizeof secret) == 0,
          "receiver-side ECDH differs from the RFC's secret");
    CHECK(crypto_ec_key_export(as, d) == 0 && decode(as_private, want, sizeof d) &&
              memcmp(d, want, sizeof d) == 0,
          "export does not give back the imported scalar");
done:
    crypto_ec_key_free(as);
    crypto_ec_key_free(ua);
}

static void
test_scalar_bounds(void)
{
    uint8_t d[CRYPTO_P256_PRIVATE_LEN] = {0}, one[CRYPTO_P256_PRIVATE_LEN] = {0},
            neg[CRYPTO_P256_PUBLIC_LEN];
    struct crypto_ec_key *k;

    CHECK(crypto_ec_key_import(d) == NULL, "the scalar 0 was accepted");
    CHECK(crypto_ec_key_import(order) == NULL, "the scalar n was accepted");
    memset(d, 0xff, sizeof d);
    CHECK(crypto_ec_key_import(d) == NULL, "the scalar 2^256 - 1 was accepted");

    one[31] = 1;
    k = crypto_ec_key_import(one);
    CHECK(k != NULL && memcmp(crypto_ec_key_public(k), gen, sizeof gen) == 0,
          "1 * G is not the generator");
    crypto_ec_key_free(k);

    /* (n - 1) * G = -G: the same x, and y = p - Gy. */
    sub32(order, one, d);
    memcpy(neg, gen, 33);
    sub32(prime, gen + 33, neg + 33);
    k = crypto_ec_key_import(d);
    CHECK(k != NULL && memcmp(crypto_ec_key_public(k), neg, sizeof neg) == 0,
          "(n - 1) * G is not -G");
    crypto_ec_key_free(k);
    crypto_ec_key_free(NULL);
}

static void
test_generate(void)
{
    struct crypto_ec_key *a = crypto_ec_key_generate(), *b = crypto_ec_key_generate(), *c = NULL;
    uint8_t d[CRYPTO_P256_PRIVATE_LEN], s1[CRYPTO_P256_SECRET_LEN], s2[CRYPTO_P256_SECRET_LEN];

    CHECK(a != NULL && b != NULL, "generation failed");
    if (a == NULL || b == NULL)
        goto done;
    CHECK(crypto_ec_public_valid(crypto_ec_key_public(a), CRYPTO_P256_PUBLIC_LEN),
          "a generated public key is not a valid point");
    CHECK(memcmp(crypto_ec_key_public(a), crypto_ec_key_public(b), CRYPTO_P256_PUBLIC_LEN) != 0,
          "two generated keys are equal");
    CHECK(crypto_ec_key_export(a, d) == 0 && (c = crypto_ec_key_import(d)) != NULL &&
              memcmp(crypto_ec_key_public(a), crypto_ec_key_public(c), CRYPTO_P256_PUBLIC_LEN) == 0,
          "an exported key does not import to the same public key");
    crypto_wipe(d, sizeof d);
    CHECK(crypto_ec_ecdh(a, crypto_ec_key_public(b), s1) == 0 &&
              crypto_ec_ecdh(b, crypto_ec_key_public(a), s2) == 0 && memcmp(s1, s2, sizeof s1) == 0,
          "the two sides of ECDH disagree");
done:
    crypto_ec_key_free(a);
    crypto_ec_key_free(b);
    crypto_ec_key_free(c);
}

static void
test_bad_points(void)
{
    uint8_t p[CRYPTO_P256_PUBLIC_LEN + 1], secret[CRYPTO_P256_SECRET_LEN],
        zeros[CRYPTO_P256_SECRET_LEN] = {0};
    struct crypto_ec_key *k = crypto_ec_key_generate();

    CHECK(crypto_ec_public_valid(gen, sizeof gen), "the generator refused");
    CHECK(!crypto_ec_public_valid(NULL, CRYPTO_P256_PUBLIC_LEN), "NULL accepted");
    CHECK(!crypto_ec_public_valid(gen, sizeof gen - 1), "64 bytes accepted");
    memcpy(p, gen, sizeof gen);
    p[sizeof gen] = 0;
    CHECK(!crypto_ec_public_valid(p, sizeof gen + 1), "66 bytes accepted");
    /* Other encodings of the generator: compressed (0x02/0x03, 33 bytes) and OpenSSL's
     * "hybrid" 0x06/0x07 with both coordinates; only 0x04 is a p256dh. */
    p[0] = (gen[64] & 1) ? 0x03 : 0x02;
    CHECK(!crypto_ec_public_valid(p, 33), "a compressed point accepted");
    p[0] = (gen[64] & 1) ? 0x07 : 0x06;
    CHECK(!crypto_ec_public_valid(p, sizeof gen), "a hybrid-encoded point accepted");
    memcpy(p, gen, sizeof gen);
    p[64] ^= 1; /* y off by one: not on the curve */
    CHECK(!crypto_ec_public_valid(p, sizeof gen), "a point off the curve accepted");
    memset(p + 1, 0, 64); /* (0, 0): not on the curve (b != 0) */
    CHECK(!crypto_ec_public_valid(p, sizeof gen), "(0, 0) accepted");
    memcpy(p + 1, prime, 32); /* x = p: out of the field */
    memcpy(p + 33, gen + 33, 32);
    CHECK(!crypto_ec_public_valid(p, sizeof gen), "x = p accepted");

    CHECK(k != NULL, "generation failed");
    if (k != NULL) {
        memcpy(p, gen, sizeof gen);
        p[64] ^= 1;
        memset(secret, 0x55, sizeof secret);
        CHECK(crypto_ec_ecdh(k, p, secret) == -1 && memcmp(secret, zeros, sizeof secret) == 0,
              "ECDH with a point off the curve succeeded or left bytes");
        CHECK(crypto_ec_ecdh(k, gen, secret) == 0, "ECDH with the generator failed");
    }
    crypto_ec_key_free(k);
}

static void
test_es256(void)
{
    static const char msg[] = "eyJ0eXAiOiJKV1QiLCJhbGciOiJFUzI1NiJ9.e30";
    struct crypto_ec_key *k = crypto_ec_key_generate(), *other = crypto_ec_key_generate();
    uint8_t sig[CRYPTO_ES256_SIG_LEN], sig2[CRYPTO_ES256_SIG_LEN], bad[CRYPTO_ES256_SIG_LEN];
    static uint8_t big[CRYPTO_ES256_INPUT_MAX + 1];

    CHECK(k != NULL && other != NULL, "generation failed");
    if (k == NULL || other == NULL)
        goto done;
    const uint8_t *pub = crypto_ec_key_public(k);
    for (int i = 0; i < SIGS; i++) {
        CHECK(crypto_ec_sign_es256(k, msg, strlen(msg) - (size_t)i, sig) == 0 &&
                  crypto_ec_verify_es256(pub, msg, strlen(msg) - (size_t)i, sig),
              "signature %d does not verify", i);
    }
    CHECK(crypto_ec_sign_es256(k, msg, strlen(msg), sig) == 0 &&
              crypto_ec_sign_es256(k, msg, strlen(msg), sig2) == 0 &&
              memcmp(sig, sig2, sizeof sig) != 0,
          "two signatures of one message are equal (no fresh nonce?)");
    CHECK(crypto_ec_verify_es256(pub, msg, strlen(msg), sig2), "the second signature fails");
    CHECK(!crypto_ec_verify_es256(pub, msg, strlen(msg) - 1, sig), "a shorter message verified");
    CHECK(!crypto_ec_verify_es256(crypto_ec_key_public(other), msg, strlen(msg), sig),
          "another key verified");
    for (size_t i = 0; i < sizeof sig; i += 13) {
        memcpy(bad, sig, sizeof bad);
        bad[i] ^= 0x01;
        CHECK(!crypto_ec_verify_es256(pub, msg, strlen(msg), bad), "byte %zu flipped verified", i);
    }
    memcpy(bad, sig, sizeof bad);
    memset(bad, 0, 32); /* r = 0 */
    CHECK(!crypto_ec_verify_es256(pub, msg, strlen(msg), bad), "r = 0 verified");
    memcpy(bad, sig, sizeof bad);
    memcpy(bad + 32, order, 32); /* s = n */
    CHECK(!crypto_ec_verify_es256(pub, msg, strlen(msg), bad), "s = n verified");
    /* (r, n - s) is the other valid signature of the same message (ECDSA malleability): OpenSSL
     * accepts it, as JOSE verifiers do; recorded here so that a change is noticed. */
    memcpy(bad, sig, 32);
    sub32(order, sig + 32, bad + 32);
    CHECK(crypto_ec_verify_es256(pub, msg, strlen(msg), bad), "(r, n - s) did not verify");
    uint8_t off[CRYPTO_P256_PUBLIC_LEN];
    memcpy(off, pub, sizeof off);
    off[64] ^= 1;
    CHECK(!crypto_ec_verify_es256(off, msg, strlen(msg), sig), "a key off the curve verified");
    CHECK(crypto_ec_sign_es256(k, "", 0, sig) == 0 && crypto_ec_verify_es256(pub, "", 0, sig),
          "the empty message");
    CHECK(crypto_ec_sign_es256(k, big, CRYPTO_ES256_INPUT_MAX, sig) == 0 &&
              crypto_ec_verify_es256(pub, big, CRYPTO_ES256_INPUT_MAX, sig),
          "a message at the bound");
    CHECK(crypto_ec_sign_es256(k, big, CRYPTO_ES256_INPUT_MAX + 1, sig) == -1,
          "a message one past the bound was signed");
    CHECK(!crypto_ec_verify_es256(pub, big, CRYPTO_ES256_INPUT_MAX + 1, sig),
          "a message one past the bound verified");
done:
    crypto_ec_key_free(k);
    crypto_ec_key_free(other);
}

int
main(void)
{
    test_rfc8291_keys();
    test_scalar_bounds();
    test_generate();
    test_bad_points();
    test_es256();
    return check_summary("test_crypto_ec");
}
