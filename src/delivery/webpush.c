/* webpush.c -- the messages of webpush.h. Key texts go through b64.c; every primitive is
 * crypto.h (SHA-256, HKDF, AES-128-GCM, random, wipe) or crypto_ec.h (P-256, ECDH, ES256); the
 * JWT claims are written with jansson. Derived secrets live on the stack and are wiped before
 * each function returns. */
#include "webpush.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "crypto.h"
#include "hex.h"
#include "panic.h"

_Static_assert(WEBPUSH_P256DH_LEN == CRYPTO_P256_PUBLIC_LEN, "a p256dh is a P-256 point");
_Static_assert(WEBPUSH_PLAINTEXT_MAX == 3993, "RFC 8291 section 4: at most 3993 octets");
_Static_assert(WEBPUSH_BODY_LEN(WEBPUSH_PLAINTEXT_MAX) == WEBPUSH_BODY_MAX, "one bound");
/* One record holds the whole message: a record is everything after the header, at most rs. */
_Static_assert(WEBPUSH_BODY_MAX - WEBPUSH_HEADER_LEN <= WEBPUSH_RECORD_SIZE, "one record");
_Static_assert(WEBPUSH_BODY_MAX <= CRYPTO_GCM_TEXT_MAX, "a record fits one AES-GCM call");

#define CEK_LEN WEBPUSH_CEK_LEN
#define NONCE_LEN WEBPUSH_NONCE_LEN
_Static_assert(CEK_LEN == CRYPTO_AES128_KEY_LEN && NONCE_LEN == CRYPTO_GCM_NONCE_LEN, "AES-GCM");
_Static_assert(WEBPUSH_TAG_LEN == CRYPTO_GCM_TAG_LEN, "the record's tag is GCM's");
#define KEY_TEXT_BYTES_MAX B64_DECODED_MAX(WEBPUSH_KEY_TEXT_MAX)
#define TOPIC_DIGEST_LEN 24 /* bytes of SHA-256 kept: 24 bytes are 32 base64url characters */
_Static_assert(B64URL_ENCODED_LEN(TOPIC_DIGEST_LEN) == WEBPUSH_TOPIC_LEN, "topic length");

/* The JWT: a fixed header, and claims whose longest JSON is known because webpush_vapid_jwt lets
 * no character that JSON escapes into the audience or the subject, and exp has 13 digits. */
#define JWT_HEADER "{\"typ\":\"JWT\",\"alg\":\"ES256\"}"
#define JWT_CLAIMS_MAX                                                                             \
    (sizeof "{\"aud\":\"\",\"exp\":,\"sub\":\"\"}" - 1 + WEBPUSH_ORIGIN_MAX + 13 +                 \
     WEBPUSH_SUBJECT_MAX)
#define JWT_LEN_MAX                                                                                \
    (B64URL_ENCODED_LEN(sizeof JWT_HEADER - 1) + 1 + B64URL_ENCODED_LEN(JWT_CLAIMS_MAX) + 1 +      \
     B64URL_ENCODED_LEN(CRYPTO_ES256_SIG_LEN))
_Static_assert(JWT_LEN_MAX <= WEBPUSH_JWT_MAX, "every token webpush_vapid_jwt makes fits");
_Static_assert(WEBPUSH_NOW_MAX + WEBPUSH_JWT_LIFETIME_MAX < INT64_C(9999999999999), "13 digits");

static const char *const error_texts[] = {
/* An X-macro initializer: text is a string literal, never an expression to parenthesize. */
#define X(name, text) [name] = text, // NOLINT(bugprone-macro-parentheses)
    WEBPUSH_ERRORS(X)
#undef X
};

const char *
webpush_error_text(enum webpush_error e)
{
    if ((size_t)e >= sizeof error_texts / sizeof error_texts[0])
        return "unknown error";
    return error_texts[e];
}

/* ---- subscriptions ------------------------------------------------------------------------- */

bool
webpush_p256dh_valid(const uint8_t *p, size_t len)
{
    return crypto_ec_public_valid(p, len);
}

/* Decodes one key text into out (want bytes). Padding is taken only as RFC 4648 writes it: to a
 * whole quantum, one '=' after 3 characters, two after 2. Returns 0, -1 for a text that is not
 * base64url, or -2 for one over WEBPUSH_KEY_TEXT_MAX or that decodes to another length. */
