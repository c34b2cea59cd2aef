/* unsub.c -- the token of unsub.h. */
#include "unsub.h"

#include <stdbool.h>
#include <string.h>

#include "crypto.h"

/* MACed before the token's bytes, so that an HMAC under the same secret made for anything else
 * can never pass for a token's. */
#define UNSUB_MAC_LABEL "tocsin-unsubscribe"

static void
put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)(v & 0xff);
}

static uint64_t
get_u64(const uint8_t *p)
{
    uint64_t v = 0;

    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

static bool
secret_ok(const char *secret)
{
    size_t n = secret != NULL ? strlen(secret) : 0;

    return n >= UNSUB_SECRET_MIN && n <= UNSUB_SECRET_MAX;
}

/* The truncated MAC of the n bytes at raw under secret into mac. 0, or -1.
 * clang-tidy 14's analyzer has, in one CI run of several, taken `full` for a va_list it thought
 * leaked (there is no va_list here): a false positive that does not repeat, hence the markers. */
// NOLINTBEGIN(clang-analyzer-valist.Unterminated)
static int
mac_of(const char *secret, const uint8_t *raw, size_t n, uint8_t mac[UNSUB_MAC_LEN])
{
    uint8_t full[CRYPTO_SHA256_LEN];
    const struct crypto_part parts[] = {{UNSUB_MAC_LABEL, sizeof UNSUB_MAC_LABEL - 1}, {raw, n}};

    if (crypto_hmac_sha256(secret, strlen(secret), parts, 2, full) != 0)
        return -1;
    memcpy(mac, full, UNSUB_MAC_LEN);
    crypto_wipe(full, sizeof full);
    return 0;
}
// NOLINTEND(clang-analyzer-valist.Unterminated)

size_t
unsub_token_make(const char *secret, const struct unsub_subject *s, char out[UNSUB_TOKEN_MAX + 1])
{
    uint8_t raw[UNSUB_RAW_MAX];
    size_t plen = strnlen(s->participant, sizeof s->participant);

    if (!secret_ok(secret) || s->tenant_id <= 0 || s->issued_s < 0 || plen == 0 ||
        plen > UNSUB_PARTICIPANT_MAX)
        return 0;
    raw[0] = UNSUB_FORMAT;
    put_u64(raw + 1, (uint64_t)s->tenant_id);
    put_u64(raw + 9, (uint64_t)s->issued_s);
    memcpy(raw + UNSUB_HEAD_LEN, s->participant, plen);
    size_t n = UNSUB_HEAD_LEN + plen;
    if (mac_of(secret, raw, n, raw + n) != 0)
        return 0;
    return b64url_encode(raw, n + UNSUB_MAC_LEN, out);
}

/* Whether secret (may be NULL or "") signed the n bytes at raw, their MAC after them. */
static bool
signed_by(const char *secret, const uint8_t *raw, size_t n)
{
    uint8_t mac[UNSUB_MAC_LEN];

    return secret_ok(secret) && mac_of(secret, raw, n, mac) == 0 &&
           crypto_memeq(mac, raw + n, UNSUB_MAC_LEN);
}

enum unsub_verdict
unsub_token_parse(const struct unsub_keys *keys, const char *text, size_t len,
                  struct unsub_subject *out)
{
    uint8_t raw[UNSUB_RAW_MAX];
    size_t n;

    if (len == 0 || len > UNSUB_TOKEN_MAX || b64url_decode(text, len, raw, sizeof raw, &n) != 0 ||
        n < UNSUB_RAW_MIN || raw[0] != UNSUB_FORMAT)
        return UNSUB_MALFORMED;
    size_t body = n - UNSUB_MAC_LEN, plen = body - UNSUB_HEAD_LEN;
    uint64_t tenant = get_u64(raw + 1), issued = get_u64(raw + 9);
    if (tenant == 0 || tenant > INT64_MAX || issued > INT64_MAX ||
        memchr(raw + UNSUB_HEAD_LEN, '\0', plen) != NULL)
        return UNSUB_MALFORMED;
    /* Both secrets are tried whichever matches, so the time taken does not say which signed. */
    bool current = signed_by(keys->current, raw, body);
    bool previous = signed_by(keys->previous, raw, body);
    if (!current && !previous)
        return UNSUB_FORGED;
    out->tenant_id = (int64_t)tenant;
    out->issued_s = (int64_t)issued;
    memcpy(out->participant, raw + UNSUB_HEAD_LEN, plen);
    out->participant[plen] = '\0';
    return UNSUB_OK;
}
