/* test_jwt.c -- browser tokens: the HS256 example of RFC 7515 appendix A.1 byte for byte, then a
 * table of header/claims pairs signed here (not by jwt_mint) with one case for every refusal
 * and the boundaries (24 h and 24 h + 1 s, the leeway exactly, sub of 200 and 201 characters,
 * 100 and 101 meeting ids, a token of JWT_TOKEN_MAX bytes and one more), tokens broken at the
 * byte level, jwt_peek_kid, the policy bounds, and jwt_mint round trips.
 * JSON in the tables is written with ' for " to stay readable; q() swaps them back. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "check.h"
#include "crypto.h"
#include "jwt.h"

#define KEY "tsk_test_signing_key_0123456789abcdef"
#define AUD "tocsin"
#define NOW 1700000000
#define DAY_S 86400
#define URL_LIFETIME_S 900
#define LEEWAY_S 30
#define JSON_MAX 8192
#define HDR "{'alg':'HS256','typ':'JWT','kid':'k1'}"
/* A valid claims set; cases append members after it. */
#define STD "{'sub':'u1','aud':'tocsin','iat':1700000000,'exp':1700000900"
#define MTG1 "'0b7e3f4c-1d2a-4e5f-8a9b-0c1d2e3f4a5b'"

/* Swaps ' for " in place; returns s. */
static char *
q(char *s)
{
    for (char *p = s; *p != '\0'; p++) {
        if (*p == '\'')
            *p = '"';
    }
    return s;
}

/* base64url(header) "." base64url(claims) "." base64url(HMAC-SHA256(key, the first two)),
 * from the JSON texts exactly as given (with ' for "). malloc'ed; free(). */
static char *
sign_with(const char *header, const char *claims, const char *key)
{
    static char h[JSON_MAX], c[JSON_MAX];
    size_t hl = strlen(header), cl = strlen(claims);
    char *tok = malloc(B64URL_ENCODED_LEN(hl) + B64URL_ENCODED_LEN(cl) + 64);
    uint8_t mac[CRYPTO_SHA256_LEN];
    size_t o;

    memcpy(h, header, hl + 1);
    memcpy(c, claims, cl + 1);
    o = b64url_encode(q(h), hl, tok);
    tok[o++] = '.';
    o += b64url_encode(q(c), cl, tok + o);
    struct crypto_part part = {tok, o};
    if (crypto_hmac_sha256(key, strlen(key), &part, 1, mac) != 0)
        abort();
    tok[o++] = '.';
    b64url_encode(mac, sizeof mac, tok + o);
    return tok;
}

static char *
sign(const char *header, const char *claims)
{
    return sign_with(header, claims, KEY);
}

static enum jwt_error
verify_at(const char *token, int64_t now, int64_t max_lifetime, struct jwt_claims *out)
{
    struct jwt_policy p = {AUD, max_lifetime, LEEWAY_S};

    return jwt_verify(token, strlen(token), KEY, strlen(KEY), &p, now, out);
}

/* RFC 7515 appendix A.1: its key and its token, whose JSON holds CR LF and spaces, so only a
 * MAC over the bytes as received matches. The example has no aud (nor kid, nor sub), so
 * jwt_verify passes the signature and stops at aud; one changed byte stops it at the signature. */
static void
test_rfc7515_a1(void)
{
    static const char key_b64[] =
        "AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow";
    static const char token[] =
        "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9"
        ".eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0"
        "cnVlfQ"
        ".dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
    struct jwt_policy p = {AUD, DAY_S, LEEWAY_S};
    struct jwt_claims c;
    uint8_t key[64], mac[CRYPTO_SHA256_LEN];
    char sig[B64URL_ENCODED_LEN(CRYPTO_SHA256_LEN) + 1], copy[sizeof token];
    size_t klen;

    CHECK(b64url_decode(key_b64, strlen(key_b64), key, sizeof key, &klen) == 0 && klen == 64,
          "A.1 key does not decode");
    /* The MAC of the signing input, computed directly, is the example's third segment. */
    struct crypto_part input = {token, strchr(strchr(token, '.') + 1, '.') - token};
    CHECK(crypto_hmac_sha256(key, klen, &input, 1, mac) == 0, "HMAC failed");
    b64url_encode(mac, sizeof mac, sig);
    CHECK(strcmp(sig, strrchr(token, '.') + 1) == 0, "A.1 signature: got %s", sig);

    /* The header says typ JWT and alg HS256; claims {iss, exp 1300819380, ...}, no aud. */
    CHECK(jwt_verify(token, strlen(token), key, klen, &p, 1300819380 - 60, &c) == JWT_E_AUD,
          "A.1 did not pass its signature");
    memcpy(copy, token, sizeof token);
    copy[strlen(copy) - 1] = 'Y'; /* 'k' -> 'Y': the last 6 bits change, trailing bits stay 0 */
    CHECK(jwt_verify(copy, strlen(copy), key, klen, &p, 1300819380 - 60, &c) == JWT_E_SIGNATURE,
          "A.1 with a changed signature byte");
    memcpy(copy, token, sizeof token);
    copy[50] = copy[50] == 'A' ? 'B' : 'A'; /* inside the payload */
    CHECK(jwt_verify(copy, strlen(copy), key, klen, &p, 1300819380 - 60, &c) == JWT_E_SIGNATURE,
          "A.1 with a changed payload byte");
    key[0] ^= 1;
    CHECK(jwt_verify(token, strlen(token), key, klen, &p, 1300819380 - 60, &c) == JWT_E_SIGNATURE,
          "A.1 under another key");
}