static int
decode_key(const char *text, size_t len, uint8_t *out, size_t want)
{
    uint8_t buf[KEY_TEXT_BYTES_MAX];
    size_t n = len, pad = 0, got = 0;

    if (len > WEBPUSH_KEY_TEXT_MAX)
        return -2;
    while (pad < 2 && n > 0 && text[n - 1] == '=') {
        n--;
        pad++;
    }
    if (pad > 0 && (len % 4 != 0 || n % 4 != 4 - pad))
        return -1;
    if (b64url_decode(text, n, buf, sizeof buf, &got) != 0)
        return -1;
    if (got != want)
        return -2;
    memcpy(out, buf, want);
    return 0;
}

enum webpush_error
webpush_subscriber_decode(const char *p256dh, size_t p256dh_len, const char *auth, size_t auth_len,
                          struct webpush_subscriber *out)
{
    switch (decode_key(p256dh, p256dh_len, out->p256dh, WEBPUSH_P256DH_LEN)) {
    case -1:
        return WEBPUSH_E_P256DH_ENCODING;
    case -2:
        return WEBPUSH_E_P256DH_LENGTH;
    }
    if (!webpush_p256dh_valid(out->p256dh, WEBPUSH_P256DH_LEN))
        return WEBPUSH_E_P256DH_POINT;
    switch (decode_key(auth, auth_len, out->auth, WEBPUSH_AUTH_LEN)) {
    case -1:
        return WEBPUSH_E_AUTH_ENCODING;
    case -2:
        return WEBPUSH_E_AUTH_LENGTH;
    }
    return WEBPUSH_OK;
}

/* ---- encryption ---------------------------------------------------------------------------- */

int
webpush_derive_keys(const uint8_t ecdh_secret[CRYPTO_P256_SECRET_LEN],
                    const uint8_t auth[WEBPUSH_AUTH_LEN],
                    const uint8_t ua_public[WEBPUSH_P256DH_LEN],
                    const uint8_t as_public[WEBPUSH_P256DH_LEN],
                    const uint8_t salt[WEBPUSH_SALT_LEN], uint8_t cek[WEBPUSH_CEK_LEN],
                    uint8_t nonce[WEBPUSH_NONCE_LEN])
{
    static const char info_label[] = "WebPush: info"; /* and its NUL */
    static const char cek_info[] = "Content-Encoding: aes128gcm";
    static const char nonce_info[] = "Content-Encoding: nonce";
    uint8_t key_info[sizeof info_label + 2 * WEBPUSH_P256DH_LEN];
    uint8_t prk_key[CRYPTO_SHA256_LEN], ikm[CRYPTO_SHA256_LEN], prk[CRYPTO_SHA256_LEN];
    int ok;

    /* RFC 8291 3.4: the auth secret and both public keys go into the IKM of RFC 8188's HKDF. */
    memcpy(key_info, info_label, sizeof info_label);
    memcpy(key_info + sizeof info_label, ua_public, WEBPUSH_P256DH_LEN);
    memcpy(key_info + sizeof info_label + WEBPUSH_P256DH_LEN, as_public, WEBPUSH_P256DH_LEN);
    ok = crypto_hkdf_extract(auth, WEBPUSH_AUTH_LEN, ecdh_secret, CRYPTO_P256_SECRET_LEN,
                             prk_key) == 0 &&
         crypto_hkdf_expand(prk_key, key_info, sizeof key_info, ikm, sizeof ikm) == 0 &&
         crypto_hkdf_extract(salt, WEBPUSH_SALT_LEN, ikm, sizeof ikm, prk) == 0 &&
         crypto_hkdf_expand(prk, cek_info, sizeof cek_info, cek, CEK_LEN) == 0 &&
         crypto_hkdf_expand(prk, nonce_info, sizeof nonce_info, nonce, NONCE_LEN) == 0;
    crypto_wipe(prk_key, sizeof prk_key);
    crypto_wipe(ikm, sizeof ikm);
    crypto_wipe(prk, sizeof prk);
    if (!ok) {
        crypto_wipe(cek, CEK_LEN);
        crypto_wipe(nonce, NONCE_LEN);
    }
    return ok ? 0 : -1;
}

