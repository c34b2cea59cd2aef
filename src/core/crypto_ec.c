/* crypto_ec.c -- crypto_ec.h on OpenSSL 3's EVP_PKEY interface: keys are built from bytes with
 * EVP_PKEY_fromdata, ECDH is EVP_PKEY_derive after a check of the peer's point, ES256 is
 * EVP_DigestSign with SHA-256 and its DER signature converted to r||s. The public point of an
 * imported scalar comes from EC_POINT_mul (the EC_GROUP/EC_POINT functions are not among those
 * OpenSSL 3 deprecated). With crypto.c the only files that include OpenSSL headers. */
#include "crypto_ec.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/param_build.h>
#include <openssl/params.h>
#include <stdlib.h>
#include <string.h>

#define DER_SIG_MAX 72 /* a DER ECDSA-Sig-Value for P-256: SEQUENCE of two INTEGERs of <= 33 */
#define COORD_LEN 32

struct crypto_ec_key {
    EVP_PKEY *pkey;                      /* the pair; read-only once built */
    uint8_t pub[CRYPTO_P256_PUBLIC_LEN]; /* its public point, kept encoded for callers */
};

/* An EVP_PKEY for the point pub (already checked to be 65 bytes from 0x04) and, when d is not
 * NULL, the private scalar d. NULL when OpenSSL refuses: the import decodes the point and
 * refuses one that is not on the curve. */
static EVP_PKEY *
pkey_from(const uint8_t *pub, const BIGNUM *d)
{
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    OSSL_PARAM *params = NULL;
    EVP_PKEY_CTX *ctx = NULL;
    EVP_PKEY *pkey = NULL;

    if (bld == NULL ||
        OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, SN_X9_62_prime256v1, 0) !=
            1 ||
        OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, pub,
                                         CRYPTO_P256_PUBLIC_LEN) != 1 ||
        (d != NULL && OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_PRIV_KEY, d) != 1))
        goto done;
    params = OSSL_PARAM_BLD_to_param(bld);
    ctx = params != NULL ? EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL) : NULL;
    if (ctx == NULL || EVP_PKEY_fromdata_init(ctx) != 1 ||
        EVP_PKEY_fromdata(ctx, &pkey, d != NULL ? EVP_PKEY_KEYPAIR : EVP_PKEY_PUBLIC_KEY, params) !=
            1)
        pkey = NULL;
done:
    EVP_PKEY_CTX_free(ctx);
    /* d came from BN_secure_new, so its copy is in the params' secure part, which this clears. */
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    return pkey;
}

/* The format a point must have before OpenSSL sees it: uncompressed only, so that one key has
 * one encoding (OpenSSL would also take the 33-byte compressed form). */
static bool
point_shape_ok(const uint8_t *pub, size_t len)
{
    return pub != NULL && len == CRYPTO_P256_PUBLIC_LEN && pub[0] == 0x04;
}

/* The public-key check of pkey. The quick form checks the encoding, the range of the
 * coordinates and the curve equation; the full one also multiplies the point by the group order,
 * which for P-256 (cofactor 1: every point on the curve is in the group) can only repeat the
 * answer, at the cost of a scalar multiplication, half the time of an ECDH. */
static bool
point_ok(EVP_PKEY *pkey)
{
    EVP_PKEY_CTX *ctx = pkey != NULL ? EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL) : NULL;
    bool ok = ctx != NULL && EVP_PKEY_public_check_quick(ctx) == 1;

    EVP_PKEY_CTX_free(ctx);
    return ok;
}

bool
crypto_ec_public_valid(const uint8_t *pub, size_t len)
{
    /* The import already refuses points off the curve; point_ok says so in code. */
    EVP_PKEY *pkey = point_shape_ok(pub, len) ? pkey_from(pub, NULL) : NULL;
    bool ok = point_ok(pkey);

    EVP_PKEY_free(pkey);
    return ok;
}

