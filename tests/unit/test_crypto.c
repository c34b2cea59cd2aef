/* test_crypto.c -- crypto.c against published vectors: SHA-256 of "abc" and of the empty string
 * (FIPS 180-2), HMAC-SHA256 test cases 1, 2 and 6 of RFC 4231 (case 6 with its 131-byte key, and
 * once more split over several parts), the refused empty key, crypto_memeq and the random source's
 * bound; HKDF-SHA256 test cases 1 and 3 of RFC 5869 and its length bounds; AES-128-GCM test cases
 * 1 to 3 of the GCM specification (McGrew and Viega), in place too, and tampering refused. */
#include <stdbool.h>
#include <string.h>

#include "check.h"
#include "crypto.h"
#include "hex.h"

#define HEX_MAX (HEX_ENCODED_LEN(CRYPTO_SHA256_LEN) + 1)
#define VECTOR_MAX 64 /* bytes of the longest test vector below */

static const char *
hex(const uint8_t *b, size_t n, char out[HEX_MAX])
{
    hex_encode(b, n, out);
    return out;
}

/* The bytes of a hex text into out (room for VECTOR_MAX); their count (0 for a vector that is
 * not hex or too long, which fails the test). */
static size_t
unhex(const char *text, uint8_t *out)
{
    size_t n = 0;
    int rc = hex_decode(text, strlen(text), out, VECTOR_MAX, &n);

    CHECK(rc == 0, "test vector not hex or over VECTOR_MAX: %.24s", text);
    return rc == 0 ? n : 0;
}

/* True when the n bytes at got are the hex text want. */
static bool
same_hex(const uint8_t *got, size_t n, const char *want)
{
    uint8_t w[VECTOR_MAX];

    return unhex(want, w) == n && memcmp(got, w, n) == 0;
}

static void
test_sha256(void)
{
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
    };
    uint8_t md[CRYPTO_SHA256_LEN];
    char h[HEX_MAX];

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        crypto_sha256(cases[i].in, strlen(cases[i].in), md);
        CHECK(strcmp(hex(md, sizeof md, h), cases[i].want) == 0, "sha256(\"%s\") = %s", cases[i].in,
              h);
    }
}

static void
test_hmac(void)
{
    static const char case6_data[] = "Test Using Larger Than Block-Size Key - Hash Key First";
    uint8_t key[131], mac[CRYPTO_SHA256_LEN];
    char h[HEX_MAX];

    memset(key, 0x0b, 20); /* RFC 4231 case 1 */
    struct crypto_part hi[] = {{"Hi There", 8}};
    CHECK(crypto_hmac_sha256(key, 20, hi, 1, mac) == 0, "case 1 failed");
    CHECK(strcmp(hex(mac, sizeof mac, h),
                 "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7") == 0,
          "case 1: %s", h);

    struct crypto_part jefe[] = {{"what do ya want ", 16}, {"", 0}, {"for nothing?", 12}};
    CHECK(crypto_hmac_sha256("Jefe", 4, jefe, 3, mac) == 0, "case 2 failed");
    CHECK(strcmp(hex(mac, sizeof mac, h),
                 "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843") == 0,
          "case 2 (three parts, one empty): %s", h);

    memset(key, 0xaa, sizeof key); /* case 6: a key longer than SHA-256's block is hashed first */
    struct crypto_part one[] = {{case6_data, strlen(case6_data)}};
    struct crypto_part split[] = {{case6_data, 10}, {case6_data + 10, strlen(case6_data) - 10}};
    CHECK(crypto_hmac_sha256(key, sizeof key, one, 1, mac) == 0, "case 6 failed");
    CHECK(strcmp(hex(mac, sizeof mac, h),
                 "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54") == 0,
          "case 6: %s", h);
    CHECK(crypto_hmac_sha256(key, sizeof key, split, 2, mac) == 0 &&
              strcmp(hex(mac, sizeof mac, h),
                     "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54") == 0,
          "case 6 in two parts: %s", h);

    CHECK(crypto_hmac_sha256(key, 0, one, 1, mac) == -1, "an empty key was accepted");
    CHECK(crypto_hmac_sha256(NULL, 0, one, 1, mac) == -1, "a NULL key was accepted");
}

