/* test_hex.c -- the lower-case hex codec: the RFC 4648 section 10 base16 vectors (lower case),
 * every byte value both ways, the texts the strict decoder refuses (odd length, upper case,
 * non-digits, a NUL), and the output bound at its limit and one past it. */
#include <string.h>

#include "check.h"
#include "hex.h"

#define BYTES_MAX 256

static void
test_vectors(void)
{
    static const struct {
        const char *bytes, *text;
    } cases[] = {
        {"", ""},
        {"f", "66"},
        {"fo", "666f"},
        {"foo", "666f6f"},
        {"foob", "666f6f62"},
        {"fooba", "666f6f6261"},
        {"foobar", "666f6f626172"},
    };
    char text[HEX_ENCODED_LEN(BYTES_MAX) + 1];
    uint8_t bytes[BYTES_MAX];
    size_t n;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len = strlen(cases[i].bytes);
        CHECK(hex_encode(cases[i].bytes, len, text) == 2 * len && strcmp(text, cases[i].text) == 0,
              "encode \"%s\" = %s", cases[i].bytes, text);
        CHECK(hex_decode(cases[i].text, 2 * len, bytes, sizeof bytes, &n) == 0 && n == len &&
                  memcmp(bytes, cases[i].bytes, len) == 0,
              "decode %s", cases[i].text);
    }
}

static void
test_every_byte(void)
{
    uint8_t in[BYTES_MAX], out[BYTES_MAX];
    char text[HEX_ENCODED_LEN(BYTES_MAX) + 1];
    size_t n;

    for (size_t i = 0; i < sizeof in; i++)
        in[i] = (uint8_t)i;
    hex_encode(in, sizeof in, text);
    CHECK(strncmp(text, "000102", 6) == 0 && strcmp(text + 2 * 250, "fafbfcfdfeff") == 0,
          "every byte: %.6s...%s", text, text + 2 * 250);
    CHECK(hex_decode(text, strlen(text), out, sizeof out, &n) == 0 && n == sizeof in &&
              memcmp(in, out, n) == 0,
          "every byte round trip");
}

static void
test_refused(void)
{
    static const char *const bad[] = {"0", "abc", "AB", "0G", "g0", "0 ", " 0", "-1", "0x"};
    uint8_t out[4];
    size_t n;

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(hex_decode(bad[i], strlen(bad[i]), out, sizeof out, &n) != 0, "accepted \"%s\"",
              bad[i]);
    CHECK(hex_decode("a\0", 2, out, sizeof out, &n) != 0, "accepted a NUL");
    CHECK(hex_decode("01020304", 8, out, 4, &n) == 0 && n == 4, "4 bytes into 4 refused");
    CHECK(hex_decode("0102030405", 10, out, 4, &n) != 0, "5 bytes into 4 accepted");
    CHECK(hex_decode("", 0, out, 0, &n) == 0 && n == 0, "empty text refused");
}

int
main(void)
{
    test_vectors();
    test_every_byte();
    test_refused();
    return check_summary("test_hex");
}
