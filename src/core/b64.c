/* b64.c -- base64 and base64url codecs of b64.h. One encoder and one decoder parameterised by
 * the alphabet; the decoder reads whole quanta of four characters and checks the tail. */
#include "b64.h"

#include <stdbool.h>

#define INVALID 0xff

static const char std_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char url_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static size_t
encode(const char *alphabet, bool pad, const uint8_t *in, size_t n, char *out)
{
    size_t o = 0, i = 0;

    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = alphabet[v >> 18];
        out[o++] = alphabet[(v >> 12) & 63];
        out[o++] = alphabet[(v >> 6) & 63];
        out[o++] = alphabet[v & 63];
    }
    if (n - i == 1) {
        out[o++] = alphabet[in[i] >> 2];
        out[o++] = alphabet[(in[i] & 3) << 4];
        if (pad) {
            out[o++] = '=';
            out[o++] = '=';
        }
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)in[i] << 8 | in[i + 1];
        out[o++] = alphabet[v >> 10];
        out[o++] = alphabet[(v >> 4) & 63];
        out[o++] = alphabet[(v & 15) << 2];
        if (pad)
            out[o++] = '=';
    }
    out[o] = '\0';
    return o;
}

size_t
b64_encode(const void *in, size_t n, char *out)
{
    return encode(std_alphabet, true, in, n, out);
}

size_t
b64url_encode(const void *in, size_t n, char *out)
{
    return encode(url_alphabet, false, in, n, out);
}

/* The 6-bit value of c in the alphabet, or INVALID. Range comparisons, not a 256-byte table
 * built at run time: nothing to initialise, nothing shared between threads. */
static uint8_t
value(char c, bool url)
{
    if (c >= 'A' && c <= 'Z')
        return (uint8_t)(c - 'A');
    if (c >= 'a' && c <= 'z')
        return (uint8_t)(c - 'a' + 26);
    if (c >= '0' && c <= '9')
        return (uint8_t)(c - '0' + 52);
    if (c == (url ? '-' : '+'))
        return 62;
    if (c == (url ? '_' : '/'))
        return 63;
    return INVALID;
}

/* Decodes len characters that hold no padding: len % 4 must not be 1, and the bits below the
 * last whole byte must be zero (else two texts would decode to the same bytes). */
static int
decode(const char *in, size_t len, bool url, uint8_t *out, size_t out_max, size_t *out_len)
{
    size_t o = 0, i = 0, tail = len % 4;
    uint32_t acc = 0;

    if (tail == 1 || B64_DECODED_MAX(len) > out_max)
        return -1;
    for (; i < len; i++) {
        uint8_t v = value(in[i], url);
        if (v == INVALID)
            return -1;
        acc = acc << 6 | v;
        if (i % 4 == 3) {
            out[o++] = (uint8_t)(acc >> 16);
            out[o++] = (uint8_t)(acc >> 8);
            out[o++] = (uint8_t)acc;
            acc = 0;
        }
    }
    if (tail == 2) {
        if ((acc & 15) != 0)
            return -1;
        out[o++] = (uint8_t)(acc >> 4);
    } else if (tail == 3) {
        if ((acc & 3) != 0)
            return -1;
        out[o++] = (uint8_t)(acc >> 10);
        out[o++] = (uint8_t)(acc >> 2);
    }
    *out_len = o;
    return 0;
}

int
b64url_decode(const char *in, size_t len, uint8_t *out, size_t out_max, size_t *out_len)
{
    return decode(in, len, true, out, out_max, out_len);
}

int
b64_decode(const char *in, size_t len, uint8_t *out, size_t out_max, size_t *out_len)
{
    size_t pad = 0;

    /* Padded text comes in whole quanta; one or two '=' end the last one and stand for the
     * characters an unpadded text would leave out. */
    if (len % 4 != 0)
        return -1;
    if (len > 0 && in[len - 1] == '=')
        pad = len > 1 && in[len - 2] == '=' ? 2 : 1;
    return decode(in, len - pad, false, out, out_max, out_len);
}
