/* jwt.h -- tocsin's browser tokens: JWT (RFC 7519) in JWS compact form (RFC 7515), HS256 only.
 * The HTTP layer calls jwt_peek_kid to find the signing key (its kid names the tenant), then
 * jwt_verify with that key and its policy; POST /v1/browser-tokens calls jwt_mint. The algorithm
 * is tocsin's, never the header's: anything but "alg":"HS256" is refused before any key is used.
 * Pure (no I/O, no clock: the caller passes the time); thread-safe. */
#ifndef TOCSIN_JWT_H
#define TOCSIN_JWT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "meeting.h"

/* Longest token accepted, bytes. 4096 would be too few: a token carrying JWT_MTG_MAX meeting
 * ids needs about 5.1 KiB for them alone (100 x 39 bytes of JSON, times 4/3 for base64url), and
 * the largest token jwt_mint can make (that plus a sub of 200 4-byte characters, a 64-byte kid
 * and a 128-byte audience) takes at most 6,954; jwt.c asserts at compile time that its bound fits.
 * Such a token travels in an Authorization header, not in a URL. */
#define JWT_TOKEN_MAX 8192
#define JWT_KID_MAX 64                      /* kid: 1..64 of [A-Za-z0-9_-] */
#define JWT_SUB_MAX PARTICIPANT_ID_MAX      /* sub: 1..200 characters (code points), no controls */
#define JWT_SUB_BYTES_MAX (4 * JWT_SUB_MAX) /* the same in UTF-8 bytes, at most */
#define JWT_MTG_MAX 100                     /* meeting ids in mtg */
#define JWT_AUDIENCE_MAX 128                /* bytes of the audience jwt_mint writes */
/* NumericDates are accepted in 0..JWT_TIME_MAX (9999-12-31T23:59:59Z), so that the sums below
 * cannot overflow; a policy's leeway and lifetime are bounded for the same reason. */
#define JWT_TIME_MAX INT64_C(253402300799)
#define JWT_LEEWAY_MAX 3600
#define JWT_LIFETIME_MAX 31622400

/* Scopes, as bits of jwt_claims.scopes; in a token, the space-separated names. */
#define JWT_SCOPE_MEETINGS_READ (1u << 0)  /* "meetings:read" */
#define JWT_SCOPE_MEETINGS_WRITE (1u << 1) /* "meetings:write" */
#define JWT_SCOPE_NOTIFICATIONS (1u << 2)  /* "notifications" */
#define JWT_SCOPE_PUSH (1u << 3)           /* "push" */
#define JWT_SCOPES_ALL 0xfu
#define JWT_SCOPE_TEXT_MAX 48 /* all four names, space-separated, plus NUL */

/* Why a token was refused: X(name, short text for logs). Each refusal has its own value so that
 * logs and tests can tell them apart; all but JWT_E_INTERNAL are the token's fault (HTTP 401). */
#define JWT_ERRORS(X)                                                                              \
    X(JWT_OK, "valid")                                                                             \
    X(JWT_E_TOO_LONG, "token longer than JWT_TOKEN_MAX bytes")                                     \
    X(JWT_E_SEGMENTS, "not three dot-separated segments")                                          \
    X(JWT_E_BASE64, "a segment is not unpadded base64url")                                         \
    X(JWT_E_HEADER, "header is not a JSON object")                                                 \
    X(JWT_E_CLAIMS, "claims are not a JSON object")                                                \
    X(JWT_E_DUPLICATE, "duplicate JSON member")                                                    \
    X(JWT_E_ALG, "alg is not HS256")                                                               \
    X(JWT_E_CRIT, "crit header present")                                                           \
    X(JWT_E_TYP, "typ is not JWT")                                                                 \
    X(JWT_E_KID, "kid missing or not 1..64 of [A-Za-z0-9_-]")                                      \
    X(JWT_E_SIGNATURE, "bad signature")                                                            \
    X(JWT_E_AUD, "aud missing or not this audience")                                               \
    X(JWT_E_EXP, "exp missing or not a NumericDate")                                               \
    X(JWT_E_EXPIRED, "expired")                                                                    \
    X(JWT_E_IAT, "iat missing or not a NumericDate")                                               \
    X(JWT_E_IAT_FUTURE, "iat in the future")                                                       \
    X(JWT_E_LIFETIME, "exp - iat not within the allowed lifetime")                                 \
    X(JWT_E_NBF, "nbf not a NumericDate")                                                          \
    X(JWT_E_NBF_FUTURE, "not valid yet (nbf)")                                                     \
    X(JWT_E_SUB, "sub missing, not a string of 1..200 characters, or with control characters")     \
    X(JWT_E_SCOPE, "scope not a space-separated string of known scopes")                           \
    X(JWT_E_MTG, "mtg not an array of 1..100 canonical meeting ids")                               \
    X(JWT_E_INTERNAL, "cannot verify: HMAC failure or policy out of range")

