/* fuzz_jwt.c -- libFuzzer target for the browser-token code (jwt.c, b64.c), three ways per input:
 *  1. the input as a token: jwt_peek_kid and jwt_verify under a fixed key;
 *  2. the input as "<header JSON> 0xff <claims JSON>" (no 0xff: a fixed header and the input as
 *     claims), encoded and signed with the fixed key, so that jwt_verify gets past the signature
 *     and every claim check sees fuzzed JSON; a token it accepts must satisfy the rules itself;
 *  3. the input as a claims set for jwt_mint: whatever it mints must verify to the same claims.
 * A crash, a sanitizer report or a broken property (abort) is a bug. Built by tests/fuzz/run.sh. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "crypto.h"
#include "jwt.h"

#define KEY "tsk_fuzz_signing_key"
#define AUD "tocsin"
#define NOW 1700000000
#define LEEWAY_S 30
#define MAX_LIFETIME_S 86400
#define DEFAULT_HEADER "{\"alg\":\"HS256\",\"typ\":\"JWT\",\"kid\":\"k1\"}"
#define SIGNED_MAX (2 * B64URL_ENCODED_LEN(JWT_TOKEN_MAX) + 64)

static const struct jwt_policy policy = {AUD, MAX_LIFETIME_S, LEEWAY_S};

static void
check(bool ok)
{
    if (!ok)
        abort();
}

static bool
meeting_ids_ok(const struct jwt_claims *c)
{
    for (size_t i = 0; i < c->n_mtg; i++) {
        if (!meeting_id_valid(c->mtg[i]))
            return false;
    }
    return c->n_mtg <= JWT_MTG_MAX;
}

/* What jwt_verify promises about the claims of a token it accepted at NOW. */
static void
check_accepted(const struct jwt_claims *c)
{
    size_t n = strlen(c->sub);

    check(n >= 1 && n <= JWT_SUB_BYTES_MAX);
    for (size_t i = 0; i < n; i++)
        check((unsigned char)c->sub[i] >= 0x20 && c->sub[i] != 0x7f);
    check((c->scopes & ~JWT_SCOPES_ALL) == 0);
    check(c->exp - c->iat >= 1 && c->exp - c->iat <= MAX_LIFETIME_S);
    check(NOW < c->exp + LEEWAY_S && c->iat <= NOW + LEEWAY_S);
    check(meeting_ids_ok(c));
}

static void
as_token(const uint8_t *data, size_t size)
{
    char kid[JWT_KID_MAX + 1];
    struct jwt_claims c;

    if (jwt_peek_kid((const char *)data, size, kid) == JWT_OK)
        check(strlen(kid) >= 1 && strlen(kid) <= JWT_KID_MAX);
    if (jwt_verify((const char *)data, size, KEY, strlen(KEY), &policy, NOW, &c) == JWT_OK)
        check_accepted(&c);
}

static void
as_signed_json(const uint8_t *data, size_t size)
{
    static char tok[SIGNED_MAX];
    const uint8_t *sep = memchr(data, 0xff, size);
    const char *header = sep ? (const char *)data : DEFAULT_HEADER;
    size_t hlen = sep ? (size_t)(sep - data) : strlen(DEFAULT_HEADER);
    const uint8_t *claims = sep ? sep + 1 : data;
    size_t clen = sep ? size - hlen - 1 : size;
    uint8_t mac[CRYPTO_SHA256_LEN];
    struct jwt_claims c;
    size_t o;

    if (B64URL_ENCODED_LEN(hlen) + B64URL_ENCODED_LEN(clen) + 64 > sizeof tok)
        return;
    o = b64url_encode(header, hlen, tok);
    tok[o++] = '.';
    o += b64url_encode(claims, clen, tok + o);
    struct crypto_part part = {tok, o};
    check(crypto_hmac_sha256(KEY, strlen(KEY), &part, 1, mac) == 0);
    tok[o++] = '.';
    o += b64url_encode(mac, sizeof mac, tok + o);
    if (jwt_verify(tok, o, KEY, strlen(KEY), &policy, NOW, &c) == JWT_OK)
        check_accepted(&c);
}

/* Takes n bytes from the input (fewer at its end). */
static size_t
take(const uint8_t **data, size_t *size, void *out, size_t n)
{
    if (n > *size)
        n = *size;
    memcpy(out, *data, n);
    *data += n;
    *size -= n;
    return n;
}

static void
as_mint_input(const uint8_t *data, size_t size)
{
    struct jwt_claims in, out;
    uint8_t head[4] = {0};
    uint16_t sub_len = 0;
    uint32_t life = 0;
    char kid[JWT_KID_MAX + 2] = {0}; /* up to one byte too long, and its NUL */

    memset(&in, 0, sizeof in);
    take(&data, &size, head, sizeof head); /* scopes, mtg count, kid length, a flag */
    take(&data, &size, &life, sizeof life);
    take(&data, &size, &sub_len, sizeof sub_len);
    take(&data, &size, kid, head[2] % (JWT_KID_MAX + 2));
    take(&data, &size, in.sub, sub_len % (JWT_SUB_BYTES_MAX + 1));
    in.scopes = head[0] & (head[3] & 1 ? 0xffu : JWT_SCOPES_ALL);
    in.iat = NOW - (int64_t)(life % 64);
    in.exp = in.iat + (int64_t)(life >> 6) % (MAX_LIFETIME_S + 2);
    in.n_mtg = head[1] % (JWT_MTG_MAX + 1);
    for (size_t i = 0; i < in.n_mtg; i++) {
        uint8_t b[MEETING_ID_BYTES] = {0};
        take(&data, &size, b, sizeof b);
        meeting_id_format(b, in.mtg[i]);
    }
    char *tok = jwt_mint(KEY, strlen(KEY), kid, AUD, &in);
    if (tok == NULL)
        return;
    /* Minted at most LEEWAY_S ago with a lifetime the policy allows: it must verify as is. */
    enum jwt_error e = jwt_verify(tok, strlen(tok), KEY, strlen(KEY), &policy, NOW, &out);
    check(strlen(tok) <= JWT_TOKEN_MAX);
    if (in.exp - in.iat <= MAX_LIFETIME_S && in.exp + LEEWAY_S > NOW) {
        check(e == JWT_OK);
        check(strcmp(out.sub, in.sub) == 0 && out.scopes == in.scopes && out.iat == in.iat &&
              out.exp == in.exp && out.n_mtg == in.n_mtg);
        for (size_t i = 0; i < in.n_mtg; i++)
            check(strcmp(out.mtg[i], in.mtg[i]) == 0);
    } else {
        check(e == JWT_E_LIFETIME || e == JWT_E_EXPIRED);
    }
    free(tok);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    as_token(data, size);
    as_signed_json(data, size);
    as_mint_input(data, size);
    return 0;
}