/* Writes the 86-byte header: salt, rs (big-endian), idlen, the sender's public key as keyid. */
static void
write_header(uint8_t *body, const uint8_t salt[WEBPUSH_SALT_LEN], const uint8_t *as_public)
{
    memcpy(body, salt, WEBPUSH_SALT_LEN);
    body[16] = (uint8_t)(WEBPUSH_RECORD_SIZE >> 24);
    body[17] = (uint8_t)(WEBPUSH_RECORD_SIZE >> 16);
    body[18] = (uint8_t)(WEBPUSH_RECORD_SIZE >> 8);
    body[19] = (uint8_t)WEBPUSH_RECORD_SIZE;
    body[20] = WEBPUSH_P256DH_LEN;
    memcpy(body + 21, as_public, WEBPUSH_P256DH_LEN);
}

static enum webpush_error
encrypt_from(const struct webpush_subscriber *to, const uint8_t salt[WEBPUSH_SALT_LEN],
             const struct crypto_ec_key *sender, const void *plaintext, size_t len, uint8_t *body,
             size_t *body_len)
{
    uint8_t secret[CRYPTO_P256_SECRET_LEN], cek[CEK_LEN], nonce[NONCE_LEN];
    uint8_t *record = body + WEBPUSH_HEADER_LEN;
    enum webpush_error e = WEBPUSH_E_INTERNAL;

    if (crypto_ec_ecdh(sender, to->p256dh, secret) != 0) {
        /* ECDH refuses a bad point; tell that apart from OpenSSL failing. */
        return webpush_p256dh_valid(to->p256dh, WEBPUSH_P256DH_LEN) ? WEBPUSH_E_INTERNAL
                                                                    : WEBPUSH_E_P256DH_POINT;
    }
    if (webpush_derive_keys(secret, to->auth, to->p256dh, crypto_ec_key_public(sender), salt, cek,
                            nonce) != 0)
        goto done;
    write_header(body, salt, crypto_ec_key_public(sender));
    /* One record, the last: the plaintext and the 0x02 delimiter, encrypted in place, the tag
     * after it. Its nonce is NONCE xor the record's sequence number, 0. */
    if (len > 0)
        memcpy(record, plaintext, len);
    record[len] = 0x02;
    if (crypto_aes128gcm_seal(cek, nonce, record, len + WEBPUSH_PADDING_LEN, record,
                              record + len + WEBPUSH_PADDING_LEN) != 0) {
        crypto_wipe(body, WEBPUSH_BODY_LEN(len)); /* the plaintext must not go out */
        goto done;
    }
    *body_len = WEBPUSH_BODY_LEN(len);
    e = WEBPUSH_OK;
done:
    crypto_wipe(secret, sizeof secret);
    crypto_wipe(cek, sizeof cek);
    crypto_wipe(nonce, sizeof nonce);
    return e;
}

enum webpush_error
webpush_encrypt(const struct webpush_subscriber *to, const void *plaintext, size_t len,
                uint8_t body[WEBPUSH_BODY_MAX], size_t *body_len)
{
    uint8_t salt[WEBPUSH_SALT_LEN];
    struct crypto_ec_key *sender;
    enum webpush_error e;

    if (len > WEBPUSH_PLAINTEXT_MAX)
        return WEBPUSH_E_TOO_LONG;
    /* A new sender key and salt per message, as RFC 8291 section 2 has it: messages to one
     * subscriber that shared both would share the AES-GCM key and nonce. */
    if (crypto_random_bytes(salt, sizeof salt) != 0 || (sender = crypto_ec_key_generate()) == NULL)
        return WEBPUSH_E_INTERNAL;
    e = encrypt_from(to, salt, sender, plaintext, len, body, body_len);
    crypto_ec_key_free(sender);
    return e;
}

enum webpush_error
webpush_encrypt_with(const struct webpush_subscriber *to, const uint8_t salt[WEBPUSH_SALT_LEN],
                     const uint8_t sender_private[CRYPTO_P256_PRIVATE_LEN], const void *plaintext,
                     size_t len, uint8_t body[WEBPUSH_BODY_MAX], size_t *body_len)
{
    struct crypto_ec_key *sender;
    enum webpush_error e;

    if (len > WEBPUSH_PLAINTEXT_MAX)
        return WEBPUSH_E_TOO_LONG;
    if ((sender = crypto_ec_key_import(sender_private)) == NULL)
        return WEBPUSH_E_INTERNAL;
    e = encrypt_from(to, salt, sender, plaintext, len, body, body_len);
    crypto_ec_key_free(sender);
    return e;
}