enum jwt_error {
#define X(name, text) name,
    JWT_ERRORS(X)
#undef X
};

/* A short, static, constant text for logs (never quotes the token). */
const char *jwt_error_text(enum jwt_error e);

struct jwt_policy {
    const char *audience;   /* aud must be this string, or an array that contains it */
    int64_t max_lifetime_s; /* exp - iat at most this: 86400, or 900 for a token from a URL */
    int64_t leeway_s;       /* clock skew allowed on exp, iat and nbf: 30 */
};

/* What a verified token says, or what jwt_mint writes. Fixed storage, nothing to free. */
struct jwt_claims {
    char sub[JWT_SUB_BYTES_MAX + 1]; /* UTF-8, NUL-terminated */
    unsigned scopes;                 /* JWT_SCOPE_* bits; a token without scope has none */
    int64_t iat, exp;                /* seconds since the epoch (fractions dropped) */
    /* The meetings the token is limited to. n_mtg == 0 means no mtg claim: not limited. An
     * empty "mtg": [] is refused rather than read as "no limit", so that a backend which
     * computed an empty list by mistake gets a 401, not a token for every meeting. */
    char mtg[JWT_MTG_MAX][MEETING_ID_LEN + 1];
    size_t n_mtg;
};

/* Reads the header of the len-byte token (not NUL-terminated) and copies its kid into kid,
 * before any key is known, so that the caller can look the key up. Checks everything the header
 * alone decides (size, segments, base64url, one JSON object without duplicate members, alg,
 * crit, typ, kid) and nothing else: the signature and the claims are jwt_verify's. Returns
 * JWT_OK, or the refusal (kid is then unspecified). */
enum jwt_error jwt_peek_kid(const char *token, size_t len, char kid[JWT_KID_MAX + 1]);

/* Verifies the len-byte token (not NUL-terminated) with the HMAC key (keylen bytes; for a
 * tocsin signing key, the whole secret string's bytes) under policy at the time now_s (seconds
 * since the epoch), and fills *out. Refuses, in this order: what jwt_peek_kid refuses but
 * the kid (the key given is what authenticates the token, however it was found), a signature that
 * does not match (compared in constant time, MAC computed over the received "header.payload"
 * bytes), claims that are not one JSON object without duplicates, then aud, exp (expired when now_s
 * >= exp + leeway), iat (future when iat > now_s + leeway), exp - iat outside 1..max_lifetime_s,
 * nbf (future when nbf > now_s + leeway), sub, scope, mtg. Other claims are ignored. NumericDates
 * may be integers or fractions, in 0..JWT_TIME_MAX. JWT_E_INTERNAL when the HMAC fails or the
 * policy is out of range (audience NULL, leeway not 0..JWT_LEEWAY_MAX, max_lifetime_s
 * not 1..JWT_LIFETIME_MAX, now_s not 0..JWT_TIME_MAX). Returns JWT_OK with *out filled, or the
 * refusal (*out is then unspecified). */
enum jwt_error jwt_verify(const char *token, size_t len, const void *key, size_t keylen,
                          const struct jwt_policy *policy, int64_t now_s, struct jwt_claims *out);

/* Mints a token for claims under key (keylen bytes) with header {"alg":"HS256","typ":"JWT",
 * "kid":kid} and claims {"sub","aud":audience,"iat","exp","scope","mtg" when n_mtg > 0}.
 * Returns the NUL-terminated token, malloc'ed: the caller free()s it. NULL when an input is out
 * of what jwt_verify accepts (kid shape, audience 1..JWT_AUDIENCE_MAX bytes, sub, scope bits,
 * iat and exp in 0..JWT_TIME_MAX with exp > iat, mtg ids) or on an allocation or HMAC failure.
 * The lifetime limit is the caller's: it chooses exp. */
char *jwt_mint(const void *key, size_t keylen, const char *kid, const char *audience,
               const struct jwt_claims *claims);

/* Parses a scope string (len bytes: names from the list above separated by single spaces; the
 * empty string is no scope) into JWT_SCOPE_* bits. Returns 0, or -1 for an unknown name, an
 * empty name (leading, trailing or doubled space) or other bytes. For request bodies too. */
int jwt_scopes_parse(const char *text, size_t len, unsigned *scopes);

/* Writes the names of the scope bits into out (JWT_SCOPE_TEXT_MAX bytes), in the order above,
 * separated by single spaces ("" for none). Returns 0, or -1 when scopes has unknown bits. */
int jwt_scopes_format(unsigned scopes, char out[JWT_SCOPE_TEXT_MAX]);

#endif
