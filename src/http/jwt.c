/* jwt.c -- the browser tokens of jwt.h: split the compact form, decode the segments with b64.c,
 * parse them with jansson (duplicates refused), check the header, MAC with crypto.c, then the
 * claims one by one. The claims are parsed only after the signature matched: before that the
 * only attacker-controlled JSON read is the small header. */
#include "jwt.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "crypto.h"

#define SIG_TEXT_LEN B64URL_ENCODED_LEN(CRYPTO_SHA256_LEN) /* 43 */
#define SEGMENT_BYTES_MAX B64_DECODED_MAX(JWT_TOKEN_MAX)

/* The longest JSON jwt_mint can write, to prove at compile time that its tokens fit in
 * JWT_TOKEN_MAX. Strings may double in size when every byte needs a backslash; sub cannot, as
 * 4-byte characters already take 4 bytes each; a NumericDate has at most 12 digits. */
#define MINT_HEADER_JSON_MAX                                                                       \
    (sizeof "{\"alg\":\"HS256\",\"typ\":\"JWT\",\"kid\":\"\"}" - 1 + JWT_KID_MAX)
#define MINT_MTG_JSON_MAX (sizeof ",\"mtg\":[]" - 1 + JWT_MTG_MAX * (MEETING_ID_LEN + 3))
#define MINT_CLAIMS_JSON_MAX                                                                       \
    (sizeof "{\"sub\":\"\",\"aud\":\"\",\"iat\":,\"exp\":,\"scope\":\"\"}" - 1 +                   \
     JWT_SUB_BYTES_MAX + 2 * JWT_AUDIENCE_MAX + 2 * 12 + JWT_SCOPE_TEXT_MAX + MINT_MTG_JSON_MAX)
#define MINT_TOKEN_MAX                                                                             \
    (B64URL_ENCODED_LEN(MINT_HEADER_JSON_MAX) + 1 + B64URL_ENCODED_LEN(MINT_CLAIMS_JSON_MAX) + 1 + \
     SIG_TEXT_LEN)
_Static_assert(MINT_TOKEN_MAX <= JWT_TOKEN_MAX, "a token jwt_mint makes must verify");
_Static_assert(JWT_TIME_MAX <= INT64_C(999999999999), "NumericDates have at most 12 digits");

static const char *const scope_names[] = {"meetings:read", "meetings:write", "notifications",
                                          "push"};
#define SCOPE_COUNT (sizeof scope_names / sizeof scope_names[0])
_Static_assert(JWT_SCOPES_ALL == (1u << SCOPE_COUNT) - 1, "one bit per scope name");

static const char *const error_texts[] = {
/* An X-macro initializer: text is a string literal, never an expression to parenthesize. */
#define X(name, text) [name] = text, // NOLINT(bugprone-macro-parentheses)
    JWT_ERRORS(X)
#undef X
};

const char *
jwt_error_text(enum jwt_error e)
{
    if ((size_t)e >= sizeof error_texts / sizeof error_texts[0])
        return "unknown error";
    return error_texts[e];
}

/* ---- the compact form ------------------------------------------------------------------- */

struct segments {
    const char *p[3];
    size_t len[3];
};

static enum jwt_error
split(const char *token, size_t len, struct segments *s)
{
    size_t n = 0, start = 0;

    if (len > JWT_TOKEN_MAX)
        return JWT_E_TOO_LONG;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && token[i] != '.')
            continue;
        if (n == 3)
            return JWT_E_SEGMENTS;
        s->p[n] = token + start;
        s->len[n++] = i - start;
        start = i + 1;
    }
    return n == 3 ? JWT_OK : JWT_E_SEGMENTS;
}

/* Decodes one segment and parses it as a JSON object; *out is a new reference on JWT_OK. */
static enum jwt_error
load_object(const char *seg, size_t len, enum jwt_error not_object, json_t **out)
{
    uint8_t buf[SEGMENT_BYTES_MAX];
    size_t n;
    json_error_t je;
    json_t *v;

    if (b64url_decode(seg, len, buf, sizeof buf, &n) != 0)
        return JWT_E_BASE64;
    /* Without JSON_DECODE_ANY only an object or an array parses; without JSON_ALLOW_NUL a
     * "\u0000" is refused, so every string below is a NUL-free C string. */
    v = json_loadb((const char *)buf, n, JSON_REJECT_DUPLICATES, &je);
    if (v == NULL)
        return json_error_code(&je) == json_error_duplicate_key ? JWT_E_DUPLICATE : not_object;
    if (!json_is_object(v)) {
        json_decref(v);
        return not_object;
    }
    *out = v;
    return JWT_OK;
}