static const struct {
    const char *name, *header, *claims;
    int64_t now, max_lifetime; /* 0: NOW, DAY_S */
    enum jwt_error want;
} cases[] = {
    {"minimal", HDR, STD "}", 0, 0, JWT_OK},
    {"unknown claims ignored", HDR, STD ",'iss':'x','jti':'y','nested':{'a':[1,{}]}}", 0, 0,
     JWT_OK},
    {"no typ, other header members", "{'alg':'HS256','kid':'k1','x5u':'http://x','jwk':{}}",
     STD "}", 0, 0, JWT_OK},
    {"typ in lower case", "{'alg':'HS256','typ':'jwt','kid':'k1'}", STD "}", 0, 0, JWT_OK},
    {"header without kid (the key was given)", "{'alg':'HS256'}", STD "}", 0, 0, JWT_OK},
    /* alg */
    {"alg none", "{'alg':'none','typ':'JWT','kid':'k1'}", STD "}", 0, 0, JWT_E_ALG},
    {"alg HS512", "{'alg':'HS512','kid':'k1'}", STD "}", 0, 0, JWT_E_ALG},
    {"alg RS256", "{'alg':'RS256','kid':'k1'}", STD "}", 0, 0, JWT_E_ALG},
    {"alg ES256", "{'alg':'ES256','kid':'k1'}", STD "}", 0, 0, JWT_E_ALG},
    {"alg hs256", "{'alg':'hs256','kid':'k1'}", STD "}", 0, 0, JWT_E_ALG},
    {"alg with a space", "{'alg':'HS256 ','kid':'k1'}", STD "}", 0, 0, JWT_E_ALG},
    {"alg missing", "{'typ':'JWT','kid':'k1'}", STD "}", 0, 0, JWT_E_ALG},
    {"alg not a string", "{'alg':['HS256'],'kid':'k1'}", STD "}", 0, 0, JWT_E_ALG},
    /* crit, typ */
    {"crit", "{'alg':'HS256','kid':'k1','crit':['exp'],'exp':1}", STD "}", 0, 0, JWT_E_CRIT},
    {"crit empty", "{'alg':'HS256','kid':'k1','crit':[]}", STD "}", 0, 0, JWT_E_CRIT},
    {"typ at+jwt", "{'alg':'HS256','typ':'at+jwt','kid':'k1'}", STD "}", 0, 0, JWT_E_TYP},
    {"typ JWS", "{'alg':'HS256','typ':'JWS','kid':'k1'}", STD "}", 0, 0, JWT_E_TYP},
    {"typ number", "{'alg':'HS256','typ':1,'kid':'k1'}", STD "}", 0, 0, JWT_E_TYP},
    /* not JSON objects, duplicates */
    {"header an array", "['HS256']", STD "}", 0, 0, JWT_E_HEADER},
    {"header a string", "'HS256'", STD "}", 0, 0, JWT_E_HEADER},
    {"header not JSON", "{'alg':'HS256',}", STD "}", 0, 0, JWT_E_HEADER},
    {"header with \\u0000", "{'alg':'HS256','kid':'k\\u0000'}", STD "}", 0, 0, JWT_E_HEADER},
    {"header duplicate alg", "{'alg':'HS256','alg':'none','kid':'k1'}", STD "}", 0, 0,
     JWT_E_DUPLICATE},
    {"claims an array", HDR, "[{'sub':'u1'}]", 0, 0, JWT_E_CLAIMS},
    {"claims empty", HDR, "", 0, 0, JWT_E_CLAIMS},
    {"claims two objects", HDR, STD "}{}", 0, 0, JWT_E_CLAIMS},
    {"claims duplicate sub", HDR, STD ",'sub':'admin'}", 0, 0, JWT_E_DUPLICATE},
    {"claims duplicate, escaped", HDR, STD ",'\\u0073ub':'admin'}", 0, 0, JWT_E_DUPLICATE},
    {"claims duplicate, nested", HDR, STD ",'x':{'a':1,'a':2}}", 0, 0, JWT_E_DUPLICATE},
    /* aud */
    {"aud missing", HDR, "{'sub':'u1','iat':1700000000,'exp':1700000900}", 0, 0, JWT_E_AUD},
    {"aud other", HDR, "{'sub':'u1','aud':'tocsin2','iat':1700000000,'exp':1700000900}", 0, 0,
     JWT_E_AUD},
    {"aud prefix", HDR, "{'sub':'u1','aud':'tocs','iat':1700000000,'exp':1700000900}", 0, 0,
     JWT_E_AUD},
    {"aud array with it", HDR,
     "{'sub':'u1','aud':['x','tocsin'],'iat':1700000000,'exp':1700000900}", 0, 0, JWT_OK},
    {"aud array without it", HDR, "{'sub':'u1','aud':['x'],'iat':1700000000,'exp':1700000900}", 0,
     0, JWT_E_AUD},
    {"aud array empty", HDR, "{'sub':'u1','aud':[],'iat':1700000000,'exp':1700000900}", 0, 0,
     JWT_E_AUD},
    {"aud array with a number", HDR,
     "{'sub':'u1','aud':['tocsin',1],'iat':1700000000,'exp':1700000900}", 0, 0, JWT_E_AUD},
    {"aud null", HDR, "{'sub':'u1','aud':null,'iat':1700000000,'exp':1700000900}", 0, 0, JWT_E_AUD},
    /* exp */
    {"exp missing", HDR, "{'sub':'u1','aud':'tocsin','iat':1700000000}", 0, 0, JWT_E_EXP},
    {"exp a string", HDR, "{'sub':'u1','aud':'tocsin','iat':1700000000,'exp':'1700000900'}", 0, 0,
     JWT_E_EXP},
    {"exp negative", HDR, "{'sub':'u1','aud':'tocsin','iat':1700000000,'exp':-1}", 0, 0, JWT_E_EXP},
    {"exp past year 9999", HDR, "{'sub':'u1','aud':'tocsin','iat':1700000000,'exp':1e13}", 0, 0,
     JWT_E_EXP},
    {"exp a fraction", HDR, "{'sub':'u1','aud':'tocsin','iat':1700000000.5,'exp':1700000900.9}", 0,
     0, JWT_OK},
    {"expired", HDR, STD "}", NOW + 900 + LEEWAY_S + 1, 0, JWT_E_EXPIRED},
    {"expired at exp + leeway exactly", HDR, STD "}", NOW + 900 + LEEWAY_S, 0, JWT_E_EXPIRED},
    {"within the leeway after exp", HDR, STD "}", NOW + 900 + LEEWAY_S - 1, 0, JWT_OK},
    /* iat */
    {"iat missing", HDR, "{'sub':'u1','aud':'tocsin','exp':1700000900}", 0, 0, JWT_E_IAT},
    {"iat true", HDR, "{'sub':'u1','aud':'tocsin','iat':true,'exp':1700000900}", 0, 0, JWT_E_IAT},
    {"iat in the future", HDR, STD "}", NOW - LEEWAY_S - 1, 0, JWT_E_IAT_FUTURE},
    {"iat ahead by the leeway exactly", HDR, STD "}", NOW - LEEWAY_S, 0, JWT_OK},
    /* lifetime */
    {"lifetime 24 h", HDR, "{'sub':'u1','aud':'tocsin','iat':1700000000,'exp':1700086400}", 0, 0,
     JWT_OK},
    {"lifetime 24 h + 1 s", HDR, "{'sub':'u1','aud':'tocsin','iat':1700000000,'exp':1700086401}", 0,
     0, JWT_E_LIFETIME},
    {"lifetime 15 min from a URL", HDR, STD "}", 0, URL_LIFETIME_S, JWT_OK},
    {"lifetime 15 min + 1 s from a URL", HDR,
     "{'sub':'u1','aud':'tocsin','iat':1700000000,'exp':1700000901}", 0, URL_LIFETIME_S,
     JWT_E_LIFETIME},
    {"exp equal to iat", HDR, "{'sub':'u1','aud':'tocsin','iat':1700000000,'exp':1700000000}", 0, 0,
     JWT_E_LIFETIME},
    {"exp before iat", HDR, "{'sub':'u1','aud':'tocsin','iat':1700000010,'exp':1700000005}",
     NOW - 20, 0, JWT_E_LIFETIME},
    /* nbf */
    {"nbf now", HDR, STD ",'nbf':1700000000}", 0, 0, JWT_OK},
    {"nbf ahead by the leeway exactly", HDR, STD ",'nbf':1700000030}", 0, 0, JWT_OK},
    {"nbf in the future", HDR, STD ",'nbf':1700000031}", 0, 0, JWT_E_NBF_FUTURE},
    {"nbf a string", HDR, STD ",'nbf':'now'}", 0, 0, JWT_E_NBF},
    {"nbf null", HDR, STD ",'nbf':null}", 0, 0, JWT_E_NBF},
    /* sub */
    {"sub missing", HDR, "{'aud':'tocsin','iat':1700000000,'exp':1700000900}", 0, 0, JWT_E_SUB},
    {"sub a number", HDR, "{'sub':1,'aud':'tocsin','iat':1700000000,'exp':1700000900}", 0, 0,
     JWT_E_SUB},
    {"sub empty", HDR, "{'sub':'','aud':'tocsin','iat':1700000000,'exp':1700000900}", 0, 0,
     JWT_E_SUB},
    {"sub with a control character", HDR,
     "{'sub':'u\\u0001','aud':'tocsin','iat':1700000000,'exp':1700000900}", 0, 0, JWT_E_SUB},
    {"sub with a newline", HDR, "{'sub':'u\\n1','aud':'tocsin','iat':1700000000,'exp':1700000900}",
     0, 0, JWT_E_SUB},
    {"sub with DEL", HDR, "{'sub':'u\\u007f','aud':'tocsin','iat':1700000000,'exp':1700000900}", 0,
     0, JWT_E_SUB},
    {"sub not UTF-8", HDR, "{'sub':'u\xff','aud':'tocsin','iat':1700000000,'exp':1700000900}", 0, 0,
     JWT_E_CLAIMS},
    {"sub with a space and non-ASCII", HDR,
     "{'sub':'Zo\xc3\xab K','aud':'tocsin','iat':1700000000,'exp':1700000900}", 0, 0, JWT_OK},
    /* scope */
    {"scope empty", HDR, STD ",'scope':''}", 0, 0, JWT_OK},
    {"scope all four", HDR, STD ",'scope':'meetings:read meetings:write notifications push'}", 0, 0,
     JWT_OK},
    {"scope unknown", HDR, STD ",'scope':'notifications admin'}", 0, 0, JWT_E_SCOPE},
    {"scope in upper case", HDR, STD ",'scope':'PUSH'}", 0, 0, JWT_E_SCOPE},
    {"scope doubled space", HDR, STD ",'scope':'push  notifications'}", 0, 0, JWT_E_SCOPE},
    {"scope trailing space", HDR, STD ",'scope':'push '}", 0, 0, JWT_E_SCOPE},
    {"scope tab", HDR, STD ",'scope':'push\\tnotifications'}", 0, 0, JWT_E_SCOPE},
    {"scope an array", HDR, STD ",'scope':['push']}", 0, 0, JWT_E_SCOPE},
    {"scope with a NUL-free prefix match", HDR, STD ",'scope':'meetings:'}", 0, 0, JWT_E_SCOPE},
    /* mtg */
    {"mtg one", HDR, STD ",'mtg':[" MTG1 "]}", 0, 0, JWT_OK},
    {"mtg empty", HDR, STD ",'mtg':[]}", 0, 0, JWT_E_MTG},
    {"mtg a string", HDR, STD ",'mtg':" MTG1 "}", 0, 0, JWT_E_MTG},
    {"mtg null", HDR, STD ",'mtg':null}", 0, 0, JWT_E_MTG},
    {"mtg upper case", HDR, STD ",'mtg':['0B7E3F4C-1D2A-4E5F-8A9B-0C1D2E3F4A5B']}", 0, 0,
     JWT_E_MTG},
    {"mtg without dashes", HDR, STD ",'mtg':['0b7e3f4c1d2a4e5f8a9b0c1d2e3f4a5b']}", 0, 0,
     JWT_E_MTG},
    {"mtg a number inside", HDR, STD ",'mtg':[" MTG1 ",7]}", 0, 0, JWT_E_MTG},
};

