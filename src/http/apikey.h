/* apikey.h -- API keys: "tsk_<prefix>_<secret>", prefix 8 hex chars (shown in lists, used to
 * revoke), secret 32 random bytes base64url. Only the SHA-256 of the whole key is stored. Pure
 * apart from the random source. */
#ifndef TOCSIN_APIKEY_H
#define TOCSIN_APIKEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define APIKEY_PREFIX_LEN 8
#define APIKEY_LEN (4 + APIKEY_PREFIX_LEN + 1 + 43)
#define APIKEY_HASH_LEN 32
/* Bytes; the tenants table's bound (TENANT_NAME_MAX in db.h). */
#define APIKEY_TENANT_NAME_MAX 100

/* Makes a new key into out (APIKEY_LEN + 1 bytes) and its prefix (APIKEY_PREFIX_LEN + 1 bytes). */
int apikey_generate(char out[APIKEY_LEN + 1], char prefix[APIKEY_PREFIX_LEN + 1]);
/* Checks the shape of a presented key and extracts its prefix. 0 or -1. */
int apikey_parse(const char *key, size_t len, char prefix[APIKEY_PREFIX_LEN + 1]);
/* SHA-256 of the key bytes. */
void apikey_hash(const char *key, size_t len, uint8_t out[APIKEY_HASH_LEN]);
/* Whether name may name a tenant: 1..APIKEY_TENANT_NAME_MAX of [A-Za-z0-9_.-], like every other
 * name tocsin takes (prefixes, instance ids). Names reach logs and `keys list` (tab-separated,
 * one key per line), where a control byte could forge a line; that listing still escapes the
 * names made before this check existed. */
bool apikey_tenant_name_valid(const char *name);

#endif
