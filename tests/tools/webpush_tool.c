/* webpush_tool.c -- a command-line door to webpush.c for tests that compare it with other Web Push
 * implementations (tests/api/webpush_cross.test.mjs: npm http_ece decrypts, npm jose verifies the
 * VAPID JWT, node's WHATWG URL gives origins). Built with the tests, never installed.
 *   webpush_tool encrypt P256DH AUTH PLAINTEXT
 *       the subscription's key texts as a browser gives them, the plaintext in base64url; exit 0
 *       and the body in base64url on stdout
 *   webpush_tool vapid-new
 *       exit 0 and {"private","public"}: a new key pair's texts
 *   webpush_tool vapid PRIVATE PUBLIC|- ENDPOINT SUBJECT NOW_S LIFETIME_S
 *       exit 0 and {"public","origin","jwt","authorization"} for ENDPOINT's origin
 *   webpush_tool origin URL...
 *       one line per URL: its origin, or "-" when refused; exit 0
 *   webpush_tool topic ID
 *       exit 0 and the Topic value
 *   webpush_tool bench SECONDS
 *       one thread: {"encrypt_per_s","jwt_per_s","both_per_s"} for a 300-byte payload, each
 *       message with its own sender key (as sent) and, for "both", its own JWT (no JWT cache)
 * A refusal exits 1 with its enum name (WEBPUSH_E_...) on stdout; usage errors exit 2. */
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "b64.h"
#include "webpush.h"

static const char *const error_names[] = {
#define X(name, text) [name] = #name,
    WEBPUSH_ERRORS(X)
#undef X
};

static int
usage(void)
{
    fprintf(stderr, "usage: webpush_tool encrypt P256DH AUTH PLAINTEXT_B64URL\n"
                    "       webpush_tool vapid-new\n"
                    "       webpush_tool vapid PRIVATE PUBLIC|- ENDPOINT SUBJECT NOW_S LIFETIME_S\n"
                    "       webpush_tool origin URL...\n"
                    "       webpush_tool topic ID\n"
                    "       webpush_tool bench SECONDS\n");
    return 2;
}

static int
refused(enum webpush_error e)
{
    printf("%s\n", error_names[e]);
    return 1;
}

/* A decimal int64 argument, or -1 with a message. */
static int
number(const char *text, int64_t *out)
{
    char *end;
    long long v = strtoll(text, &end, 10);

    if (end == text || *end != '\0') {
        fprintf(stderr, "webpush_tool: not a number: %s\n", text);
        return -1;
    }
    *out = v;
    return 0;
}

static int
print_json(json_t *o)
{
    char *text = o != NULL ? json_dumps(o, JSON_COMPACT) : NULL;

    json_decref(o);
    if (text == NULL)
        return 1;
    printf("%s\n", text);
    free(text);
    return 0;
}

/* The plaintext is one byte longer than WEBPUSH_PLAINTEXT_MAX at most, so that the refusal of a
 * too long one can be tested. */
static int
encrypt(char **argv)
{
    static uint8_t plain[WEBPUSH_PLAINTEXT_MAX + 1], body[WEBPUSH_BODY_MAX];
    static char text[B64URL_ENCODED_LEN(WEBPUSH_BODY_MAX) + 1];
    struct webpush_subscriber sub;
    size_t n = 0, body_len = 0;
    enum webpush_error e;

    if (b64url_decode(argv[2], strlen(argv[2]), plain, sizeof plain, &n) != 0) {
        fprintf(stderr, "webpush_tool: the plaintext is not base64url of at most %d bytes\n",
                WEBPUSH_PLAINTEXT_MAX + 1);
        return 2;
    }
    e = webpush_subscriber_decode(argv[0], strlen(argv[0]), argv[1], strlen(argv[1]), &sub);
    if (e == WEBPUSH_OK)
        e = webpush_encrypt(&sub, plain, n, body, &body_len);
    if (e != WEBPUSH_OK)
        return refused(e);
    b64url_encode(body, body_len, text);
    printf("%s\n", text);
    return 0;
}

static int
vapid_new(void)
{
    char priv[WEBPUSH_VAPID_PRIVATE_TEXT_LEN + 1];
    struct webpush_vapid *v = webpush_vapid_generate();
    int rc;

    if (v == NULL || webpush_vapid_export(v, priv) != 0) {
        webpush_vapid_free(v);
        return refused(WEBPUSH_E_INTERNAL);
    }
    rc =
        print_json(json_pack("{s:s, s:s}", "private", priv, "public", webpush_vapid_public_key(v)));
    webpush_vapid_free(v);
    return rc;
}