struct crypto_ec_key *
crypto_ec_key_generate(void)
{
    struct crypto_ec_key *k = calloc(1, sizeof *k);
    size_t n = 0;

    if (k == NULL)
        return NULL;
    k->pkey = EVP_PKEY_Q_keygen(NULL, NULL, "EC", SN_X9_62_prime256v1);
    /* A generated key reports its point uncompressed (OpenSSL's default format). */
    if (k->pkey == NULL ||
        EVP_PKEY_get_octet_string_param(k->pkey, OSSL_PKEY_PARAM_PUB_KEY, k->pub, sizeof k->pub,
                                        &n) != 1 ||
        !point_shape_ok(k->pub, n)) {
        crypto_ec_key_free(k);
        return NULL;
    }
    return k;
}

/* The encoded public point d * G into pub; 0, or -1 when d is not in 1..order-1. */
static int
public_of(const BIGNUM *d, uint8_t pub[CRYPTO_P256_PUBLIC_LEN])
{
    EC_GROUP *g = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
    EC_POINT *q = g != NULL ? EC_POINT_new(g) : NULL;
    int ok = q != NULL && !BN_is_zero(d) && BN_cmp(d, EC_GROUP_get0_order(g)) < 0 &&
             EC_POINT_mul(g, q, d, NULL, NULL, NULL) == 1 &&
             EC_POINT_point2oct(g, q, POINT_CONVERSION_UNCOMPRESSED, pub, CRYPTO_P256_PUBLIC_LEN,
                                NULL) == CRYPTO_P256_PUBLIC_LEN;

    EC_POINT_free(q);
    EC_GROUP_free(g);
    return ok ? 0 : -1;
}

struct crypto_ec_key *
crypto_ec_key_import(const uint8_t d[CRYPTO_P256_PRIVATE_LEN])
{
    struct crypto_ec_key *k = calloc(1, sizeof *k);
    BIGNUM *bn = BN_secure_new();

    if (k == NULL || bn == NULL)
        goto fail;
    BN_set_flags(bn, BN_FLG_CONSTTIME);
    if (BN_bin2bn(d, CRYPTO_P256_PRIVATE_LEN, bn) == NULL || public_of(bn, k->pub) != 0 ||
        (k->pkey = pkey_from(k->pub, bn)) == NULL)
        goto fail;
    BN_clear_free(bn);
    return k;
fail:
    BN_clear_free(bn);
    crypto_ec_key_free(k);
    return NULL;
}

void
crypto_ec_key_free(struct crypto_ec_key *k)
{
    if (k == NULL)
        return;
    EVP_PKEY_free(k->pkey); /* clears the private scalar as it frees it */
    free(k);
}

int
crypto_ec_key_export(const struct crypto_ec_key *k, uint8_t d[CRYPTO_P256_PRIVATE_LEN])
{
    BIGNUM *bn = NULL;
    int ok = EVP_PKEY_get_bn_param(k->pkey, OSSL_PKEY_PARAM_PRIV_KEY, &bn) == 1 &&
             BN_bn2binpad(bn, d, CRYPTO_P256_PRIVATE_LEN) == CRYPTO_P256_PRIVATE_LEN;

    BN_clear_free(bn);
    if (!ok)
        OPENSSL_cleanse(d, CRYPTO_P256_PRIVATE_LEN);
    return ok ? 0 : -1;
}

const uint8_t *
crypto_ec_key_public(const struct crypto_ec_key *k)
{
    return k->pub;
}

