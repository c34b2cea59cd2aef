/* hex.h -- lower-case hexadecimal (RFC 4648 section 8, base16, as lower case): hashes in the
 * database and in ETags, request hashes, ids and cursors. Decoding is strict like b64.h's: only
 * 0-9 and a-f, an even length, so that one byte string has exactly one accepted text. Pure. */
#ifndef TOCSIN_HEX_H
#define TOCSIN_HEX_H

#include <stddef.h>
#include <stdint.h>

/* Characters that encoding n bytes produces, without the terminating NUL. */
#define HEX_ENCODED_LEN(n) (2 * (n))

/* Encodes the n bytes at in into out, which must hold HEX_ENCODED_LEN(n) + 1 bytes,
 * NUL-terminated. Returns the number of characters written. */
size_t hex_encode(const void *in, size_t n, char *out);

/* Decodes the len characters at in (not NUL-terminated) into out, which has room for out_max
 * bytes, and stores the decoded length in *out_len. Returns 0, or -1 when len is odd, a
 * character is not a lower-case hex digit or the bytes would not fit in out_max (out may then
 * hold a prefix of them: do not use it). */
int hex_decode(const char *in, size_t len, uint8_t *out, size_t out_max, size_t *out_len);

/* The lower-case digit of the low four bits of v (for escapes and numbers written digit by
 * digit: \xHH, \uHHHH, IPv6 pieces). */
char hex_digit(unsigned v);

/* 0..15 for a lower-case hex digit, -1 for any other character. */
int hex_value(char c);

#endif
