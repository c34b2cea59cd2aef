/* test_apikey.c -- key generation, shape checks, tenant names and the ETag list matcher. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "apikey.h"
#include "check.h"
#include "http_reply.h"

int
main(void)
{
    char key[APIKEY_LEN + 1], prefix[APIKEY_PREFIX_LEN + 1], parsed[APIKEY_PREFIX_LEN + 1];
    CHECK(apikey_generate(key, prefix) == 0 && strlen(key) == APIKEY_LEN &&
              apikey_parse(key, strlen(key), parsed) == 0 && strcmp(parsed, prefix) == 0,
          "generate/parse round trip: %s", key);
    const char *bad[] = {"",
                         "tsk_",
                         "Bearer x",
                         "tsk_0123456g_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                         "tsk_01234567-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                         "tsk_01234567_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA+",
                         "tsk_01234567_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK(apikey_parse(bad[i], strlen(bad[i]), parsed) != 0, "accepted bad key %zu", i);
    }
    static const struct {
        const char *header;
        int weak_ok, want;
    } etags[] = {
        {"\"abc\"", 0, 1},
        {"W/\"abc\"", 1, 1},
        {"W/\"abc\"", 0, 0},
        {"\"x\", \"abc\"", 0, 1},
        {"*", 0, 1},
        {"\"abcd\"", 0, 0},
        {"abc", 0, 0},
        {"", 0, 0},
        {" , ,\"abc\" ", 0, 1},
    };
    for (size_t i = 0; i < sizeof(etags) / sizeof(etags[0]); i++) {
        CHECK(http_reply_etag_matches(etags[i].header, "\"abc\"", etags[i].weak_ok) ==
                  etags[i].want,
              "etag case %zu: %s", i, etags[i].header);
    }
    /* Tenant names: bounded like every other name; control bytes would forge `keys list` lines. */
    static const struct {
        const char *name;
        bool want;
    } tenants[] = {
        {"acme", true},
        {"Acme_Corp-2.eu", true},
        {"", false},
        {"evil\nprefix\tother\t0\tlive", false},
        {"esc\x1b[31m", false},
        {"tab\there", false},
        {"space here", false},
        {"caf\xc3\xa9", false},
        {"x\x7f", false},
    };
    for (size_t i = 0; i < sizeof(tenants) / sizeof(tenants[0]); i++) {
        CHECK(apikey_tenant_name_valid(tenants[i].name) == tenants[i].want, "tenant name case %zu",
              i);
    }
    char name[APIKEY_TENANT_NAME_MAX + 2];
    memset(name, 'n', sizeof(name) - 1);
    name[APIKEY_TENANT_NAME_MAX] = '\0';
    CHECK(apikey_tenant_name_valid(name),
          "a tenant name of APIKEY_TENANT_NAME_MAX bytes is refused");
    name[APIKEY_TENANT_NAME_MAX] = 'n';
    name[APIKEY_TENANT_NAME_MAX + 1] = '\0';
    CHECK(!apikey_tenant_name_valid(name),
          "a tenant name one byte over APIKEY_TENANT_NAME_MAX is accepted");
    return check_summary("test_apikey");
}