int
crypto_ec_ecdh(const struct crypto_ec_key *k, const uint8_t peer[CRYPTO_P256_PUBLIC_LEN],
               uint8_t secret[CRYPTO_P256_SECRET_LEN])
{
    EVP_PKEY *pkey = point_shape_ok(peer, CRYPTO_P256_PUBLIC_LEN) ? pkey_from(peer, NULL) : NULL;
    EVP_PKEY_CTX *ctx = point_ok(pkey) ? EVP_PKEY_CTX_new_from_pkey(NULL, k->pkey, NULL) : NULL;
    size_t n = CRYPTO_P256_SECRET_LEN;
    /* The peer passed point_ok, so OpenSSL's own (full) check of it is skipped: validate_peer 0. */
    int ok = ctx != NULL && EVP_PKEY_derive_init(ctx) == 1 &&
             EVP_PKEY_derive_set_peer_ex(ctx, pkey, 0) == 1 &&
             EVP_PKEY_derive(ctx, secret, &n) == 1 && n == CRYPTO_P256_SECRET_LEN;

    EVP_PKEY_CTX_free(ctx);
    EVP_PKEY_free(pkey);
    if (!ok)
        OPENSSL_cleanse(secret, CRYPTO_P256_SECRET_LEN);
    return ok ? 0 : -1;
}

int
crypto_ec_sign_es256(const struct crypto_ec_key *k, const void *msg, size_t len,
                     uint8_t sig[CRYPTO_ES256_SIG_LEN])
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    uint8_t der[DER_SIG_MAX];
    size_t der_len = sizeof der;
    const unsigned char *p = der;
    ECDSA_SIG *es = NULL;
    const BIGNUM *r, *s;
    int ok = 0;

    if (md == NULL || len > CRYPTO_ES256_INPUT_MAX ||
        EVP_DigestSignInit_ex(md, NULL, "SHA256", NULL, NULL, k->pkey, NULL) != 1 ||
        EVP_DigestSign(md, der, &der_len, len > 0 ? msg : (const void *)"", len) != 1)
        goto done;
    /* JOSE wants the two integers as fixed 32-byte big-endian fields, not DER. */
    es = d2i_ECDSA_SIG(NULL, &p, (long)der_len);
    if (es == NULL)
        goto done;
    ECDSA_SIG_get0(es, &r, &s);
    ok = BN_bn2binpad(r, sig, COORD_LEN) == COORD_LEN &&
         BN_bn2binpad(s, sig + COORD_LEN, COORD_LEN) == COORD_LEN;
done:
    ECDSA_SIG_free(es);
    EVP_MD_CTX_free(md);
    return ok ? 0 : -1;
}

/* The DER form of the r||s signature sig, allocated by OpenSSL (OPENSSL_free), in *der; its
 * length, or -1. */
static int
der_of(const uint8_t sig[CRYPTO_ES256_SIG_LEN], unsigned char **der)
{
    ECDSA_SIG *es = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(sig, COORD_LEN, NULL), *s = BN_bin2bn(sig + COORD_LEN, COORD_LEN, NULL);
    int n = -1;

    if (es != NULL && r != NULL && s != NULL && ECDSA_SIG_set0(es, r, s) == 1) {
        r = s = NULL; /* es owns them now */
        n = i2d_ECDSA_SIG(es, der);
    }
    BN_free(r);
    BN_free(s);
    ECDSA_SIG_free(es);
    return n;
}

bool
crypto_ec_verify_es256(const uint8_t pub[CRYPTO_P256_PUBLIC_LEN], const void *msg, size_t len,
                       const uint8_t sig[CRYPTO_ES256_SIG_LEN])
{
    EVP_PKEY *pkey = point_shape_ok(pub, CRYPTO_P256_PUBLIC_LEN) ? pkey_from(pub, NULL) : NULL;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned char *der = NULL;
    int der_len = der_of(sig, &der);
    /* OpenSSL's ECDSA verification refuses r or s outside 1..order-1 itself. */
    bool ok =
        pkey != NULL && md != NULL && der_len > 0 && len <= CRYPTO_ES256_INPUT_MAX &&
        EVP_DigestVerifyInit_ex(md, NULL, "SHA256", NULL, NULL, pkey, NULL) == 1 &&
        EVP_DigestVerify(md, der, (size_t)der_len, len > 0 ? msg : (const void *)"", len) == 1;

    OPENSSL_free(der);
    EVP_MD_CTX_free(md);
    EVP_PKEY_free(pkey);
    return ok;
}
