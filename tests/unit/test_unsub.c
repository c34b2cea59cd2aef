/* test_unsub.c -- the unsubscribe token: a known answer computed outside tocsin (Python's hmac
 * over the layout unsub.h describes), round trips, the previous secret verifying and signing
 * nothing, and every kind of bad text refused: each character changed, every truncation, another
 * secret's token, another format, tenant 0, a NUL in the participant, a participant at its bound
 * and one past it, a text one past UNSUB_TOKEN_MAX. */
#include <stdbool.h>
#include <string.h>

#include "check.h"
#include "crypto.h"
#include "unsub.h"

#define SECRET "0123456789abcdef0123456789abcdef"
#define OTHER "fedcba9876543210fedcba9876543210"

static const struct unsub_keys keys = {SECRET, NULL};

static struct unsub_subject
subject(const char *participant)
{
    struct unsub_subject s = {42, 1764806400, ""};

    strcpy(s.participant, participant);
    return s;
}

static void
test_known_answer(void)
{
    /* python3: raw = b"\x01" + struct.pack(">QQ", 42, 1764806400) + b"ada@example";
     * mac = hmac.new(SECRET, b"tocsin-unsubscribe" + raw, sha256).digest()[:16];
     * base64.urlsafe_b64encode(raw + mac).rstrip(b"=") */
    static const char want[] = "AQAAAAAAAAAqAAAAAGkwzwBhZGFAZXhhbXBsZc5OFKfxjlDBve0aikUwzPU";
    struct unsub_subject s = subject("ada@example"), got;
    char tok[UNSUB_TOKEN_MAX + 1];

    CHECK(unsub_token_make(SECRET, &s, tok) == strlen(want), "length %zu", strlen(tok));
    CHECK(strcmp(tok, want) == 0, "token %s", tok);
    CHECK(unsub_token_parse(&keys, want, strlen(want), &got) == UNSUB_OK, "parse");
    CHECK(got.tenant_id == 42 && got.issued_s == 1764806400 &&
              strcmp(got.participant, "ada@example") == 0,
          "subject %lld %lld %s", (long long)got.tenant_id, (long long)got.issued_s,
          got.participant);
}

static void
test_alterations(void)
{
    struct unsub_subject s = subject("bob"), got;
    char tok[UNSUB_TOKEN_MAX + 1], bad[UNSUB_TOKEN_MAX + 1];
    size_t n = unsub_token_make(SECRET, &s, tok);

    for (size_t i = 0; i < n; i++) {
        memcpy(bad, tok, n + 1);
        bad[i] = bad[i] == 'A' ? 'B' : 'A';
        CHECK(unsub_token_parse(&keys, bad, n, &got) != UNSUB_OK, "changed at %zu accepted", i);
    }
    for (size_t len = 0; len < n; len++)
        CHECK(unsub_token_parse(&keys, tok, len, &got) != UNSUB_OK, "cut to %zu accepted", len);
    memcpy(bad, tok, n + 1);
    bad[n / 2] = '+'; /* standard base64, not base64url */
    CHECK(unsub_token_parse(&keys, bad, n, &got) == UNSUB_MALFORMED, "alphabet");
}

