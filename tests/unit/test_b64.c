/* test_b64.c -- base64 and base64url: the RFC 4648 section 10 vectors both ways, the two
 * alphabets' differing characters, every kind of text the strict decoders refuse, the output
 * bound at its limit and one past it, and round trips of every length up to 3 * 64 + 2 bytes. */
#include <stdbool.h>
#include <string.h>

#include "b64.h"
#include "check.h"

#define TEXT_MAX 512
#define BYTES_MAX 256
#define ROUND_TRIP_MAX (3 * 64 + 2)

static void
test_vectors(void)
{
    static const struct {
        const char *bytes;
        size_t len;
        const char *std, *url;
    } cases[] = {
        {"", 0, "", ""},
        {"f", 1, "Zg==", "Zg"},
        {"fo", 2, "Zm8=", "Zm8"},
        {"foo", 3, "Zm9v", "Zm9v"},
        {"foob", 4, "Zm9vYg==", "Zm9vYg"},
        {"fooba", 5, "Zm9vYmE=", "Zm9vYmE"},
        {"foobar", 6, "Zm9vYmFy", "Zm9vYmFy"},
        {"\xfb\xff", 2, "+/8=", "-_8"},
        /* Every character of both alphabets once, in order; the first byte is NUL. */
        {"\x00\x10\x83\x10\x51\x87\x20\x92\x8b\x30\xd3\x8f\x41\x14\x93\x51\x55\x97\x61\x96\x9b\x71"
         "\xd7\x9f\x82\x18\xa3\x92\x59\xa7\xa2\x9a\xab\xb2\xdb\xaf\xc3\x1c\xb3\xd3\x5d\xb7\xe3\x9e"
         "\xbb\xf3\xdf\xbf",
         48, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
         "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"},
    };
    char text[TEXT_MAX];
    uint8_t bytes[BYTES_MAX];
    size_t n;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len = cases[i].len;

        CHECK(b64_encode(cases[i].bytes, len, text) == strlen(cases[i].std) &&
                  strcmp(text, cases[i].std) == 0,
              "case %zu: encoded %s, want %s", i, text, cases[i].std);
        CHECK(strlen(text) == B64_ENCODED_LEN(len), "case %zu: B64_ENCODED_LEN", i);
        CHECK(b64url_encode(cases[i].bytes, len, text) == strlen(cases[i].url) &&
                  strcmp(text, cases[i].url) == 0,
              "case %zu: url-encoded %s, want %s", i, text, cases[i].url);
        CHECK(strlen(text) == B64URL_ENCODED_LEN(len), "case %zu: B64URL_ENCODED_LEN", i);
        CHECK(b64_decode(cases[i].std, strlen(cases[i].std), bytes, sizeof bytes, &n) == 0 &&
                  n == len && memcmp(bytes, cases[i].bytes, len) == 0,
              "case %zu: decoding %s", i, cases[i].std);
        CHECK(b64url_decode(cases[i].url, strlen(cases[i].url), bytes, sizeof bytes, &n) == 0 &&
                  n == len && memcmp(bytes, cases[i].bytes, len) == 0,
              "case %zu: url-decoding %s", i, cases[i].url);
    }
}

static void
test_refused(void)
{
    static const struct {
        const char *text;
        size_t len; /* 0: strlen(text) */
        bool url;
    } cases[] = {
        {"Zg=", 0, false},         /* length not a multiple of 4 */
        {"Zg", 0, false},          /* padding left out */
        {"Z===", 0, false},        /* three '=' */
        {"====", 0, false},        /* nothing but padding */
        {"Zg==Zg==", 0, false},    /* padding inside */
        {"Z=g=", 0, false},        /* '=' not at the end */
        {"Zh==", 0, false},        /* non-zero bits after the byte ("Zg==" is canonical) */
        {"Zm9=", 0, false},        /* the same with one '=' ("Zm8=") */
        {"Zm9v-_8=", 0, false},    /* the url alphabet in standard base64 */
        {"Zm9v\n", 0, false},      /* whitespace is not skipped */
        {" Zm9v", 0, false},       /* nor leading space */
        {"Z", 0, true},            /* one character cannot carry a byte */
        {"Zm9vY", 0, true},        /* nor can 4k + 1 */
        {"Zg==", 0, true},         /* base64url for JWT has no padding */
        {"Zm8=", 0, true},         /* one '=' */
        {"Zh", 0, true},           /* non-zero trailing bits ("Zg" is canonical) */
        {"Zm9", 0, true},          /* the same with three characters of tail ("Zm8") */
        {"+/8", 0, true},          /* the standard alphabet in base64url */
        {"Zm9v.", 0, true},        /* a JWT separator */
        {"Zm\0v", 4, true},        /* an embedded NUL */
        {"Zm9v\xc3\xa9", 0, true}, /* non-ASCII */
    };
    uint8_t bytes[BYTES_MAX];
    size_t n;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len = cases[i].len != 0 ? cases[i].len : strlen(cases[i].text);
        int rc = cases[i].url ? b64url_decode(cases[i].text, len, bytes, sizeof bytes, &n)
                              : b64_decode(cases[i].text, len, bytes, sizeof bytes, &n);

        CHECK(rc == -1, "case %zu (%s, url=%d) accepted", i, cases[i].text, cases[i].url);
    }
}

static void
test_bounds(void)
{
    uint8_t bytes[8];
    size_t n = 0;

    /* "foobar" is 6 bytes: room for exactly 6 decodes, 5 does not. */
    CHECK(b64_decode("Zm9vYmFy", 8, bytes, 6, &n) == 0 && n == 6, "exact room refused");
    CHECK(b64_decode("Zm9vYmFy", 8, bytes, 5, &n) == -1, "one byte short accepted");
    CHECK(b64url_decode("Zm9vYmE", 7, bytes, 5, &n) == 0 && n == 5, "url exact room refused");
    CHECK(b64url_decode("Zm9vYmE", 7, bytes, 4, &n) == -1, "url one byte short accepted");
    CHECK(b64_decode("Zm9vYg==", 8, bytes, 4, &n) == 0 && n == 4, "padding counted as bytes");
    CHECK(B64_DECODED_MAX(7) == 5 && B64_DECODED_MAX(8) == 6 && B64_DECODED_MAX(43) == 32,
          "B64_DECODED_MAX");
}

static void
test_round_trips(void)
{
    uint8_t in[ROUND_TRIP_MAX], out[ROUND_TRIP_MAX];
    char text[B64_ENCODED_LEN(ROUND_TRIP_MAX) + 1];
    size_t n;

    for (size_t i = 0; i < sizeof in; i++)
        in[i] = (uint8_t)(i * 167 + 13);
    for (size_t len = 0; len <= sizeof in; len++) {
        size_t t = b64_encode(in, len, text);
        CHECK(b64_decode(text, t, out, sizeof out, &n) == 0 && n == len &&
                  memcmp(in, out, len) == 0,
              "standard round trip of %zu bytes", len);
        t = b64url_encode(in, len, text);
        CHECK(strchr(text, '=') == NULL, "url encoding of %zu bytes padded", len);
        CHECK(b64url_decode(text, t, out, sizeof out, &n) == 0 && n == len &&
                  memcmp(in, out, len) == 0,
              "url round trip of %zu bytes", len);
    }
}

int
main(void)
{
    test_vectors();
    test_refused();
    test_bounds();
    test_round_trips();
    return check_summary("test_b64");
}