/* ---- the header ------------------------------------------------------------------------- */

static bool
kid_ok(const char *s)
{
    size_t n = 0;

    for (; s[n] != '\0'; n++) {
        char c = s[n];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return false;
    }
    return n >= 1 && n <= JWT_KID_MAX;
}

/* "JWT" in any case, without strcasecmp: its answer depends on the locale. */
static bool
typ_ok(const json_t *typ)
{
    const char *s = json_string_value(typ);

    return s != NULL && strlen(s) == 3 && (s[0] | 0x20) == 'j' && (s[1] | 0x20) == 'w' &&
           (s[2] | 0x20) == 't';
}

/* What the header decides for jwt_verify: the algorithm and the extensions. */
static enum jwt_error
check_header(const json_t *h)
{
    const char *alg = json_string_value(json_object_get(h, "alg"));
    const json_t *typ = json_object_get(h, "typ");

    if (alg == NULL || strcmp(alg, "HS256") != 0)
        return JWT_E_ALG;
    /* RFC 7515 4.1.11: a recipient must refuse extensions it does not understand; we
     * understand none. */
    if (json_object_get(h, "crit") != NULL)
        return JWT_E_CRIT;
    if (typ != NULL && !typ_ok(typ))
        return JWT_E_TYP;
    return JWT_OK;
}

/* Splits the token and checks its header; copies kid out when kid is not NULL (jwt_verify does
 * not need it: the key it was given is what authenticates the token, however it was found). */
static enum jwt_error
read_header(const char *token, size_t len, struct segments *s, char *kid)
{
    json_t *h = NULL;
    enum jwt_error e = split(token, len, s);

    if (e == JWT_OK)
        e = load_object(s->p[0], s->len[0], JWT_E_HEADER, &h);
    if (e == JWT_OK)
        e = check_header(h);
    if (e == JWT_OK && kid != NULL) {
        const char *k = json_string_value(json_object_get(h, "kid"));
        if (k == NULL || !kid_ok(k))
            e = JWT_E_KID;
        else
            memcpy(kid, k, strlen(k) + 1);
    }
    json_decref(h);
    return e;
}

enum jwt_error
jwt_peek_kid(const char *token, size_t len, char kid[JWT_KID_MAX + 1])
{
    struct segments s;

    return read_header(token, len, &s, kid);
}

/* ---- the signature ---------------------------------------------------------------------- */

static enum jwt_error
check_signature(const char *token, const struct segments *s, const void *key, size_t keylen)
{
    uint8_t got[CRYPTO_SHA256_LEN], want[CRYPTO_SHA256_LEN];
    size_t n;
    /* Over the bytes as received: re-encoding the parsed header could differ from them. */
    struct crypto_part signed_part = {token, s->len[0] + 1 + s->len[1]};

    if (s->len[2] != SIG_TEXT_LEN)
        return JWT_E_SIGNATURE;
    if (b64url_decode(s->p[2], s->len[2], got, sizeof got, &n) != 0)
        return JWT_E_BASE64;
    if (crypto_hmac_sha256(key, keylen, &signed_part, 1, want) != 0)
        return JWT_E_INTERNAL;
    return crypto_memeq(got, want, sizeof want) ? JWT_OK : JWT_E_SIGNATURE;
}

/* ---- the claims ------------------------------------------------------------------------- */

/* A NumericDate (RFC 7519 section 2): a JSON number of seconds; fractions are dropped. */
static bool
numeric_date(const json_t *v, int64_t *out)
{
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        if (i < 0 || i > JWT_TIME_MAX)
            return false;
        *out = (int64_t)i;
        return true;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (!(d >= 0 && d <= (double)JWT_TIME_MAX))
            return false;
        *out = (int64_t)d;
        return true;
    }
    return false;
}

static enum jwt_error
check_aud(const json_t *aud, const char *audience)
{
    size_t i;
    const json_t *v;

    if (json_is_string(aud))
        return strcmp(json_string_value(aud), audience) == 0 ? JWT_OK : JWT_E_AUD;
    if (!json_is_array(aud))
        return JWT_E_AUD;
    json_array_foreach(aud, i, v)
    {
        if (!json_is_string(v))
            return JWT_E_AUD;
    }
    json_array_foreach(aud, i, v)
    {
        if (strcmp(json_string_value(v), audience) == 0)
            return JWT_OK;
    }
    return JWT_E_AUD;
}

