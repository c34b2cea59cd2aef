/* test_crypto.c -- crypto.c against published vectors: SHA-256 of "abc" and of the empty string
 * (FIPS 180-2), HMAC-SHA256 test cases 1, 2 and 6 of RFC 4231 (case 6 with its 131-byte key, and
 * once more split over several parts), the refused empty key, crypto_memeq and the random source's
 * bound. */
#include <string.h>

#include "check.h"
#include "crypto.h"

#define HEX_MAX 2 * CRYPTO_SHA256_LEN + 1

static const char *
hex(const uint8_t *b, size_t n, char out[HEX_MAX])
{
    static const char digits[] = "0123456789abcdef";

    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * n] = '\0';
    return out;
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

int
main(void)
{
    test_sha256();
    test_hmac();
    test_memeq();
    test_random();
    printf("test_crypto: %s\n", fails == 0 ? "ok" : "FAILED");
    return fails != 0;
}