static void
test_table(void)
{
    struct jwt_claims c;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *tok = sign(cases[i].header, cases[i].claims);
        int64_t now = cases[i].now != 0 ? cases[i].now : NOW;
        int64_t life = cases[i].max_lifetime != 0 ? cases[i].max_lifetime : DAY_S;
        enum jwt_error got = verify_at(tok, now, life, &c);

        CHECK(got == cases[i].want, "%s: got %s, want %s", cases[i].name, jwt_error_text(got),
              jwt_error_text(cases[i].want));
        free(tok);
    }
}

/* What a verified token's claims come out as. */
static void
test_claims_filled(void)
{
    struct jwt_claims c;
    char *tok = sign(HDR, STD ",'scope':'push meetings:read','mtg':[" MTG1 "]}");

    CHECK(verify_at(tok, NOW, DAY_S, &c) == JWT_OK, "valid token refused");
    CHECK(strcmp(c.sub, "u1") == 0 && c.iat == NOW && c.exp == NOW + 900, "sub/iat/exp");
    CHECK(c.scopes == (JWT_SCOPE_PUSH | JWT_SCOPE_MEETINGS_READ), "scopes %x", c.scopes);
    CHECK(c.n_mtg == 1 && strcmp(c.mtg[0], "0b7e3f4c-1d2a-4e5f-8a9b-0c1d2e3f4a5b") == 0, "mtg");
    free(tok);
    tok = sign(HDR, STD "}");
    CHECK(verify_at(tok, NOW, DAY_S, &c) == JWT_OK && c.scopes == 0 && c.n_mtg == 0,
          "no scope and no mtg: scopes %x, n_mtg %zu", c.scopes, c.n_mtg);
    free(tok);
}

