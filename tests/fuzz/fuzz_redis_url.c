/* fuzz_redis_url.c -- libFuzzer target for redis_url.c, all three forms: the input (up to its first
 * NUL) is parsed as TOCSIN_REDIS_URL; a refusal must say why, and an accepted URL must hold its
 * bounds (host, port and db ranges, 1..REDIS_URL_SENTINELS_MAX Sentinels or Cluster seeds (db 0
 * and no master for these), a master name of
 * [A-Za-z0-9_.-]{1,64}, no user without a password) and survive a round trip: written out again
 * with its credentials percent-encoded and IPv6 hosts bracketed, it parses to the same fields
 * (hosts after one normalisation, see round_trip).
 * Built by tests/fuzz/run.sh. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis_url.h"

#define INPUT_MAX 4096
#define OUT_MAX (4 * REDIS_URL_TEXT_MAX)

static void
check(bool ok)
{
    if (!ok)
        abort();
}

static bool
master_ok(const char *m)
{
    size_t n = strlen(m);

    if (n < 1 || n >= REDIS_URL_MASTER_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((m[i] >= 'A' && m[i] <= 'Z') || (m[i] >= 'a' && m[i] <= 'z') ||
              (m[i] >= '0' && m[i] <= '9') || m[i] == '_' || m[i] == '.' || m[i] == '-'))
            return false;
    return true;
}

static bool
addr_ok(const char *host, int port)
{
    return host[0] != '\0' && strlen(host) < REDIS_URL_HOST_MAX && port >= 1 && port <= 65535;
}

static void
bounds(const struct redis_url *u)
{
    check(u->db >= 0 && u->db <= REDIS_URL_DB_MAX);
    check(u->user[0] == '\0' || u->password[0] != '\0');
    check(!(u->sentinel && u->cluster));
    if (!u->sentinel && !u->cluster) {
        check(addr_ok(u->host, u->port));
        return;
    }
    check(u->host[0] == '\0' &&
          (u->cluster ? u->master[0] == '\0' && u->db == 0 : master_ok(u->master)));
    check(u->n_sentinels >= 1 && u->n_sentinels <= REDIS_URL_SENTINELS_MAX);
    for (size_t i = 0; i < u->n_sentinels; i++)
        check(addr_ok(u->sentinels[i].host, u->sentinels[i].port));
}

/* Appends s percent-encoded (everything but letters and digits). */
static size_t
encode(char *out, size_t n, const char *s)
{
    for (; *s != '\0'; s++)
        n += (size_t)snprintf(
            out + n, OUT_MAX - n,
            ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9'))
                ? "%c"
                : "%%%02X",
            (unsigned char)*s);
    return n;
}

/* Appends host:port, an IPv6 address in brackets with the '%' before its zone encoded (libcurl
 * hands the zone back as it was written, so the rest of it is written back as it is). */
static size_t
addr(char *out, size_t n, const char *host, int port)
{
    const char *zone = strchr(host, '%');

    if (strchr(host, ':') == NULL)
        return n + (size_t)snprintf(out + n, OUT_MAX - n, "%s:%d", host, port);
    if (zone == NULL)
        return n + (size_t)snprintf(out + n, OUT_MAX - n, "[%s]:%d", host, port);
    return n + (size_t)snprintf(out + n, OUT_MAX - n, "[%.*s%%25%s]:%d", (int)(zone - host), host,
                                zone + 1, port);
}

/* u written out again and parsed into back. */
static void
write_parse(const struct redis_url *u, struct redis_url *back)
{
    static char out[OUT_MAX];
    char err[256];
    size_t n = (size_t)snprintf(out, sizeof out, "%s%s://", u->tls ? "rediss" : "redis",
                                u->sentinel  ? "-sentinel"
                                : u->cluster ? "-cluster"
                                             : "");

    if (u->password[0] != '\0') {
        n = encode(out, n, u->user);
        n += (size_t)snprintf(out + n, sizeof out - n, ":");
        n = encode(out, n, u->password);
        n += (size_t)snprintf(out + n, sizeof out - n, "@");
    }
    if (u->sentinel || u->cluster) {
        for (size_t i = 0; i < u->n_sentinels; i++) {
            n += (size_t)snprintf(out + n, sizeof out - n, "%s", i ? "," : "");
            n = addr(out, n, u->sentinels[i].host, u->sentinels[i].port);
        }
        if (u->sentinel)
            snprintf(out + n, sizeof out - n, "/%s/%d", u->master, u->db);
    } else {
        n = addr(out, n, u->host, u->port);
        snprintf(out + n, sizeof out - n, "/%d", u->db);
    }
    check(redis_url_parse(out, back, err, sizeof err) == 0);
}

/* Everything comes back, but a host may come back normalised once: libcurl decodes a
 * percent-encoded host ("%316" is "16") but reads a bare number as an IPv4 address ("16" is
 * "0.0.0.16"), as getaddrinfo would. So the hosts are compared from the second trip on. */
static void
round_trip(const struct redis_url *u)
{
    static struct redis_url again, third;

    write_parse(u, &again);
    check(again.port == u->port && again.db == u->db && again.tls == u->tls &&
          again.sentinel == u->sentinel && again.cluster == u->cluster &&
          again.n_sentinels == u->n_sentinels && strcmp(again.user, u->user) == 0 &&
          strcmp(again.password, u->password) == 0 && strcmp(again.master, u->master) == 0);
    for (size_t i = 0; i < u->n_sentinels; i++)
        check(again.sentinels[i].port == u->sentinels[i].port);
    write_parse(&again, &third);
    check(memcmp(&again, &third, sizeof third) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char text[INPUT_MAX + 1];
    static struct redis_url u;
    char err[256] = "";
    size_t n = size < INPUT_MAX ? size : INPUT_MAX;

    memcpy(text, data, n);
    text[n] = '\0';
    if (redis_url_parse(text, &u, err, sizeof err) != 0) {
        check(err[0] != '\0');
        return 0;
    }
    bounds(&u);
    round_trip(&u);
    return 0;
}
