/* hex.c -- the lower-case hexadecimal codec of hex.h, the one table of hex digits. */
#include "hex.h"

static const char digits[] = "0123456789abcdef";

size_t
hex_encode(const void *in, size_t n, char *out)
{
    const uint8_t *b = in;

    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * n] = '\0';
    return 2 * n;
}

char
hex_digit(unsigned v)
{
    return digits[v & 15];
}

int
hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

int
hex_decode(const char *in, size_t len, uint8_t *out, size_t out_max, size_t *out_len)
{
    if (len % 2 != 0 || len / 2 > out_max)
        return -1;
    for (size_t i = 0; i < len / 2; i++) {
        int hi = hex_value(in[2 * i]), lo = hex_value(in[2 * i + 1]);

        if (hi < 0 || lo < 0)
            return -1;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    *out_len = len / 2;
    return 0;
}