/* A claims set whose sub is n copies of unit, or whose mtg holds n distinct ids. */
static char *
sub_token(const char *unit, int n)
{
    static char claims[JSON_MAX];
    size_t o = (size_t)snprintf(claims, sizeof claims, "{'sub':'");

    for (int i = 0; i < n; i++)
        o += (size_t)snprintf(claims + o, sizeof claims - o, "%s", unit);
    snprintf(claims + o, sizeof claims - o, "','aud':'tocsin','iat':%d,'exp':%d}", NOW, NOW + 60);
    return sign(HDR, claims);
}

static char *
mtg_token(int n)
{
    static char claims[JSON_MAX];
    size_t o = (size_t)snprintf(claims, sizeof claims, "%s,'mtg':[", STD);

    for (int i = 0; i < n; i++)
        o += (size_t)snprintf(claims + o, sizeof claims - o, "%s'00000000-0000-4000-8000-%012d'",
                              i > 0 ? "," : "", i);
    snprintf(claims + o, sizeof claims - o, "]}");
    return sign(HDR, claims);
}

static void
test_limits(void)
{
    static const struct {
        const char *unit;
        int n;
        enum jwt_error want;
    } subs[] = {
        {"a", 200, JWT_OK},
        {"a", 201, JWT_E_SUB},
        {"\xc3\xa9", 200, JWT_OK}, /* two bytes each */
        {"\xc3\xa9", 201, JWT_E_SUB},
        {"\xf0\x9f\x98\x80", 200, JWT_OK}, /* four bytes each: JWT_SUB_BYTES_MAX */
        {"\xf0\x9f\x98\x80", 201, JWT_E_SUB},
        {"\\u00e9", 200, JWT_OK}, /* escaped in the JSON: counted after decoding */
    };
    struct jwt_claims c;

    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
        char *tok = sub_token(subs[i].unit, subs[i].n);
        enum jwt_error got = verify_at(tok, NOW, DAY_S, &c);
        CHECK(got == subs[i].want, "sub of %d x \"%s\": %s", subs[i].n, subs[i].unit,
              jwt_error_text(got));
        free(tok);
    }

    char *tok = mtg_token(JWT_MTG_MAX);
    CHECK(verify_at(tok, NOW, DAY_S, &c) == JWT_OK && c.n_mtg == JWT_MTG_MAX &&
              strcmp(c.mtg[99], "00000000-0000-4000-8000-000000000099") == 0,
          "100 meeting ids (%zu bytes): %s", strlen(tok),
          jwt_error_text(verify_at(tok, NOW, DAY_S, &c)));
    free(tok);
    tok = mtg_token(JWT_MTG_MAX + 1);
    CHECK(strlen(tok) <= JWT_TOKEN_MAX && verify_at(tok, NOW, DAY_S, &c) == JWT_E_MTG,
          "101 meeting ids: %s", jwt_error_text(verify_at(tok, NOW, DAY_S, &c)));
    free(tok);
}