static void
test_memeq(void)
{
    static const uint8_t a[] = {1, 2, 3, 4}, b[] = {1, 2, 3, 5};

    CHECK(crypto_memeq(a, a, sizeof a), "equal bytes differ");
    CHECK(!crypto_memeq(a, b, sizeof a), "the last byte differs but compares equal");
    CHECK(crypto_memeq(a, b, 3), "a common prefix compares unequal");
    CHECK(crypto_memeq(a, b, 0), "zero bytes compare unequal");
}

static void
test_random(void)
{
    static uint8_t big[CRYPTO_RANDOM_MAX + 1];
    uint8_t x[32], y[32];

    CHECK(crypto_random_bytes(x, sizeof x) == 0 && crypto_random_bytes(y, sizeof y) == 0,
          "random bytes failed");
    CHECK(memcmp(x, y, sizeof x) != 0, "two draws of 32 random bytes are equal");
    CHECK(crypto_random_bytes(big, CRYPTO_RANDOM_MAX) == 0, "CRYPTO_RANDOM_MAX bytes refused");
    CHECK(crypto_random_bytes(big, CRYPTO_RANDOM_MAX + 1) == -1, "one byte over the bound");
}

static void
test_hkdf(void)
{
    static const struct {
        const char *ikm, *salt, *info, *prk, *okm;
    } cases[] = {
        /* RFC 5869 A.1 */
        {"0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b", "000102030405060708090a0b0c",
         "f0f1f2f3f4f5f6f7f8f9", "077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5",
         "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"},
        /* RFC 5869 A.3: empty salt (HashLen zeros) and empty info */
        {"0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b", "", "",
         "19ef24a32c717b167f33a91d6f648bdf96596776afdb6377ac434c1c293ccb04",
         "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"},
    };
    static uint8_t big[CRYPTO_HKDF_INPUT_MAX + 1], okm_max[CRYPTO_HKDF_OUTPUT_MAX + 1];
    uint8_t ikm[VECTOR_MAX], salt[VECTOR_MAX], info[VECTOR_MAX], prk[CRYPTO_SHA256_LEN],
        okm[VECTOR_MAX];

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t ikm_n = unhex(cases[i].ikm, ikm), salt_n = unhex(cases[i].salt, salt),
               info_n = unhex(cases[i].info, info), okm_n = strlen(cases[i].okm) / 2;
        CHECK(crypto_hkdf_extract(salt, salt_n, ikm, ikm_n, prk) == 0 &&
                  same_hex(prk, sizeof prk, cases[i].prk),
              "case %zu: PRK differs", i);
        CHECK(crypto_hkdf_expand(prk, info, info_n, okm, okm_n) == 0 &&
                  same_hex(okm, okm_n, cases[i].okm),
              "case %zu: OKM differs", i);
    }
    /* A shorter output is a prefix of the longer one (Web Push takes 16 and 12 bytes); prk is
     * still case A.3's. */
    uint8_t full[VECTOR_MAX];
    unhex(cases[1].okm, full);
    CHECK(crypto_hkdf_expand(prk, NULL, 0, okm, 12) == 0 && memcmp(okm, full, 12) == 0,
          "a 12-byte output is not the prefix of the 42-byte one");
    CHECK(crypto_hkdf_extract(big, CRYPTO_HKDF_INPUT_MAX, big, CRYPTO_HKDF_INPUT_MAX, prk) == 0,
          "inputs at the bound refused");
    CHECK(crypto_hkdf_extract(big, CRYPTO_HKDF_INPUT_MAX + 1, ikm, 1, prk) == -1,
          "a salt one past the bound accepted");
    CHECK(crypto_hkdf_extract(salt, 1, big, CRYPTO_HKDF_INPUT_MAX + 1, prk) == -1,
          "an IKM one past the bound accepted");
    CHECK(crypto_hkdf_expand(prk, big, CRYPTO_HKDF_INPUT_MAX, okm, 1) == 0,
          "info at the bound refused");
    CHECK(crypto_hkdf_expand(prk, big, CRYPTO_HKDF_INPUT_MAX + 1, okm, 1) == -1,
          "info one past the bound accepted");
    CHECK(crypto_hkdf_expand(prk, NULL, 0, okm_max, CRYPTO_HKDF_OUTPUT_MAX) == 0,
          "255 * HashLen bytes refused");
    CHECK(crypto_hkdf_expand(prk, NULL, 0, okm_max, CRYPTO_HKDF_OUTPUT_MAX + 1) == -1,
          "one byte past 255 * HashLen accepted");
    CHECK(crypto_hkdf_expand(prk, NULL, 0, okm, 0) == -1, "zero bytes of output accepted");
}