static enum jwt_error
check_times(const json_t *c, const struct jwt_policy *p, int64_t now_s, struct jwt_claims *out)
{
    const json_t *nbf_v = json_object_get(c, "nbf");
    int64_t nbf;

    if (!numeric_date(json_object_get(c, "exp"), &out->exp))
        return JWT_E_EXP;
    if (now_s >= out->exp + p->leeway_s)
        return JWT_E_EXPIRED;
    if (!numeric_date(json_object_get(c, "iat"), &out->iat))
        return JWT_E_IAT;
    if (out->iat > now_s + p->leeway_s)
        return JWT_E_IAT_FUTURE;
    if (out->exp - out->iat < 1 || out->exp - out->iat > p->max_lifetime_s)
        return JWT_E_LIFETIME;
    if (nbf_v != NULL && !numeric_date(nbf_v, &nbf))
        return JWT_E_NBF;
    if (nbf_v != NULL && nbf > now_s + p->leeway_s)
        return JWT_E_NBF_FUTURE;
    return JWT_OK;
}

/* 1..JWT_SUB_MAX code points without C0 controls or DEL: the rule codec_meeting.c applies to
 * participant ids, which sub must be able to equal, and no more. jansson checks that it is valid
 * UTF-8 (json_loadb when verifying, json_pack when minting). */
static bool
sub_ok(const char *s)
{
    size_t cp = 0, n = 0;

    for (; s[n] != '\0'; n++) {
        unsigned char ch = (unsigned char)s[n];
        if (ch < 0x20 || ch == 0x7f)
            return false;
        cp += (ch & 0xc0) != 0x80;
    }
    return cp >= 1 && cp <= JWT_SUB_MAX && n <= JWT_SUB_BYTES_MAX;
}

int
jwt_scopes_parse(const char *text, size_t len, unsigned *scopes)
{
    unsigned bits = 0;
    size_t start = 0;

    while (len > 0) {
        size_t end = start, k = 0;

        while (end < len && text[end] != ' ')
            end++;
        while (k < SCOPE_COUNT && !(strlen(scope_names[k]) == end - start &&
                                    memcmp(scope_names[k], text + start, end - start) == 0))
            k++;
        if (k == SCOPE_COUNT)
            return -1; /* unknown, or empty between two spaces */
        bits |= 1u << k;
        if (end == len)
            break;
        start = end + 1;
    }
    *scopes = bits;
    return 0;
}

int
jwt_scopes_format(unsigned scopes, char out[JWT_SCOPE_TEXT_MAX])
{
    size_t o = 0;

    if ((scopes & ~JWT_SCOPES_ALL) != 0)
        return -1;
    for (size_t k = 0; k < SCOPE_COUNT; k++) {
        size_t n = strlen(scope_names[k]);
        if ((scopes & (1u << k)) == 0)
            continue;
        if (o > 0)
            out[o++] = ' ';
        memcpy(out + o, scope_names[k], n);
        o += n;
    }
    out[o] = '\0';
    return 0;
}

static enum jwt_error
check_mtg(const json_t *mtg, struct jwt_claims *out)
{
    size_t i;
    const json_t *v;

    out->n_mtg = 0;
    if (mtg == NULL)
        return JWT_OK;
    if (!json_is_array(mtg) || json_array_size(mtg) == 0 || json_array_size(mtg) > JWT_MTG_MAX)
        return JWT_E_MTG;
    json_array_foreach(mtg, i, v)
    {
        if (!meeting_id_valid(json_string_value(v)))
            return JWT_E_MTG;
        memcpy(out->mtg[i], json_string_value(v), MEETING_ID_LEN + 1);
    }
    out->n_mtg = json_array_size(mtg);
    return JWT_OK;
}

static enum jwt_error
check_claims(const json_t *c, const struct jwt_policy *p, int64_t now_s, struct jwt_claims *out)
{
    const json_t *scope = json_object_get(c, "scope");
    const char *sub = json_string_value(json_object_get(c, "sub"));
    enum jwt_error e = check_aud(json_object_get(c, "aud"), p->audience);

    if (e == JWT_OK)
        e = check_times(c, p, now_s, out);
    if (e != JWT_OK)
        return e;
    if (sub == NULL || !sub_ok(sub))
        return JWT_E_SUB;
    memcpy(out->sub, sub, strlen(sub) + 1);
    out->scopes = 0;
    if (scope != NULL &&
        (!json_is_string(scope) ||
         jwt_scopes_parse(json_string_value(scope), json_string_length(scope), &out->scopes) != 0))
        return JWT_E_SCOPE;
    return check_mtg(json_object_get(c, "mtg"), out);
}