/* A valid token padded with an ignored claim to size bytes, or the first longer one (base64url
 * never ends on 4k + 1 characters, so not every size is reachable by padding). */
static char *
token_of_size(size_t size)
{
    static char claims[JSON_MAX];
    char *tok = NULL;

    for (size_t pad = 0;; pad++) {
        snprintf(claims, sizeof claims, "%s,'pad':'%0*d'}", STD, (int)pad, 0);
        tok = sign(HDR, claims);
        if (strlen(tok) >= size)
            return tok;
        free(tok);
    }
}

static void
test_structure(void)
{
    static const struct {
        const char *token;
        enum jwt_error want;
    } raw[] = {
        {"", JWT_E_SEGMENTS},
        {"abc", JWT_E_SEGMENTS},
        {"a.b", JWT_E_SEGMENTS},
        {"a.b.c.d", JWT_E_SEGMENTS},
        {"..", JWT_E_HEADER},        /* three empty segments: an empty header is no JSON object */
        {"e30=.e30.", JWT_E_BASE64}, /* "{}" padded */
        {"e30+.e30.", JWT_E_BASE64}, /* the standard alphabet */
        {"e31.e30.", JWT_E_BASE64},  /* non-zero trailing bits */
        {"e30 .e30.", JWT_E_BASE64}, /* a space */
        {"eyJhbGciOiJIUzI1NiJ9.e30.", JWT_E_SIGNATURE}, /* no signature */
    };
    struct jwt_claims c;

    for (size_t i = 0; i < sizeof raw / sizeof raw[0]; i++) {
        enum jwt_error got = verify_at(raw[i].token, NOW, DAY_S, &c);
        CHECK(got == raw[i].want, "\"%s\": got %s, want %s", raw[i].token, jwt_error_text(got),
              jwt_error_text(raw[i].want));
    }

    /* Break a valid token at the byte level. */
    char *good = sign(HDR, STD "}");
    size_t len = strlen(good);
    char *bad = malloc(len + 2);

    memcpy(bad, good, len + 1);
    bad[len - 1] = bad[len - 1] == 'A' ? 'E' : 'A'; /* 'A','E' keep the 2 trailing bits 0 */
    CHECK(verify_at(bad, NOW, DAY_S, &c) == JWT_E_SIGNATURE, "changed signature accepted");
    memcpy(bad, good, len + 1);
    bad[len - 1] = bad[len - 1] == 'B' ? 'C' : 'B'; /* a non-zero trailing bit */
    CHECK(verify_at(bad, NOW, DAY_S, &c) == JWT_E_BASE64, "non-canonical signature accepted");
    memcpy(bad, good, len + 1);
    bad[len - 5] = '*';
    CHECK(verify_at(bad, NOW, DAY_S, &c) == JWT_E_BASE64, "'*' in the signature accepted");
    memcpy(bad, good, len + 1);
    bad[len] = 'A'; /* 44 characters */
    bad[len + 1] = '\0';
    CHECK(verify_at(bad, NOW, DAY_S, &c) == JWT_E_SIGNATURE, "44-character signature accepted");
    CHECK(jwt_verify(good, len - 1, KEY, strlen(KEY), &(struct jwt_policy){AUD, DAY_S, LEEWAY_S},
                     NOW, &c) == JWT_E_SIGNATURE,
          "the length argument is not honoured");
    free(bad);
    free(good);

    /* A payload that is not base64url, signed: refused after the signature matched. */
    char *tok = sign(HDR, STD "}");
    char *dot = strchr(tok, '.');
    dot[1] = '=';
    struct crypto_part part = {tok, strrchr(tok, '.') - tok};
    uint8_t mac[CRYPTO_SHA256_LEN];
    CHECK(crypto_hmac_sha256(KEY, strlen(KEY), &part, 1, mac) == 0, "HMAC");
    b64url_encode(mac, sizeof mac, strrchr(tok, '.') + 1);
    CHECK(verify_at(tok, NOW, DAY_S, &c) == JWT_E_BASE64, "signed bad payload: %s",
          jwt_error_text(verify_at(tok, NOW, DAY_S, &c)));
    free(tok);

    /* Under another key. */
    tok = sign_with(HDR, STD "}", KEY "x");
    CHECK(verify_at(tok, NOW, DAY_S, &c) == JWT_E_SIGNATURE, "other key accepted");
    free(tok);

    /* JWT_TOKEN_MAX bytes exactly, and one more. */
    tok = token_of_size(JWT_TOKEN_MAX);
    CHECK(strlen(tok) == JWT_TOKEN_MAX && verify_at(tok, NOW, DAY_S, &c) == JWT_OK,
          "token of %zu bytes: %s", strlen(tok), jwt_error_text(verify_at(tok, NOW, DAY_S, &c)));
    free(tok);
    tok = token_of_size(JWT_TOKEN_MAX);
    char *longer = realloc(tok, JWT_TOKEN_MAX + 2);
    CHECK(longer != NULL, "realloc");
    if (longer == NULL) {
        free(tok);
        return;
    }
    tok = longer;
    memcpy(tok + JWT_TOKEN_MAX, "A", 2); /* one byte more: refused before anything is parsed */
    CHECK(verify_at(tok, NOW, DAY_S, &c) == JWT_E_TOO_LONG, "token of %zu bytes: %s", strlen(tok),
          jwt_error_text(verify_at(tok, NOW, DAY_S, &c)));
    CHECK(jwt_peek_kid(tok, strlen(tok), (char[JWT_KID_MAX + 1]){0}) == JWT_E_TOO_LONG,
          "peek of a token of %zu bytes", strlen(tok));
    free(tok);
}

