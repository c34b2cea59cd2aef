/* redis_url.h -- TOCSIN_REDIS_URL parsed by libcurl's URL API (the only libcurl use besides
 * outbound.c and webhook.c): redis[s]://[[user]:password@]host[:port][/db], percent-decoded, IPv6
 * hosts in brackets; rediss:// means TLS (core/transport.c). The Sentinel form
 * redis[s]-sentinel://[[user]:password@]host[:port][,host[:port]...]/master[/db] names the
 * Sentinels to ask for the master's address (mirror/sentinel.h); its credentials are the data
 * nodes' (a Sentinel's own password is a setting of its own, config.c), and rediss-sentinel://
 * speaks TLS to both. The Cluster form redis[s]-cluster://[[user]:password@]host[:port][,...][/]
 * names seed nodes to ask for the slot map (mirror/cluster.h); Cluster has database 0 only, so
 * it takes no db. Pure: no I/O, no logging. */
#ifndef TOCSIN_REDIS_URL_H
#define TOCSIN_REDIS_URL_H

#include <stddef.h>

#define REDIS_URL_HOST_MAX 256 /* host name or address, NUL included */
#define REDIS_URL_CRED_MAX 256 /* user name or password after percent-decoding, NUL included */
#define REDIS_URL_DB_MAX 15    /* SELECT bound: Redis's default "databases 16" */
#define REDIS_URL_PORT_DEFAULT 6379
#define REDIS_URL_SENTINEL_PORT_DEFAULT 26379
/* Sentinels in one URL: deployments run 3 or 5; more is a typo or a list of something else. */
#define REDIS_URL_SENTINELS_MAX 16
#define REDIS_URL_MASTER_MAX 65 /* master name, NUL included: [A-Za-z0-9_.-]{1,64} */
#define REDIS_URL_TEXT_MAX                                                                         \
    8192 /* bytes of a Sentinel URL (16 hosts and percent-encoded credentials) */

struct redis_url_addr {
    char host[REDIS_URL_HOST_MAX]; /* as for struct redis_url's host */
    int port;
};

struct redis_url {
    char host[REDIS_URL_HOST_MAX]; /* without brackets; "addr%zone" for a scoped IPv6 address */
    int port;
    int db;
    char user[REDIS_URL_CRED_MAX];     /* "" = the default user (AUTH password) */
    char password[REDIS_URL_CRED_MAX]; /* "" = no AUTH */
    int tls;                           /* 1 for rediss:// and rediss-sentinel:// */
    /* The Sentinel form: host is "" and port 0 (the master's address is asked for). */
    int sentinel;                      /* 1 for redis[s]-sentinel:// */
    char master[REDIS_URL_MASTER_MAX]; /* the master name the Sentinels know it by */
    size_t n_sentinels;                /* 1..REDIS_URL_SENTINELS_MAX */
    struct redis_url_addr sentinels[REDIS_URL_SENTINELS_MAX];
    /* The Cluster form: host is "" and port 0 as with Sentinel; the seeds are in sentinels[]
     * (the same list syntax, default port 6379) and master is "". */
    int cluster; /* 1 for redis[s]-cluster:// */
};

/* Fills out from url. Returns 0, or -1 with one sentence in err saying what is wrong (never the
 * password). */
int redis_url_parse(const char *url, struct redis_url *out, char *err, size_t errlen);

#endif
