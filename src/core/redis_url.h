/* redis_url.h -- TOCSIN_REDIS_URL parsed by libcurl's URL API (the only libcurl use besides
 * outbound.c and webhook.c): redis[s]://[[user]:password@]host[:port][/db], percent-decoded, IPv6
 * hosts in brackets; rediss:// means TLS (core/transport.c). Pure: no I/O, no logging. */
#ifndef TOCSIN_REDIS_URL_H
#define TOCSIN_REDIS_URL_H

#include <stddef.h>

#define REDIS_URL_HOST_MAX 256 /* host name or address, NUL included */
#define REDIS_URL_CRED_MAX 256 /* user name or password after percent-decoding, NUL included */
#define REDIS_URL_DB_MAX 15    /* SELECT bound: Redis's default "databases 16" */
#define REDIS_URL_PORT_DEFAULT 6379

struct redis_url {
    char host[REDIS_URL_HOST_MAX]; /* without brackets; "addr%zone" for a scoped IPv6 address */
    int port;
    int db;
    char user[REDIS_URL_CRED_MAX];     /* "" = the default user (AUTH password) */
    char password[REDIS_URL_CRED_MAX]; /* "" = no AUTH */
    int tls;                           /* 1 for rediss:// */
};

/* Fills out from url. Returns 0, or -1 with one sentence in err saying what is wrong (never the
 * password). */
int redis_url_parse(const char *url, struct redis_url *out, char *err, size_t errlen);

#endif