static void
test_peek(void)
{
    static const struct {
        const char *header;
        enum jwt_error want;
        const char *kid;
    } peeks[] = {
        {HDR, JWT_OK, "k1"},
        {"{'kid':'tk_A-z_09','alg':'HS256'}", JWT_OK, "tk_A-z_09"},
        {"{'alg':'HS256','kid':'"
         "0123456789012345678901234567890123456789012345678901234567890123'}",
         JWT_OK, "0123456789012345678901234567890123456789012345678901234567890123"},
        {"{'alg':'HS256','kid':'"
         "01234567890123456789012345678901234567890123456789012345678901234'}",
         JWT_E_KID, NULL}, /* 65 */
        {"{'alg':'HS256'}", JWT_E_KID, NULL},
        {"{'alg':'HS256','kid':''}", JWT_E_KID, NULL},
        {"{'alg':'HS256','kid':'a.b'}", JWT_E_KID, NULL},
        {"{'alg':'HS256','kid':'../etc'}", JWT_E_KID, NULL},
        {"{'alg':'HS256','kid':'k 1'}", JWT_E_KID, NULL},
        {"{'alg':'HS256','kid':7}", JWT_E_KID, NULL},
        {"{'alg':'none','kid':'k1'}", JWT_E_ALG, NULL},
        {"{'alg':'HS256','kid':'k1','crit':['b64']}", JWT_E_CRIT, NULL},
        {"{'alg':'HS256','kid':'k1','kid':'k2'}", JWT_E_DUPLICATE, NULL},
    };
    char kid[JWT_KID_MAX + 1];

    for (size_t i = 0; i < sizeof peeks / sizeof peeks[0]; i++) {
        /* The claims need not even be JSON: peek reads the header only. */
        char *tok = sign(peeks[i].header, "not json");
        enum jwt_error got = jwt_peek_kid(tok, strlen(tok), kid);
        CHECK(got == peeks[i].want, "peek %s: got %s", peeks[i].header, jwt_error_text(got));
        CHECK(got != JWT_OK || peeks[i].kid == NULL || strcmp(kid, peeks[i].kid) == 0,
              "peek %s: kid %s", peeks[i].header, kid);
        free(tok);
    }
    CHECK(jwt_peek_kid("a.b", 3, kid) == JWT_E_SEGMENTS, "peek of two segments");
}