static void
test_gcm(void)
{
    static const struct {
        const char *key, *nonce, *plain, *cipher, *tag;
    } cases[] = {
        {"00000000000000000000000000000000", "000000000000000000000000", "", "",
         "58e2fccefa7e3061367f1d57a4e7455a"},
        {"00000000000000000000000000000000", "000000000000000000000000",
         "00000000000000000000000000000000", "0388dace60b6a392f328c2b971b2fe78",
         "ab6e47d42cec13bdf53a67b21257bddf"},
        {"feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888",
         "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e24"
         "49a6b525b16aedf5aa0de657ba637b391aafd255",
         "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e21d514b25466931c7d8f6a5a"
         "ac84aa051ba30b396a0aac973d58e091473f5985",
         "4d5c2af327cd64a62cf35abd2ba6fab4"},
    };
    uint8_t key[VECTOR_MAX], nonce[VECTOR_MAX], plain[VECTOR_MAX], buf[VECTOR_MAX],
        tag[CRYPTO_GCM_TAG_LEN];

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unhex(cases[i].key, key);
        unhex(cases[i].nonce, nonce);
        size_t n = unhex(cases[i].plain, plain);
        CHECK(crypto_aes128gcm_seal(key, nonce, plain, n, buf, tag) == 0 &&
                  same_hex(buf, n, cases[i].cipher) && same_hex(tag, sizeof tag, cases[i].tag),
              "case %zu: ciphertext or tag differs", i + 1);
        CHECK(crypto_aes128gcm_open(key, nonce, buf, n, tag, buf) == 0 &&
                  memcmp(buf, plain, n) == 0,
              "case %zu: does not open in place", i + 1);
        memcpy(buf, plain, n); /* and sealed in place */
        CHECK(crypto_aes128gcm_seal(key, nonce, buf, n, buf, tag) == 0 &&
                  same_hex(buf, n, cases[i].cipher),
              "case %zu: in-place seal differs", i + 1);
    }
    /* Case 3 tampered: a flipped bit in the ciphertext, the tag or the nonce is refused, and
     * the output is zeroed rather than left holding unauthenticated plaintext. */
    size_t n = unhex(cases[2].cipher, buf);
    uint8_t out[VECTOR_MAX], zeros[VECTOR_MAX] = {0};
    unhex(cases[2].tag, tag);
    buf[5] ^= 1;
    memset(out, 0x55, sizeof out);
    CHECK(crypto_aes128gcm_open(key, nonce, buf, n, tag, out) == -1 && memcmp(out, zeros, n) == 0,
          "a flipped ciphertext bit opened, or left output");
    buf[5] ^= 1;
    tag[15] ^= 0x80;
    CHECK(crypto_aes128gcm_open(key, nonce, buf, n, tag, out) == -1, "a flipped tag bit opened");
    tag[15] ^= 0x80;
    nonce[0] ^= 1;
    CHECK(crypto_aes128gcm_open(key, nonce, buf, n, tag, out) == -1, "another nonce opened");
    nonce[0] ^= 1;
    CHECK(crypto_aes128gcm_open(key, nonce, buf, n, tag, out) == 0 &&
              same_hex(out, n, cases[2].plain),
          "the untampered text does not open");
    CHECK(crypto_aes128gcm_seal(key, nonce, buf, (size_t)CRYPTO_GCM_TEXT_MAX + 1, out, tag) == -1,
          "a text past CRYPTO_GCM_TEXT_MAX sealed");
}

static void
test_wipe(void)
{
    uint8_t b[8] = {1, 2, 3, 4, 5, 6, 7, 8}, zeros[8] = {0};

    crypto_wipe(b, sizeof b);
    CHECK(memcmp(b, zeros, sizeof b) == 0, "crypto_wipe left bytes");
    crypto_wipe(NULL, 0);
}

int
main(void)
{
    test_sha256();
    test_hmac();
    test_memeq();
    test_random();
    test_hkdf();
    test_gcm();
    test_wipe();
    return check_summary("test_crypto");
}