static int
vapid(char **argv)
{
    static char jwt[WEBPUSH_JWT_MAX + 1], auth[WEBPUSH_AUTHORIZATION_MAX + 1];
    char origin[WEBPUSH_ORIGIN_MAX + 1];
    struct webpush_vapid *v = NULL;
    int64_t now, lifetime;
    enum webpush_error e;
    int rc;

    if (number(argv[4], &now) != 0 || number(argv[5], &lifetime) != 0)
        return 2;
    e = webpush_vapid_import(argv[0], strcmp(argv[1], "-") == 0 ? NULL : argv[1], &v);
    if (e == WEBPUSH_OK)
        e = webpush_origin(argv[2], origin);
    if (e == WEBPUSH_OK)
        e = webpush_vapid_jwt(v, origin, argv[3], now, lifetime, jwt);
    if (e == WEBPUSH_OK && webpush_vapid_authorization(v, jwt, auth) != 0)
        e = WEBPUSH_E_INTERNAL;
    if (e != WEBPUSH_OK) {
        webpush_vapid_free(v);
        return refused(e);
    }
    rc = print_json(json_pack("{s:s, s:s, s:s, s:s}", "public", webpush_vapid_public_key(v),
                              "origin", origin, "jwt", jwt, "authorization", auth));
    webpush_vapid_free(v);
    return rc;
}

static int
origins(int argc, char **argv)
{
    char origin[WEBPUSH_ORIGIN_MAX + 1];

    for (int i = 0; i < argc; i++)
        printf("%s\n", webpush_origin(argv[i], origin) == WEBPUSH_OK ? origin : "-");
    return 0;
}

static double
now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Messages per second for `seconds` of one kind of work: encrypting (with), signing (with), or
 * both per message. -1 when a call fails. */
static double
rate(double seconds, struct webpush_vapid *v, const struct webpush_subscriber *sub, bool enc,
     bool sign)
{
    static uint8_t plain[300], body[WEBPUSH_BODY_MAX];
    static char jwt[WEBPUSH_JWT_MAX + 1];
    double start = now_s(), t = start;
    size_t len = 0;
    long n = 0;

    memset(plain, 'x', sizeof plain);
    for (; t - start < seconds; n++) {
        if (enc && webpush_encrypt(sub, plain, sizeof plain, body, &len) != WEBPUSH_OK)
            return -1;
        if (sign && webpush_vapid_jwt(v, "https://fcm.googleapis.com", "mailto:ops@example.com",
                                      1700000000, 43200, jwt) != WEBPUSH_OK)
            return -1;
        if (n % 64 == 0)
            t = now_s();
    }
    return (double)n / (now_s() - start);
}

static int
bench(const char *arg)
{
    struct webpush_vapid *v = webpush_vapid_generate(), *ua = webpush_vapid_generate();
    struct webpush_subscriber sub;
    size_t n = 0;
    double seconds = atof(arg), e, j, b;
    int rc;

    if (seconds <= 0) {
        webpush_vapid_free(v);
        webpush_vapid_free(ua);
        return usage();
    }
    /* A subscriber's key is a P-256 point like a VAPID public key; auth is any 16 bytes. */
    if (v == NULL || ua == NULL ||
        b64url_decode(webpush_vapid_public_key(ua), WEBPUSH_VAPID_PUBLIC_TEXT_LEN, sub.p256dh,
                      sizeof sub.p256dh, &n) != 0) {
        webpush_vapid_free(v);
        webpush_vapid_free(ua);
        return refused(WEBPUSH_E_INTERNAL);
    }
    memset(sub.auth, 7, sizeof sub.auth);
    e = rate(seconds, v, &sub, true, false);
    j = rate(seconds, v, &sub, false, true);
    b = rate(seconds, v, &sub, true, true);
    rc = e < 0 || j < 0 || b < 0 ? 1
                                 : print_json(json_pack("{s:i, s:i, s:i}", "encrypt_per_s", (int)e,
                                                        "jwt_per_s", (int)j, "both_per_s", (int)b));
    webpush_vapid_free(v);
    webpush_vapid_free(ua);
    return rc;
}

int
main(int argc, char **argv)
{
    char topic[WEBPUSH_TOPIC_LEN + 1];

    if (argc == 5 && strcmp(argv[1], "encrypt") == 0)
        return encrypt(argv + 2);
    if (argc == 2 && strcmp(argv[1], "vapid-new") == 0)
        return vapid_new();
    if (argc == 8 && strcmp(argv[1], "vapid") == 0)
        return vapid(argv + 2);
    if (argc >= 3 && strcmp(argv[1], "origin") == 0)
        return origins(argc - 2, argv + 2);
    if (argc == 3 && strcmp(argv[1], "bench") == 0)
        return bench(argv[2]);
    if (argc == 3 && strcmp(argv[1], "topic") == 0) {
        webpush_topic(argv[2], topic);
        printf("%s\n", topic);
        return 0;
    }
    return usage();
}
