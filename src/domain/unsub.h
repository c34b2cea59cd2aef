/* unsub.h -- the one-click unsubscribe token (docs/design.md section 13, RFC 8058): what the
 * List-Unsubscribe link of every email carries so that a POST of it, with no login, turns that
 * participant's email off. The token names the tenant and the participant, says when it was made
 * and which format it is, and is signed with HMAC-SHA256 under the server's secret
 * (TOCSIN_UNSUBSCRIBE_SECRET), so only this service can make one; a rotated secret keeps
 * verifying the links already sent while it is the previous one. Its text is base64url without
 * padding (URL-safe, no escaping in a query), at most UNSUB_TOKEN_MAX characters.
 *
 * The bytes under the base64url, in order: the format (UNSUB_FORMAT, 1 byte), the tenant id and
 * the issue time in seconds since the epoch (8 bytes each, big-endian), the participant id's
 * UTF-8 (1..UNSUB_PARTICIPANT_MAX bytes, no NUL) and the first UNSUB_MAC_LEN bytes of the HMAC of
 * UNSUB_MAC_LABEL and everything before it. Pure (crypto.c's HMAC, b64.c). */
#ifndef TOCSIN_UNSUB_H
#define TOCSIN_UNSUB_H

#include <stddef.h>
#include <stdint.h>

#include "b64.h"
#include "meeting.h"

#define UNSUB_FORMAT 1          /* the first byte; another is refused */
#define UNSUB_MAC_LEN 16        /* bytes of the truncated HMAC-SHA256: 128 bits */
#define UNSUB_SECRET_MIN 32     /* bytes of a secret, at least */
#define UNSUB_SECRET_MAX 256    /* and at most */
#define UNSUB_HEAD_LEN (1 + 16) /* the format, the tenant id and the issue time */
/* A participant id is up to PARTICIPANT_ID_MAX characters of UTF-8. */
#define UNSUB_PARTICIPANT_MAX (4 * PARTICIPANT_ID_MAX)
#define UNSUB_RAW_MAX (UNSUB_HEAD_LEN + UNSUB_PARTICIPANT_MAX + UNSUB_MAC_LEN)
#define UNSUB_RAW_MIN (UNSUB_HEAD_LEN + 1 + UNSUB_MAC_LEN)
#define UNSUB_TOKEN_MAX B64URL_ENCODED_LEN(UNSUB_RAW_MAX) /* characters, without the NUL */

/* The secrets a token may be signed with: the current one signs, both verify. */
struct unsub_keys {
    const char *current;  /* UNSUB_SECRET_MIN..UNSUB_SECRET_MAX bytes */
    const char *previous; /* NULL or "" when there is none */
};

/* What a token names. */
struct unsub_subject {
    int64_t tenant_id; /* > 0 */
    int64_t issued_s;  /* seconds since the epoch, >= 0 */
    char participant[UNSUB_PARTICIPANT_MAX + 1];
};

/* Why a token is refused. */
enum unsub_verdict {
    UNSUB_OK,
    UNSUB_MALFORMED, /* not a token of this format: length, alphabet, fields */
    UNSUB_FORGED,    /* well formed, but neither secret signed it (altered, foreign) */
};

/* The token for s signed with secret (UNSUB_SECRET_MIN..UNSUB_SECRET_MAX bytes) into out,
 * NUL-terminated. Returns its length, or 0 when s or the secret is out of bounds (a participant
 * id that is empty, too long or holds a NUL cannot be named). */
size_t unsub_token_make(const char *secret, const struct unsub_subject *s,
                        char out[UNSUB_TOKEN_MAX + 1]);

/* Reads the len characters at text (need not be NUL-terminated) into *out when keys->current or
 * keys->previous signed them. The comparison of MACs takes the same time wherever they differ.
 * *out is unspecified unless UNSUB_OK. */
enum unsub_verdict unsub_token_parse(const struct unsub_keys *keys, const char *text, size_t len,
                                     struct unsub_subject *out);

#endif
