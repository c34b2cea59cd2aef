/* jwt_tool.c -- a command-line door to jwt.c for tests that compare it with other JWT
 * implementations (tests/api/jwt_cross.test.mjs against the npm jose library). Built with the
 * tests, never installed. The key is the UTF-8 bytes of its argument, as for a signing key.
 *   jwt_tool verify KEY AUDIENCE MAX_LIFETIME_S NOW_S TOKEN
 *       exit 0 and one JSON line {"kid","sub","scope","iat","exp","mtg"}; or exit 1 and the
 *       refusal's enum name (JWT_E_...) on stdout
 *   jwt_tool mint KEY KID AUDIENCE SUB SCOPE IAT EXP [MEETING_ID...]
 *       exit 0 and the token on stdout; or exit 1
 * Usage errors exit 2. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jwt.h"

#define LEEWAY_S 30

static const char *const error_names[] = {
#define X(name, text) [name] = #name,
    JWT_ERRORS(X)
#undef X
};

static int
usage(void)
{
    fprintf(stderr, "usage: jwt_tool verify KEY AUDIENCE MAX_LIFETIME_S NOW_S TOKEN\n"
                    "       jwt_tool mint KEY KID AUDIENCE SUB SCOPE IAT EXP [MEETING_ID...]\n");
    return 2;
}

/* A decimal int64 argument, or -1 with a message. */
static int
number(const char *text, int64_t *out)
{
    char *end;
    long long v = strtoll(text, &end, 10);

    if (end == text || *end != '\0') {
        fprintf(stderr, "jwt_tool: not a number: %s\n", text);
        return -1;
    }
    *out = v;
    return 0;
}

static int
verify(char **argv)
{
    struct jwt_policy p = {argv[1], 0, LEEWAY_S};
    struct jwt_claims c = {0}; /* read only after JWT_OK; zeroed for cppcheck's sake */
    char kid[JWT_KID_MAX + 1], scope[JWT_SCOPE_TEXT_MAX];
    int64_t now;
    enum jwt_error e;

    if (number(argv[2], &p.max_lifetime_s) != 0 || number(argv[3], &now) != 0)
        return 2;
    e = jwt_peek_kid(argv[4], strlen(argv[4]), kid);
    if (e == JWT_OK)
        e = jwt_verify(argv[4], strlen(argv[4]), argv[0], strlen(argv[0]), &p, now, &c);
    if (e != JWT_OK || jwt_scopes_format(c.scopes, scope) != 0) {
        printf("%s\n", error_names[e]);
        return 1;
    }
    json_t *mtg = json_array();
    for (size_t i = 0; i < c.n_mtg; i++)
        json_array_append_new(mtg, json_string(c.mtg[i]));
    json_t *out = json_pack("{s:s, s:s, s:s, s:I, s:I, s:o}", "kid", kid, "sub", c.sub, "scope",
                            scope, "iat", (json_int_t)c.iat, "exp", (json_int_t)c.exp, "mtg", mtg);
    char *text = out != NULL ? json_dumps(out, JSON_COMPACT) : NULL;
    if (text == NULL)
        return 1;
    printf("%s\n", text);
    free(text);
    json_decref(out);
    return 0;
}

static int
mint(int argc, char **argv)
{
    struct jwt_claims c;
    char *tok;

    memset(&c, 0, sizeof c);
    if (strlen(argv[3]) > JWT_SUB_BYTES_MAX || argc - 7 > JWT_MTG_MAX ||
        jwt_scopes_parse(argv[4], strlen(argv[4]), &c.scopes) != 0 ||
        number(argv[5], &c.iat) != 0 || number(argv[6], &c.exp) != 0)
        return 2;
    memcpy(c.sub, argv[3], strlen(argv[3]) + 1);
    for (int i = 7; i < argc; i++) {
        if (strlen(argv[i]) > MEETING_ID_LEN)
            return 2; /* not cut to a valid id */
        memcpy(c.mtg[c.n_mtg++], argv[i], strlen(argv[i]) + 1);
    }
    tok = jwt_mint(argv[0], strlen(argv[0]), argv[1], argv[2], &c);
    if (tok == NULL)
        return 1;
    printf("%s\n", tok);
    free(tok);
    return 0;
}

int
main(int argc, char **argv)
{
    if (argc == 7 && strcmp(argv[1], "verify") == 0)
        return verify(argv + 2);
    if (argc >= 9 && strcmp(argv[1], "mint") == 0)
        return mint(argc - 2, argv + 2);
    return usage();
}
