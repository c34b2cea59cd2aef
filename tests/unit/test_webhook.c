/* test_webhook.c -- the pure parts of delivery: Standard Webhooks signatures (the specification's
 * published example, and secrets that must be refused), new secrets, the stable message id, the
 * request's header lines (a traceparent, an id too long for its line), the public-address guard
 * over a table of addresses and URL checks on literal addresses (no DNS). The retry backoff is
 * test_deliver_policy.c's. */
#include "check.h"
#include "netguard.h"
#include "outbound.h"
#include "trace.h"
#include "webhook.h"
#include "webhook_sign.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#define WHY_MAX 256

/* The example of the Standard Webhooks specification; the expected value was also recomputed with
 * an independent HMAC (node's crypto) when this test was written. */
static void
test_sign_vector(void)
{
    static const char body[] = "{\"test\": 2432232314}";
    char sig[WEBHOOK_SIGNATURE_LEN + 1];
    int rc = webhook_sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek",
                          1614265330, body, strlen(body), sig);

    CHECK(rc == 0, "sign failed");
    CHECK(rc == 0 && strcmp(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=") == 0, "got %s",
          sig);
    /* One byte of the body changed: another signature. */
    rc = webhook_sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek",
                      1614265330, "{\"test\": 2432232315}", strlen(body), sig);
    CHECK(rc == 0 && strcmp(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=") != 0,
          "a changed body kept the signature");
}

static void
test_sign_bad_secrets(void)
{
    static const char *const bad[] = {
        "",
        "whsec_",
        "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "whsec_not base64!",
        "whsec_A",
        /* 96 bytes decoded: over WEBHOOK_KEY_MAX */
        "whsec_"
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    };
    char sig[WEBHOOK_SIGNATURE_LEN + 1];

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(webhook_sign(bad[i], "id", 1, "x", 1, sig) == -1, "secret \"%s\" accepted", bad[i]);
}

static void
test_secret_new(void)
{
    char a[WEBHOOK_SECRET_LEN + 1], b[WEBHOOK_SECRET_LEN + 1], sig[WEBHOOK_SIGNATURE_LEN + 1];

    CHECK(webhook_sign_secret_new(a) == 0 && webhook_sign_secret_new(b) == 0, "secret_new failed");
    CHECK(strlen(a) == WEBHOOK_SECRET_LEN && strncmp(a, "whsec_", 6) == 0, "shape: %s", a);
    CHECK(strcmp(a, b) != 0, "two secrets alike: %s", a);
    CHECK(webhook_sign(a, "id", 1, "x", 1, sig) == 0, "a new secret does not sign");
}

static int
public_addr(const char *text)
{
    struct sockaddr_storage ss;

    memset(&ss, 0, sizeof ss);
    if (strchr(text, ':') != NULL) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        s6->sin6_family = AF_INET6;
        if (inet_pton(AF_INET6, text, &s6->sin6_addr) != 1)
            return -1;
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        s4->sin_family = AF_INET;
        if (inet_pton(AF_INET, text, &s4->sin_addr) != 1)
            return -1;
    }
    return netguard_public((struct sockaddr *)&ss) ? 1 : 0;
}