/* ---- VAPID --------------------------------------------------------------------------------- */

struct webpush_vapid {
    struct crypto_ec_key *key;
    char public_text[WEBPUSH_VAPID_PUBLIC_TEXT_LEN + 1];
};

/* Wraps key (taken over) with its public text; NULL (key freed) when out of memory. */
static struct webpush_vapid *
vapid_of(struct crypto_ec_key *key)
{
    struct webpush_vapid *v = key != NULL ? calloc(1, sizeof *v) : NULL;

    if (v == NULL) {
        crypto_ec_key_free(key);
        return NULL;
    }
    v->key = key;
    b64url_encode(crypto_ec_key_public(key), CRYPTO_P256_PUBLIC_LEN, v->public_text);
    return v;
}

struct webpush_vapid *
webpush_vapid_generate(void)
{
    return vapid_of(crypto_ec_key_generate());
}

enum webpush_error
webpush_vapid_import(const char *private_text, const char *public_text, struct webpush_vapid **out)
{
    uint8_t d[CRYPTO_P256_PRIVATE_LEN];
    size_t n = 0, len = strnlen(private_text, WEBPUSH_VAPID_PRIVATE_TEXT_LEN + 1);
    struct crypto_ec_key *key = NULL;

    *out = NULL;
    if (len == WEBPUSH_VAPID_PRIVATE_TEXT_LEN &&
        b64url_decode(private_text, len, d, sizeof d, &n) == 0 && n == sizeof d)
        key = crypto_ec_key_import(d);
    crypto_wipe(d, sizeof d);
    if (key == NULL)
        return WEBPUSH_E_VAPID_KEY;
    if ((*out = vapid_of(key)) == NULL)
        return WEBPUSH_E_INTERNAL;
    /* A stored public key that the private one does not give means the row was damaged or
     * mixed up; sending with it would break every subscription made under the other key. */
    if (public_text != NULL && strcmp(public_text, (*out)->public_text) != 0) {
        webpush_vapid_free(*out);
        *out = NULL;
        return WEBPUSH_E_VAPID_MISMATCH;
    }
    return WEBPUSH_OK;
}

void
webpush_vapid_free(struct webpush_vapid *v)
{
    if (v == NULL)
        return;
    crypto_ec_key_free(v->key);
    free(v);
}

int
webpush_vapid_export(const struct webpush_vapid *v, char out[WEBPUSH_VAPID_PRIVATE_TEXT_LEN + 1])
{
    uint8_t d[CRYPTO_P256_PRIVATE_LEN];

    out[0] = '\0';
    if (crypto_ec_key_export(v->key, d) != 0)
        return -1;
    b64url_encode(d, sizeof d, out);
    crypto_wipe(d, sizeof d);
    return 0;
}

const char *
webpush_vapid_public_key(const struct webpush_vapid *v)
{
    return v->public_text;
}

/* "mailto:" or "https:" and at least one more character, all printable ASCII but space, quote
 * and backslash: nothing that JSON would escape, so JWT_CLAIMS_MAX holds. */
static bool
subject_ok(const char *s)
{
    size_t n = strnlen(s, WEBPUSH_SUBJECT_MAX + 1);

    if (n > WEBPUSH_SUBJECT_MAX ||
        !((strncmp(s, "mailto:", 7) == 0 && n > 7) || (strncmp(s, "https:", 6) == 0 && n > 6)))
        return false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] <= ' ' || s[i] > '~' || s[i] == '"' || s[i] == '\\')
            return false;
    }
    return true;
}

static bool
audience_ok(const char *audience)
{
    char canonical[WEBPUSH_ORIGIN_MAX + 1];

    return webpush_origin(audience, canonical) == WEBPUSH_OK && strcmp(canonical, audience) == 0;
}

/* The claims JSON, malloc'ed (the caller frees it), or NULL. */
static char *
claims_json(const char *audience, const char *subject, int64_t exp)
{
    json_t *c =
        json_pack("{s:s, s:I, s:s}", "aud", audience, "exp", (json_int_t)exp, "sub", subject);
    char *text = c != NULL ? json_dumps(c, JSON_COMPACT) : NULL;

    json_decref(c);
    return text;
}