static void
test_policy(void)
{
    static const struct {
        struct jwt_policy p;
        int64_t now;
    } bad[] = {
        {{NULL, DAY_S, LEEWAY_S}, NOW},
        {{AUD, 0, LEEWAY_S}, NOW},
        {{AUD, JWT_LIFETIME_MAX + 1, LEEWAY_S}, NOW},
        {{AUD, DAY_S, -1}, NOW},
        {{AUD, DAY_S, JWT_LEEWAY_MAX + 1}, NOW},
        {{AUD, DAY_S, LEEWAY_S}, -1},
        {{AUD, DAY_S, LEEWAY_S}, JWT_TIME_MAX + 1},
    };
    struct jwt_claims c;
    char *tok = sign(HDR, STD "}");

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(jwt_verify(tok, strlen(tok), KEY, strlen(KEY), &bad[i].p, bad[i].now, &c) ==
                  JWT_E_INTERNAL,
              "policy %zu accepted", i);
    CHECK(jwt_verify(tok, strlen(tok), KEY, 0, &(struct jwt_policy){AUD, DAY_S, LEEWAY_S}, NOW,
                     &c) == JWT_E_INTERNAL,
          "empty key accepted");
    CHECK(jwt_verify(tok, strlen(tok), KEY, strlen(KEY), NULL, NOW, &c) == JWT_E_INTERNAL,
          "no policy accepted");
    free(tok);
}

static void
fill(struct jwt_claims *c, const char *sub, unsigned scopes, size_t n_mtg)
{
    memset(c, 0, sizeof *c);
    snprintf(c->sub, sizeof c->sub, "%s", sub);
    c->scopes = scopes;
    c->iat = NOW;
    c->exp = NOW + URL_LIFETIME_S;
    c->n_mtg = n_mtg;
    for (size_t i = 0; i < n_mtg && i < JWT_MTG_MAX; i++)
        snprintf(c->mtg[i], sizeof c->mtg[i], "00000000-0000-4000-8000-%012zu", i);
}