static void
test_netguard(void)
{
    static const struct {
        const char *addr;
        int public;
    } table[] = {
        {"93.184.216.34", 1},
        {"8.8.8.8", 1},
        {"1.1.1.1", 1},
        {"100.63.255.255", 1},
        {"172.15.0.1", 1},
        {"172.32.0.1", 1},
        {"0.0.0.0", 0},
        {"127.0.0.1", 0},
        {"127.255.255.254", 0},
        {"10.0.0.1", 0},
        {"172.16.0.1", 0},
        {"172.31.255.255", 0},
        {"192.168.1.1", 0},
        {"100.64.0.1", 0},
        {"100.127.255.255", 0},
        {"169.254.169.254", 0},
        {"224.0.0.1", 0},
        {"255.255.255.255", 0},
        {"240.0.0.1", 0},
        {"2606:4700::1111", 1},
        {"2001:4860:4860::8888", 1},
        {"::", 0},
        {"::1", 0},
        {"fc00::1", 0},
        {"fd12:3456::1", 0},
        {"fe80::1", 0},
        {"ff02::1", 0},
        {"::ffff:127.0.0.1", 0},
        {"::ffff:10.1.2.3", 0},
        {"::ffff:8.8.8.8", 1},
        {"64:ff9b::7f00:1", 0},
        {"64:ff9b::808:808", 1},
        /* 6to4 and Teredo are judged by the IPv4 addresses they carry. */
        {"2002:7f00:1::", 0},
        {"2002:a00:1::1", 0},
        {"2002:c0a8:101::1", 0},
        {"2002:a9fe:a9fe::", 0},
        {"2002:808:808::1", 1},
        {"2001:0:4136:e378:8000:63bf:80ff:fffe", 0}, /* client ~0x80fffffe = 127.0.0.1 */
        {"2001:0:4136:e378:8000:63bf:f5ff:fffe", 0}, /* client 10.0.0.1 */
        {"2001:0:a00:1:8000:63bf:f7f7:f7f7", 0},     /* server 10.0.0.1, client 8.8.8.8 */
        {"2001:0:4136:e378:8000:63bf:f7f7:f7f7", 1}, /* server 65.54.227.120, client 8.8.8.8 */
        {"64:ff9b:1::a00:1", 0},
        {"100::1", 0},
    };

    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        int got = public_addr(table[i].addr);
        CHECK(got == table[i].public, "%s: public=%d, want %d", table[i].addr, got,
              table[i].public);
    }
}

static void
test_url_check(void)
{
    static const struct {
        const char *url;
        bool allow_private;
        int want;
    } table[] = {
        {"https://93.184.216.34/hook", false, 0},
        {"http://93.184.216.34:8080/a?b=c", false, 0},
        {"http://127.0.0.1/hook", false, -1},
        {"http://127.0.0.1/hook", true, 0},
        {"http://[::1]:9/x", false, -1},
        {"http://[::1]:9/x", true, 0},
        {"http://10.0.0.8/", false, -1},
        {"ftp://93.184.216.34/", true, -1},
        {"http://user:pw@93.184.216.34/", true, -1},
        {"http://:80/", true, -1},
        {"/relative", true, -1},
        {"", true, -1},
    };
    char why[WHY_MAX];

    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        why[0] = '\0';
        int got = webhook_url_check(table[i].url, table[i].allow_private, why, sizeof why);
        CHECK(got == table[i].want, "%s (allow_private=%d): %d, want %d (%s)", table[i].url,
              table[i].allow_private, got, table[i].want, why);
        CHECK(got == 0 || why[0] != '\0', "%s refused without a reason", table[i].url);
    }
}

/* Under an allow-list: networks judged on the resolved addresses, names on the URL's host, and a
 * refusal names the address and the setting. */
static void
test_target_check(void)
{
    struct netguard_allow a;
    char why[WHY_MAX];

    CHECK(netguard_allow_parse("127.0.0.0/8, localhost", &a, why, sizeof why) == 0, "parse");
    CHECK(webhook_target_check("http://127.0.0.1:9/x", &a, why, sizeof why) == 0, "127/8: %s", why);
    CHECK(webhook_target_check("http://localhost:9/x", &a, why, sizeof why) == 0, "by name: %s",
          why);
    CHECK(webhook_target_check("http://[::1]:9/x", &a, why, sizeof why) == -1 &&
              strstr(why, "::1") != NULL && strstr(why, "TOCSIN_WEBHOOK_ALLOW_NETS") != NULL,
          "::1 not listed: %s", why);
    CHECK(webhook_target_check("http://10.0.0.8/", &a, why, sizeof why) == -1 &&
              strstr(why, "10.0.0.8") != NULL,
          "10.0.0.8: %s", why);
    CHECK(webhook_target_check("https://93.184.216.34/hook", NULL, why, sizeof why) == 0,
          "public without a list");
    CHECK(webhook_target_check("ftp://127.0.0.1/", &a, why, sizeof why) == -1, "scheme first");
    a.all = true;
    CHECK(webhook_target_check("http://10.0.0.8/", &a, why, sizeof why) == 0, "all");
    char host[64];
    CHECK(webhook_host("http://[::1]:9/x", host, sizeof host) == 0 && strcmp(host, "::1") == 0,
          "v6 host %s", host);
    CHECK(webhook_host("https://Hooks.Example:443/", host, sizeof host) == 0 &&
              strcasecmp(host, "hooks.example") == 0,
          "host %s", host);
    CHECK(webhook_host("/relative", host, sizeof host) == -1, "no host");
}