static bool
policy_ok(const struct jwt_policy *p, int64_t now_s)
{
    return p != NULL && p->audience != NULL && p->leeway_s >= 0 && p->leeway_s <= JWT_LEEWAY_MAX &&
           p->max_lifetime_s >= 1 && p->max_lifetime_s <= JWT_LIFETIME_MAX && now_s >= 0 &&
           now_s <= JWT_TIME_MAX;
}

enum jwt_error
jwt_verify(const char *token, size_t len, const void *key, size_t keylen,
           const struct jwt_policy *policy, int64_t now_s, struct jwt_claims *out)
{
    struct segments s;
    json_t *claims = NULL;
    enum jwt_error e;

    if (!policy_ok(policy, now_s))
        return JWT_E_INTERNAL;
    e = read_header(token, len, &s, NULL);
    if (e == JWT_OK)
        e = check_signature(token, &s, key, keylen);
    if (e == JWT_OK)
        e = load_object(s.p[1], s.len[1], JWT_E_CLAIMS, &claims);
    if (e == JWT_OK)
        e = check_claims(claims, policy, now_s, out);
    json_decref(claims);
    return e;
}

/* ---- minting ---------------------------------------------------------------------------- */

static bool
mint_inputs_ok(const char *kid, const char *audience, const struct jwt_claims *c)
{
    size_t aud_len = audience != NULL ? strlen(audience) : 0;

    if (kid == NULL || !kid_ok(kid) || aud_len < 1 || aud_len > JWT_AUDIENCE_MAX ||
        !sub_ok(c->sub) || c->iat < 0 || c->exp > JWT_TIME_MAX || c->exp <= c->iat ||
        c->n_mtg > JWT_MTG_MAX)
        return false;
    for (size_t i = 0; i < c->n_mtg; i++) {
        if (!meeting_id_valid(c->mtg[i]))
            return false;
    }
    return true;
}

/* The claims object of c; NULL when jansson refuses a string (sub or audience not UTF-8). */
static json_t *
claims_object(const char *audience, const struct jwt_claims *c, const char *scope)
{
    json_t *mtg = NULL,
           *o = json_pack("{s:s, s:s, s:I, s:I, s:s}", "sub", c->sub, "aud", audience, "iat",
                          (json_int_t)c->iat, "exp", (json_int_t)c->exp, "scope", scope);

    if (o == NULL || c->n_mtg == 0)
        return o;
    mtg = json_array();
    for (size_t i = 0; mtg != NULL && i < c->n_mtg; i++) {
        if (json_array_append_new(mtg, json_string(c->mtg[i])) != 0) {
            json_decref(mtg);
            mtg = NULL;
        }
    }
    if (mtg == NULL || json_object_set_new(o, "mtg", mtg) != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* Appends the base64url of text to out at *o. */
static void
append_b64url(char *out, size_t *o, const char *text)
{
    *o += b64url_encode(text, strlen(text), out + *o);
}

char *
jwt_mint(const void *key, size_t keylen, const char *kid, const char *audience,
         const struct jwt_claims *claims)
{
    char scope[JWT_SCOPE_TEXT_MAX];
    uint8_t mac[CRYPTO_SHA256_LEN];
    json_t *h = NULL, *c = NULL;
    char *hs = NULL, *cs = NULL, *tok = NULL, *ret = NULL;
    struct crypto_part signed_part;
    size_t len, o = 0;

    if (!mint_inputs_ok(kid, audience, claims) || jwt_scopes_format(claims->scopes, scope) != 0)
        return NULL;
    h = json_pack("{s:s, s:s, s:s}", "alg", "HS256", "typ", "JWT", "kid", kid);
    c = claims_object(audience, claims, scope);
    hs = h != NULL ? json_dumps(h, JSON_COMPACT) : NULL;
    cs = c != NULL ? json_dumps(c, JSON_COMPACT) : NULL;
    if (hs == NULL || cs == NULL)
        goto done;
    len = B64URL_ENCODED_LEN(strlen(hs)) + 1 + B64URL_ENCODED_LEN(strlen(cs)) + 1 + SIG_TEXT_LEN;
    if (len > JWT_TOKEN_MAX || (tok = malloc(len + 1)) == NULL)
        goto done;
    append_b64url(tok, &o, hs);
    tok[o++] = '.';
    append_b64url(tok, &o, cs);
    signed_part = (struct crypto_part){tok, o};
    if (crypto_hmac_sha256(key, keylen, &signed_part, 1, mac) != 0)
        goto done;
    tok[o++] = '.';
    b64url_encode(mac, sizeof mac, tok + o);
    ret = tok;
    tok = NULL;
done:
    json_decref(h);
    json_decref(c);
    free(hs);
    free(cs);
    free(tok);
    return ret;
}
