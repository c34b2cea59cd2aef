/* b64.h -- base64 (RFC 4648 section 4, with padding: webhook secrets and signatures, email
 * bodies and encoded words) and base64url (section 5, without padding: JWT segments, API keys,
 * Web Push keys), both without OpenSSL. Decoding is strict, so that one byte string has exactly
 * one accepted text: a character outside the alphabet, padding where none belongs, an impossible
 * length or non-zero bits after the last byte is refused. Pure. */
#ifndef TOCSIN_B64_H
#define TOCSIN_B64_H

#include <stddef.h>
#include <stdint.h>

/* Characters that encoding n bytes produces, without the terminating NUL. */
#define B64_ENCODED_LEN(n) (((n) + 2) / 3 * 4)  /* padded to a multiple of 4 */
#define B64URL_ENCODED_LEN(n) (((n)*4 + 2) / 3) /* unpadded */
/* Bytes that decoding a text of n characters can produce at most (exact for base64url). */
#define B64_DECODED_MAX(n) ((n)*3 / 4)

/* Encodes the n bytes at in into out, which must hold B64_ENCODED_LEN(n) + 1 bytes (resp.
 * B64URL_ENCODED_LEN(n) + 1), NUL-terminated. Returns the number of characters written. */
size_t b64_encode(const void *in, size_t n, char *out);
size_t b64url_encode(const void *in, size_t n, char *out);

/* Decodes the len characters at in (not NUL-terminated) into out, which has room for out_max
 * bytes, and stores the decoded length in *out_len. Returns 0, or -1 when the text is not the
 * canonical encoding of some byte string or its bytes would not fit in out_max (out may then
 * hold a prefix of them: do not use it). The empty text decodes to zero bytes. */
int b64_decode(const char *in, size_t len, uint8_t *out, size_t out_max, size_t *out_len);
int b64url_decode(const char *in, size_t len, uint8_t *out, size_t out_max, size_t *out_len);

#endif