enum webpush_error
webpush_vapid_jwt(const struct webpush_vapid *v, const char *audience, const char *subject,
                  int64_t now_s, int64_t lifetime_s, char out[WEBPUSH_JWT_MAX + 1])
{
    uint8_t sig[CRYPTO_ES256_SIG_LEN];
    char *claims;
    size_t o = 0;

    out[0] = '\0';
    if (!audience_ok(audience))
        return WEBPUSH_E_AUDIENCE;
    if (!subject_ok(subject))
        return WEBPUSH_E_SUBJECT;
    if (lifetime_s < 1 || lifetime_s > WEBPUSH_JWT_LIFETIME_MAX || now_s < 0 ||
        now_s > WEBPUSH_NOW_MAX)
        return WEBPUSH_E_LIFETIME;
    if ((claims = claims_json(audience, subject, now_s + lifetime_s)) == NULL)
        return WEBPUSH_E_INTERNAL;
    TOCSIN_ASSERT(strlen(claims) <= JWT_CLAIMS_MAX); /* the inputs were checked above */
    o += b64url_encode(JWT_HEADER, sizeof JWT_HEADER - 1, out);
    out[o++] = '.';
    o += b64url_encode(claims, strlen(claims), out + o);
    free(claims);
    if (crypto_ec_sign_es256(v->key, out, o, sig) != 0) {
        out[0] = '\0';
        return WEBPUSH_E_INTERNAL;
    }
    out[o++] = '.';
    b64url_encode(sig, sizeof sig, out + o);
    return WEBPUSH_OK;
}

int
webpush_vapid_authorization(const struct webpush_vapid *v, const char *jwt,
                            char out[WEBPUSH_AUTHORIZATION_MAX + 1])
{
    static const char t[] = "vapid t=", k[] = ", k=";
    size_t n = strnlen(jwt, WEBPUSH_JWT_MAX + 1), o = 0;

    out[0] = '\0';
    if (n > WEBPUSH_JWT_MAX)
        return -1;
    memcpy(out + o, t, sizeof t - 1);
    o += sizeof t - 1;
    memcpy(out + o, jwt, n);
    o += n;
    memcpy(out + o, k, sizeof k - 1);
    o += sizeof k - 1;
    memcpy(out + o, v->public_text, sizeof v->public_text); /* with its NUL */
    return 0;
}

/* ---- endpoints and topics ------------------------------------------------------------------ */

/* An IPv6 address (16 bytes) as the WHATWG URL standard serialises it: eight pieces in lower-case
 * hex without leading zeros, the first longest run of two or more zero pieces written "::", no
 * dotted IPv4 tail. Writes at most 39 characters and a NUL. */
static void
ipv6_text(const uint8_t a[16], char *out)
{
    unsigned piece[8];
    int best = -1, best_len = 1, o = 0;

    for (int i = 0; i < 8; i++)
        piece[i] = (unsigned)a[2 * i] << 8 | a[2 * i + 1];
    for (int i = 0; i < 8;) {
        int j = i;
        while (j < 8 && piece[j] == 0)
            j++;
        if (j - i > best_len) {
            best = i;
            best_len = j - i;
        }
        i = j > i ? j : i + 1;
    }
    for (int i = 0; i < 8; i++) {
        if (i == best) {
            out[o++] = ':';
            if (i == 0)
                out[o++] = ':';
            i += best_len - 1;
            continue;
        }
        for (int shift = 12, started = 0; shift >= 0; shift -= 4) {
            unsigned d = piece[i] >> shift & 15;
            if (d != 0 || started || shift == 0) {
                out[o++] = hex_digit(d);
                started = 1;
            }
        }
        if (i < 7)
            out[o++] = ':';
    }
    out[o] = '\0';
}

/* The bracketed IPv6 literal at s (len bytes, brackets included) into out, canonical. */
static int
ipv6_host(const char *s, size_t len, char *out)
{
    char text[INET6_ADDRSTRLEN];
    uint8_t a[16];

    if (len < 4 || len - 2 >= sizeof text || s[len - 1] != ']')
        return -1;
    memcpy(text, s + 1, len - 2);
    text[len - 2] = '\0';
    if (inet_pton(AF_INET6, text, a) != 1)
        return -1;
    out[0] = '[';
    ipv6_text(a, out + 1);
    strcat(out, "]");
    return 0;
}