/* The request carries a traceparent whose trace id is the webhook-id's, on every attempt. */
static void
test_request_traceparent(void)
{
    struct webhook_message m = {
        "http://127.0.0.1:9/", "rem_42_1767225600000", 1767225600, "v1,abc", "{}", 2};
    struct webhook_request_buf b1, b2;
    struct outbound_request r1, r2;
    char trace1[TRACE_ID_LEN + 1], trace2[TRACE_ID_LEN + 1];
    const char *tp1 = NULL, *tp2 = NULL;

    CHECK(webhook_request(&m, &b1, &r1, 1000) == 0 && webhook_request(&m, &b2, &r2, 1000) == 0,
          "built");
    for (size_t i = 0; i < OUTBOUND_HEADERS_MAX && r1.headers[i] != NULL; i++)
        if (strncmp(r1.headers[i], "traceparent: ", 13) == 0)
            tp1 = r1.headers[i] + 13;
    for (size_t i = 0; i < OUTBOUND_HEADERS_MAX && r2.headers[i] != NULL; i++)
        if (strncmp(r2.headers[i], "traceparent: ", 13) == 0)
            tp2 = r2.headers[i] + 13;
    CHECK(tp1 != NULL && tp2 != NULL, "traceparent header");
    if (tp1 != NULL && tp2 != NULL) {
        CHECK(trace_parent_parse(tp1, trace1, NULL) == 0 &&
                  trace_parent_parse(tp2, trace2, NULL) == 0,
              "valid: %s %s", tp1, tp2);
        CHECK(strcmp(trace1, trace2) == 0 && strcmp(tp1, tp2) != 0,
              "one trace id, two spans: %s %s", tp1, tp2);
    }
}

/* An id webhook_sign takes may still be too long for its header line: webhook_request says so
 * (-1), a failure of its own that channel.c reports apart from an unusable secret. */
static void
test_request_id_too_long(void)
{
    char id[WEBHOOK_ID_MAX + 8], sig[WEBHOOK_SIGNATURE_LEN + 1];
    struct webhook_request_buf b;
    struct outbound_request r;

    memset(id, 'i', sizeof id - 1);
    id[sizeof id - 1] = '\0';
    struct webhook_message m = {"http://127.0.0.1:9/", id, 1, sig, "{}", 2};
    CHECK(webhook_sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", id, 1, "{}", 2, sig) == 0,
          "the id is signed");
    CHECK(webhook_request(&m, &b, &r, 1000) == -1, "its header line does not fit");
    id[WEBHOOK_ID_MAX - 1] = '\0';
    CHECK(webhook_request(&m, &b, &r, 1000) == 0, "an id shorter than WEBHOOK_ID_MAX fits");
}

int
main(void)
{
    CHECK(outbound_global_init() == 0, "outbound_global_init");
    if (fails > 0)
        return check_summary("test_webhook");
    test_sign_vector();
    test_sign_bad_secrets();
    test_secret_new();
    test_netguard();
    test_url_check();
    test_target_check();
    test_request_traceparent();
    test_request_id_too_long();
    return check_summary("test_webhook");
}
