/* fuzz_webpush.c -- libFuzzer target for what a browser sends to POST /v1/push/subscriptions
 * (webpush.c, crypto_ec.c, b64.c). The input is "<p256dh text>\n<auth text>\n<endpoint>"
 * (missing parts are empty):
 *  1. the key texts through webpush_subscriber_decode: accepted keys re-encode to the texts given
 *     (less their padding), the point is valid and a message encrypts to it; a refusal names the
 *     first bad part (p256dh before auth) and a point refusal means 65 well-encoded bytes;
 *  2. the whole input as raw p256dh bytes: webpush_p256dh_valid agrees with what ECDH accepts;
 *  3. the endpoint through webpush_origin: an accepted origin is short, in lower case, without
 *     path, userinfo or default port, and is its own origin;
 *  4. the whole input as an id for webpush_topic: 32 base64url characters.
 * A crash, a sanitizer report or a broken property (abort) is a bug. Built by tests/fuzz/run.sh. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "crypto_ec.h"
#include "webpush.h"

#define URL_ALPHABET "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
#define ID_MAX 4096

static void
check(bool ok)
{
    if (!ok)
        abort();
}

/* The next '\n'-terminated part of the input (the rest when there is no '\n'). */
static const char *
part(const uint8_t **data, size_t *size, size_t *len)
{
    const char *p = (const char *)*data;
    const uint8_t *nl = memchr(*data, '\n', *size);

    *len = nl != NULL ? (size_t)(nl - *data) : *size;
    *data += *len + (nl != NULL);
    *size -= *len + (nl != NULL);
    return p;
}

/* True when text (len bytes) is the unpadded encoding of the n bytes at b, or that encoding
 * followed by the '=' that pad it to a multiple of 4. */
static bool
encodes(const char *text, size_t len, const uint8_t *b, size_t n)
{
    char enc[B64URL_ENCODED_LEN(WEBPUSH_P256DH_LEN) + 1];
    size_t m = b64url_encode(b, n, enc);

    if (len < m || memcmp(text, enc, m) != 0)
        return false;
    for (size_t i = m; i < len; i++) {
        if (text[i] != '=')
            return false;
    }
    return len == m || len % 4 == 0;
}

/* The bytes of a key text that is not refused for its encoding, padding stripped; false when
 * b64url_decode refuses it. */
static bool
decodes(const char *text, size_t len, uint8_t *out, size_t *n)
{
    while (len > 0 && text[len - 1] == '=')
        len--;
    return len <= WEBPUSH_KEY_TEXT_MAX && b64url_decode(text, len, out, 96, n) == 0;
}

static void
keys(const char *p, size_t plen, const char *a, size_t alen)
{
    static const uint8_t salt[WEBPUSH_SALT_LEN] = {1};
    static const uint8_t sender[CRYPTO_P256_PRIVATE_LEN] = {[31] = 7};
    struct webpush_subscriber sub;
    uint8_t body[WEBPUSH_BODY_MAX], raw[96];
    size_t body_len = 0, n = 0;

    switch (webpush_subscriber_decode(p, plen, a, alen, &sub)) {
    case WEBPUSH_OK:
        check(encodes(p, plen, sub.p256dh, sizeof sub.p256dh));
        check(encodes(a, alen, sub.auth, sizeof sub.auth));
        check(sub.p256dh[0] == 0x04 && webpush_p256dh_valid(sub.p256dh, sizeof sub.p256dh));
        check(webpush_encrypt_with(&sub, salt, sender, "x", 1, body, &body_len) == WEBPUSH_OK &&
              body_len == WEBPUSH_BODY_LEN(1));
        break;
    case WEBPUSH_E_P256DH_POINT:
        check(decodes(p, plen, raw, &n) && n == WEBPUSH_P256DH_LEN &&
              !webpush_p256dh_valid(raw, n));
        break;
    case WEBPUSH_E_AUTH_ENCODING:
    case WEBPUSH_E_AUTH_LENGTH:
        /* auth is looked at only once p256dh passed. */
        check(decodes(p, plen, raw, &n) && n == WEBPUSH_P256DH_LEN && webpush_p256dh_valid(raw, n));
        break;
    case WEBPUSH_E_P256DH_ENCODING:
    case WEBPUSH_E_P256DH_LENGTH:
        break;
    default:
        check(false); /* no other refusal belongs to decoding */
    }
}

static void
raw_point(const uint8_t *data, size_t size)
{
    static struct crypto_ec_key *k;
    static const uint8_t d[CRYPTO_P256_PRIVATE_LEN] = {[31] = 5};
    uint8_t secret[CRYPTO_P256_SECRET_LEN];
    bool valid = webpush_p256dh_valid(data, size);

    if (k == NULL)
        check((k = crypto_ec_key_import(d)) != NULL); /* kept for the whole run */
    check(!valid || (size == WEBPUSH_P256DH_LEN && data[0] == 0x04));
    if (size == WEBPUSH_P256DH_LEN)
        check(valid == (crypto_ec_ecdh(k, data, secret) == 0));
}

static void
endpoint(const char *e, size_t len)
{
    static char url[WEBPUSH_ENDPOINT_MAX + 2];
    char out[WEBPUSH_ORIGIN_MAX + 1], again[WEBPUSH_ORIGIN_MAX + 1];

    if (len > WEBPUSH_ENDPOINT_MAX + 1)
        len = WEBPUSH_ENDPOINT_MAX + 1;
    memcpy(url, e, len);
    url[len] = '\0';
    if (webpush_origin(url, out) != WEBPUSH_OK) {
        check(out[0] == '\0');
        return;
    }
    size_t n = strlen(out);
    const char *host = strstr(out, "://");
    check(n <= WEBPUSH_ORIGIN_MAX && strlen(url) <= WEBPUSH_ENDPOINT_MAX);
    check(strncmp(out, "https://", 8) == 0 || strncmp(out, "http://", 7) == 0);
    check(host != NULL && strpbrk(host + 3, "/?#@%\\ ") == NULL);
    for (size_t i = 0; i < n; i++)
        check(!(out[i] >= 'A' && out[i] <= 'Z'));
    check(!(strncmp(out, "https://", 8) == 0 && n > 4 && strcmp(out + n - 4, ":443") == 0));
    check(!(strncmp(out, "http://", 7) == 0 && n > 3 && strcmp(out + n - 3, ":80") == 0));
    check(webpush_origin(out, again) == WEBPUSH_OK && strcmp(out, again) == 0);
}

static void
topic(const uint8_t *data, size_t size)
{
    static char id[ID_MAX + 1];
    char t[WEBPUSH_TOPIC_LEN + 1];

    if (size > ID_MAX)
        size = ID_MAX;
    memcpy(id, data, size);
    id[size] = '\0';
    webpush_topic(id, t);
    check(strlen(t) == WEBPUSH_TOPIC_LEN && strspn(t, URL_ALPHABET) == WEBPUSH_TOPIC_LEN);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *rest = data;
    size_t left = size, plen, alen, elen;
    const char *p = part(&rest, &left, &plen), *a = part(&rest, &left, &alen),
               *e = part(&rest, &left, &elen);

    keys(p, plen, a, alen);
    raw_point(data, size);
    endpoint(e, elen);
    topic(data, size);
    return 0;
}