static void
test_mint(void)
{
    struct jwt_claims in, out;
    uint8_t header[256];
    size_t n;

    fill(&in, "participant \"7\" \\ \xc3\xa9", JWT_SCOPES_ALL, 3);
    char *tok = jwt_mint(KEY, strlen(KEY), "k1", AUD, &in);
    CHECK(tok != NULL, "mint failed");
    if (tok == NULL)
        return;
    CHECK(b64url_decode(tok, strchr(tok, '.') - tok, header, sizeof header - 1, &n) == 0 &&
              (header[n] = '\0', strcmp((char *)header, "{\"alg\":\"HS256\",\"typ\":\"JWT\","
                                                        "\"kid\":\"k1\"}") == 0),
          "minted header: %s", header);
    CHECK(verify_at(tok, NOW, URL_LIFETIME_S, &out) == JWT_OK, "minted token refused: %s",
          jwt_error_text(verify_at(tok, NOW, URL_LIFETIME_S, &out)));
    CHECK(strcmp(out.sub, in.sub) == 0 && out.scopes == in.scopes && out.iat == in.iat &&
              out.exp == in.exp && out.n_mtg == 3 && strcmp(out.mtg[2], in.mtg[2]) == 0,
          "round trip changed the claims");
    free(tok);

    /* No scope, no mtg: "scope":"" and no mtg member. */
    fill(&in, "u1", 0, 0);
    tok = jwt_mint(KEY, strlen(KEY), "k1", AUD, &in);
    CHECK(tok != NULL && verify_at(tok, NOW, DAY_S, &out) == JWT_OK && out.scopes == 0 &&
              out.n_mtg == 0,
          "minimal mint");
    free(tok);

    /* The largest token jwt_mint can make still verifies. */
    char kid[JWT_KID_MAX + 1], aud[JWT_AUDIENCE_MAX + 1];
    memset(kid, 'k', JWT_KID_MAX);
    kid[JWT_KID_MAX] = '\0';
    memset(aud, '"', JWT_AUDIENCE_MAX); /* each escaped: twice the bytes */
    aud[JWT_AUDIENCE_MAX] = '\0';
    fill(&in, "", JWT_SCOPES_ALL, JWT_MTG_MAX);
    for (int i = 0; i < JWT_SUB_MAX; i++)
        memcpy(in.sub + 4 * i, "\xf0\x9f\x98\x80", 4);
    in.sub[JWT_SUB_BYTES_MAX] = '\0';
    tok = jwt_mint(KEY, strlen(KEY), kid, aud, &in);
    struct jwt_policy big = {aud, DAY_S, LEEWAY_S};
    CHECK(tok != NULL && jwt_verify(tok, strlen(tok), KEY, strlen(KEY), &big, NOW, &out) == JWT_OK,
          "largest mint (%zu bytes) does not verify", tok ? strlen(tok) : 0);
    free(tok);

    /* Inputs jwt_verify would refuse are not minted. */
    fill(&in, "u1", 0, 0);
    CHECK(jwt_mint(KEY, strlen(KEY), "k.1", AUD, &in) == NULL, "bad kid minted");
    CHECK(jwt_mint(KEY, strlen(KEY), "k1", "", &in) == NULL, "empty audience minted");
    CHECK(jwt_mint(KEY, 0, "k1", AUD, &in) == NULL, "empty key minted");
    in.scopes = 1u << 4;
    CHECK(jwt_mint(KEY, strlen(KEY), "k1", AUD, &in) == NULL, "unknown scope bit minted");
    fill(&in, "u1", 0, 0);
    in.exp = in.iat;
    CHECK(jwt_mint(KEY, strlen(KEY), "k1", AUD, &in) == NULL, "exp == iat minted");
    fill(&in, "u\n1", 0, 0);
    CHECK(jwt_mint(KEY, strlen(KEY), "k1", AUD, &in) == NULL, "control character in sub minted");
    fill(&in, "u\xff", 0, 0);
    CHECK(jwt_mint(KEY, strlen(KEY), "k1", AUD, &in) == NULL, "sub not UTF-8 minted");
    fill(&in, "u1", 0, JWT_MTG_MAX + 1);
    CHECK(jwt_mint(KEY, strlen(KEY), "k1", AUD, &in) == NULL, "101 meeting ids minted");
    fill(&in, "u1", 0, 1);
    in.mtg[0][0] = 'X';
    CHECK(jwt_mint(KEY, strlen(KEY), "k1", AUD, &in) == NULL, "bad meeting id minted");
}

static void
test_scopes_text(void)
{
    char text[JWT_SCOPE_TEXT_MAX];
    unsigned bits = 0;

    CHECK(jwt_scopes_format(JWT_SCOPES_ALL, text) == 0 &&
              strcmp(text, "meetings:read meetings:write notifications push") == 0 &&
              strlen(text) + 1 == JWT_SCOPE_TEXT_MAX,
          "all scopes: %s", text);
    CHECK(jwt_scopes_parse(text, strlen(text), &bits) == 0 && bits == JWT_SCOPES_ALL, "parse all");
    CHECK(jwt_scopes_parse("push", 3, &bits) == -1, "the length argument is not honoured");
    CHECK(jwt_scopes_parse("push push", 9, &bits) == 0 && bits == JWT_SCOPE_PUSH, "repeated name");
}

static void
test_error_texts(void)
{
    for (int e = JWT_OK; e <= JWT_E_INTERNAL; e++) {
        const char *t = jwt_error_text((enum jwt_error)e);
        CHECK(t != NULL && t[0] != '\0', "error %d has no text", e);
        for (int f = JWT_OK; f < e; f++)
            CHECK(strcmp(t, jwt_error_text((enum jwt_error)f)) != 0, "errors %d and %d alike", f,
                  e);
    }
}

int
main(void)
{
    test_rfc7515_a1();
    test_table();
    test_claims_filled();
    test_limits();
    test_structure();
    test_peek();
    test_policy();
    test_mint();
    test_scopes_text();
    test_error_texts();
    return check_summary("test_jwt");
}
