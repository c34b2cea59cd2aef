/* webhook_sign.c -- the signing of webhook_sign.h with OpenSSL's HMAC and base64 codec. */
#include "webhook_sign.h"

#include <inttypes.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>

#define SIGN_PREFIX "whsec_"

int
webhook_secret_new(char out[WEBHOOK_SECRET_LEN + 1])
{
    unsigned char rnd[WEBHOOK_SECRET_BYTES];

    if (RAND_bytes(rnd, sizeof rnd) != 1)
        return -1;
    memcpy(out, SIGN_PREFIX, 6);
    EVP_EncodeBlock((unsigned char *)out + 6, rnd, sizeof rnd); /* 24 bytes: no padding */
    return 0;
}

/* Decodes the base64 after "whsec_" into key; returns its length, or -1. */
static int
secret_key(const char *secret, unsigned char key[WEBHOOK_KEY_MAX + 3])
{
    size_t len;
    int n, pad = 0;

    if (strncmp(secret, SIGN_PREFIX, 6) != 0)
        return -1;
    secret += 6;
    len = strlen(secret);
    if (len == 0 || len % 4 != 0 || len / 4 * 3 > WEBHOOK_KEY_MAX + 2)
        return -1;
    n = EVP_DecodeBlock(key, (const unsigned char *)secret, (int)len);
    if (n < 0)
        return -1;
    pad = (secret[len - 1] == '=') + (secret[len - 2] == '=');
    return n - pad > 0 ? n - pad : -1;
}

int
webhook_sign(const char *secret, const char *id, int64_t timestamp_s, const char *body,
             size_t body_len, char out[WEBHOOK_SIGNATURE_LEN + 1])
{
    unsigned char key[WEBHOOK_KEY_MAX + 3], mac[EVP_MAX_MD_SIZE];
    char head[WEBHOOK_ID_MAX + 32];
    int klen = secret_key(secret, key);
    int hlen = snprintf(head, sizeof head, "%s.%" PRId64 ".", id, timestamp_s);

    if (klen < 0 || hlen < 0 || (size_t)hlen >= sizeof head)
        return -1;
    EVP_MAC *hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    EVP_MAC_CTX *ctx = hmac != NULL ? EVP_MAC_CTX_new(hmac) : NULL;
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, "SHA256", 0),
                           OSSL_PARAM_construct_end()};
    size_t mac_len = 0;
    int ok = ctx != NULL && EVP_MAC_init(ctx, key, (size_t)klen, params) == 1 &&
             EVP_MAC_update(ctx, (const unsigned char *)head, (size_t)hlen) == 1 &&
             EVP_MAC_update(ctx, (const unsigned char *)body, body_len) == 1 &&
             EVP_MAC_final(ctx, mac, &mac_len, sizeof mac) == 1 && mac_len == 32;
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(hmac);
    if (!ok)
        return -1;
    memcpy(out, "v1,", 3);
    EVP_EncodeBlock((unsigned char *)out + 3, mac, 32);
    return 0;
}

void
webhook_message_id(int64_t reminder_id, int64_t fire_at_ms, char out[WEBHOOK_ID_MAX])
{
    snprintf(out, WEBHOOK_ID_MAX, "rem_%" PRId64 "_%" PRId64, reminder_id, fire_at_ms);
}