static void
test_secrets(void)
{
    struct unsub_subject s = subject("cy"), got;
    char tok[UNSUB_TOKEN_MAX + 1];
    size_t n = unsub_token_make(OTHER, &s, tok);
    const struct unsub_keys rotated = {SECRET, OTHER}, none = {"", NULL};

    CHECK(n > 0, "made under the other secret");
    CHECK(unsub_token_parse(&keys, tok, n, &got) == UNSUB_FORGED, "a foreign secret's token");
    CHECK(unsub_token_parse(&rotated, tok, n, &got) == UNSUB_OK &&
              strcmp(got.participant, "cy") == 0,
          "the previous secret verifies");
    CHECK(unsub_token_parse(&none, tok, n, &got) == UNSUB_FORGED, "no secret verifies nothing");
    CHECK(unsub_token_make("short", &s, tok) == 0, "a secret under UNSUB_SECRET_MIN signs");
    char big[UNSUB_SECRET_MAX + 2];
    memset(big, 'k', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    CHECK(unsub_token_make(big, &s, tok) == 0, "a secret past UNSUB_SECRET_MAX signs");
    big[UNSUB_SECRET_MAX] = '\0';
    CHECK(unsub_token_make(big, &s, tok) > 0, "a secret at UNSUB_SECRET_MAX does not sign");
}

/* A token of raw's first n bytes with a valid MAC under SECRET: fields the maker never writes. */
static size_t
forge_signed(uint8_t *raw, size_t n, char out[UNSUB_TOKEN_MAX + 1])
{
    uint8_t full[CRYPTO_SHA256_LEN];
    const struct crypto_part parts[] = {{"tocsin-unsubscribe", 18}, {raw, n}};

    crypto_hmac_sha256(SECRET, strlen(SECRET), parts, 2, full);
    memcpy(raw + n, full, UNSUB_MAC_LEN);
    return b64url_encode(raw, n + UNSUB_MAC_LEN, out);
}

static void
test_fields(void)
{
    uint8_t raw[UNSUB_RAW_MAX + 8] = {UNSUB_FORMAT, 0, 0, 0, 0, 0, 0, 0, 7};
    char tok[UNSUB_TOKEN_MAX + 8];
    struct unsub_subject got;

    memcpy(raw + UNSUB_HEAD_LEN, "dee", 3);
    size_t n = forge_signed(raw, UNSUB_HEAD_LEN + 3, tok);
    CHECK(unsub_token_parse(&keys, tok, n, &got) == UNSUB_OK && got.tenant_id == 7, "baseline");
    raw[0] = 2;
    n = forge_signed(raw, UNSUB_HEAD_LEN + 3, tok);
    CHECK(unsub_token_parse(&keys, tok, n, &got) == UNSUB_MALFORMED, "format 2");
    raw[0] = UNSUB_FORMAT;
    raw[8] = 0;
    n = forge_signed(raw, UNSUB_HEAD_LEN + 3, tok);
    CHECK(unsub_token_parse(&keys, tok, n, &got) == UNSUB_MALFORMED, "tenant 0");
    raw[8] = 7;
    raw[UNSUB_HEAD_LEN + 1] = '\0';
    n = forge_signed(raw, UNSUB_HEAD_LEN + 3, tok);
    CHECK(unsub_token_parse(&keys, tok, n, &got) == UNSUB_MALFORMED, "NUL in the participant");
    n = forge_signed(raw, UNSUB_HEAD_LEN, tok);
    CHECK(unsub_token_parse(&keys, tok, n, &got) == UNSUB_MALFORMED, "no participant");
    memset(raw + UNSUB_HEAD_LEN, 'p', UNSUB_PARTICIPANT_MAX + 1);
    n = forge_signed(raw, UNSUB_HEAD_LEN + UNSUB_PARTICIPANT_MAX + 1, tok);
    CHECK(n > UNSUB_TOKEN_MAX, "one past the bound is longer");
    CHECK(unsub_token_parse(&keys, tok, n, &got) == UNSUB_MALFORMED, "participant one past");
}

static void
test_bounds(void)
{
    struct unsub_subject s = subject(""), got;
    char tok[UNSUB_TOKEN_MAX + 1];

    memset(s.participant, 'x', UNSUB_PARTICIPANT_MAX);
    s.participant[UNSUB_PARTICIPANT_MAX] = '\0';
    size_t n = unsub_token_make(SECRET, &s, tok);
    CHECK(n == UNSUB_TOKEN_MAX, "a participant at the bound makes %zu characters", n);
    CHECK(unsub_token_parse(&keys, tok, n, &got) == UNSUB_OK &&
              strlen(got.participant) == UNSUB_PARTICIPANT_MAX,
          "at the bound");
    s.participant[0] = '\0';
    CHECK(unsub_token_make(SECRET, &s, tok) == 0, "an empty participant");
    s = subject("ok");
    s.tenant_id = 0;
    CHECK(unsub_token_make(SECRET, &s, tok) == 0, "tenant 0");
    s.tenant_id = 1;
    s.issued_s = -1;
    CHECK(unsub_token_make(SECRET, &s, tok) == 0, "a negative issue time");
}

int
main(void)
{
    test_known_answer();
    test_alterations();
    test_secrets();
    test_fields();
    test_bounds();
    return check_summary("test_unsub");
}