/* True when the label (lower case) is what browsers read as a number: decimal digits, or "0x"
 * and hex digits. */
static bool
numeric_label(const char *label, size_t n)
{
    size_t i = 0;
    bool hex = n >= 2 && label[0] == '0' && label[1] == 'x';

    for (i = hex ? 2 : 0; i < n; i++) {
        char c = label[i];
        if (!((c >= '0' && c <= '9') || (hex && c >= 'a' && c <= 'f')))
            return false;
    }
    return n > 0;
}

/* A host name at s (len bytes) into out in lower case. Browsers read a host whose last label is
 * a number as an IPv4 address in any of several notations (127.1, 0x7f.0.0.1) and write it as a
 * dotted quad; only the dotted quad itself is taken, so that the text stays what it was. */
static int
name_host(const char *s, size_t len, char *out)
{
    size_t last = 0;
    struct in_addr ip4;

    if (len == 0 || len > WEBPUSH_HOST_MAX)
        return -1;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && c != '.' && c != '-' && c != '_')
            return -1;
        if (c == '.' && (i == 0 || i + 1 == len || s[i - 1] == '.'))
            return -1; /* an empty label */
        out[i] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
        if (c == '.')
            last = i + 1;
    }
    out[len] = '\0';
    if (numeric_label(out + last, len - last) && inet_pton(AF_INET, out, &ip4) != 1)
        return -1;
    return 0;
}

/* The port text at s (len bytes, after the colon): 1..65535, leading zeros allowed. */
static long
port_of(const char *s, size_t len)
{
    long v = 0;

    if (len == 0)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
        if (v > 65535)
            return -1;
    }
    return v >= 1 ? v : -1;
}

enum webpush_error
webpush_origin(const char *endpoint, char out[WEBPUSH_ORIGIN_MAX + 1])
{
    static const struct {
        const char *prefix, *scheme;
        long default_port;
    } schemes[] = {{"https://", "https", 443}, {"http://", "http", 80}};
    size_t len = strnlen(endpoint, WEBPUSH_ENDPOINT_MAX + 1), a, host_len, end;
    char host[WEBPUSH_HOST_MAX + 1];
    long port = 0;
    int s = -1;

    out[0] = '\0';
    for (int i = 0; i < 2 && s < 0; i++)
        if (strncasecmp(endpoint, schemes[i].prefix, strlen(schemes[i].prefix)) == 0)
            s = i;
    if (len > WEBPUSH_ENDPOINT_MAX || s < 0)
        return WEBPUSH_E_ENDPOINT;
    a = strlen(schemes[s].prefix);
    end = a + strcspn(endpoint + a, "/?#");
    /* The host ends at the port's colon; in an IPv6 literal, after the closing bracket. */
    if (endpoint[a] == '[') {
        const char *close = memchr(endpoint + a, ']', end - a);
        host_len = close != NULL ? (size_t)(close - (endpoint + a)) + 1 : end - a;
    } else {
        const char *colon = memchr(endpoint + a, ':', end - a);
        host_len = colon != NULL ? (size_t)(colon - (endpoint + a)) : end - a;
    }
    if (a + host_len < end) {
        if (endpoint[a + host_len] != ':' ||
            (port = port_of(endpoint + a + host_len + 1, end - a - host_len - 1)) < 0)
            return WEBPUSH_E_ENDPOINT;
    }
    if ((endpoint[a] == '[' ? ipv6_host(endpoint + a, host_len, host)
                            : name_host(endpoint + a, host_len, host)) != 0)
        return WEBPUSH_E_ENDPOINT;
    if (port == 0 || port == schemes[s].default_port)
        snprintf(out, WEBPUSH_ORIGIN_MAX + 1, "%s://%s", schemes[s].scheme, host);
    else
        snprintf(out, WEBPUSH_ORIGIN_MAX + 1, "%s://%s:%u", schemes[s].scheme, host,
                 (unsigned)(uint16_t)port);
    return WEBPUSH_OK;
}

void
webpush_topic(const char *id, char out[WEBPUSH_TOPIC_LEN + 1])
{
    uint8_t md[CRYPTO_SHA256_LEN];

    crypto_sha256(id, strlen(id), md);
    b64url_encode(md, TOPIC_DIGEST_LEN, out);
}
