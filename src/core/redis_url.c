/* redis_url.c -- TOCSIN_REDIS_URL through curl_url(): libcurl already ships a maintained URL
 * parser (percent-decoding, bracketed IPv6, port bounds), so tocsin does not keep its own. The
 * "redis" and "rediss" schemes are unknown to libcurl, hence CURLU_NON_SUPPORT_SCHEME. The
 * Sentinel form's host list is no URL libcurl reads: it is cut at its commas here, and each host
 * (and the credentials) goes through libcurl on its own. */
#include "redis_url.h"

#include <curl/curl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define REDIS_URL_FIELD_MAX 16 /* bytes of the port and db texts we accept */

static int
fail(char *err, size_t errlen, const char *why)
{
    snprintf(err, errlen, "%s", why);
    return -1;
}

/* Copies one part of u into dst. Returns 1 when present, 0 when absent (dst = ""), -1 when it
 * does not fit or libcurl failed. */
static int
part(CURLU *u, CURLUPart what, unsigned flags, char *dst, size_t cap)
{
    char *v = NULL;
    CURLUcode rc = curl_url_get(u, what, &v, flags);
    int out = 1;

    dst[0] = '\0';
    switch (rc) {
    case CURLUE_OK:
        if (strlen(v) >= cap)
            out = -1;
        else
            strcpy(dst, v);
        break;
    case CURLUE_NO_USER:
    case CURLUE_NO_PASSWORD:
    case CURLUE_NO_PORT:
    case CURLUE_NO_QUERY:
    case CURLUE_NO_FRAGMENT:
    case CURLUE_NO_ZONEID:
        out = 0;
        break;
    default:
        out = -1;
        break;
    }
    curl_free(v);
    return out;
}

/* Strict decimal in [lo, hi]: digits only, no sign, no spaces. */
static int
number(const char *s, int lo, int hi, int *out)
{
    long v = 0;

    if (*s == '\0' || strlen(s) >= REDIS_URL_FIELD_MAX)
        return -1;
    for (; *s != '\0'; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        v = v * 10 + (*s - '0');
    }
    if (v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

/* A decoded "%00" would cut the credential short without anyone noticing: refused. */
static int
has_nul_escape(const char *url)
{
    for (const char *p = url; (p = strchr(p, '%')) != NULL; p++)
        if (p[1] == '0' && p[2] == '0')
            return 1;
    return 0;
}

/* The host of u into dst (REDIS_URL_HOST_MAX bytes), without the brackets of an IPv6 literal. */
static int
host_part(CURLU *u, char *dst, char *err, size_t errlen)
{
    char host[REDIS_URL_HOST_MAX], zone[REDIS_URL_HOST_MAX];
    size_t n;

    if (part(u, CURLUPART_HOST, 0, host, sizeof host) != 1 || host[0] == '\0')
        return fail(err, errlen, "needs a host, e.g. redis://redis:6379/0");
    n = strlen(host);
    /* libcurl decodes the escapes it understands ("%61" is "a") and keeps the rest: a '%' left
     * over is no host name, and written out again it would read as another. */
    if (host[0] != '[' && strchr(host, '%') != NULL)
        return fail(err, errlen, "the host has a '%' that is not a valid escape");
    if (host[0] == '[') { /* libcurl keeps the brackets of an IPv6 literal; hiredis wants none */
        memmove(host, host + 1, n - 2);
        host[n - 2] = '\0';
    }
    if (part(u, CURLUPART_ZONEID, 0, zone, sizeof zone) < 0 ||
        (size_t)snprintf(dst, REDIS_URL_HOST_MAX, "%s%s%s", host, zone[0] ? "%" : "", zone) >=
            REDIS_URL_HOST_MAX)
        return fail(err, errlen, "the host is too long");
    return 0;
}

/* The port of u into *port, def when it has none. */
static int
port_part(CURLU *u, int def, int *port, char *err, size_t errlen)
{
    char buf[REDIS_URL_FIELD_MAX + 1];
    int has = part(u, CURLUPART_PORT, 0, buf, sizeof buf);

    *port = def;
    if (has < 0 || (has == 1 && number(buf, 1, 65535, port) != 0))
        return fail(err, errlen, "the port must be 1..65535");
    return 0;
}

static int
credentials(CURLU *u, struct redis_url *out, char *err, size_t errlen)
{
    int has_user = part(u, CURLUPART_USER, CURLU_URLDECODE, out->user, sizeof out->user);
    int has_pw = part(u, CURLUPART_PASSWORD, CURLU_URLDECODE, out->password, sizeof out->password);

    if (has_user < 0 || has_pw < 0)
        return fail(err, errlen, "the user name or password is too long (255 bytes at most)");
    if (out->user[0] != '\0' && out->password[0] == '\0')
        return fail(err, errlen,
                    "a user name needs a password (redis://user:password@host), and a password "
                    "alone needs a colon before it (redis://:password@host)");
    return 0;
}

static int
port_db(CURLU *u, struct redis_url *out, char *err, size_t errlen)
{
    char buf[REDIS_URL_FIELD_MAX + 1];

    if (port_part(u, REDIS_URL_PORT_DEFAULT, &out->port, err, errlen) != 0)
        return -1;
    out->db = 0;
    if (part(u, CURLUPART_PATH, 0, buf, sizeof buf) < 0 ||
        (strcmp(buf, "/") != 0 && buf[0] != '\0' &&
         number(buf + 1, 0, REDIS_URL_DB_MAX, &out->db) != 0))
        return fail(err, errlen, "the path must be the database number /0../15");
    if (part(u, CURLUPART_QUERY, 0, buf, sizeof buf) != 0 ||
        part(u, CURLUPART_FRAGMENT, 0, buf, sizeof buf) != 0)
        return fail(err, errlen, "takes no query string or fragment");
    return 0;
}

/* Parses "redis://" text "/" with libcurl: how the Sentinel form reuses the one URL parser for
 * each of its hosts and for its credentials. NULL when libcurl refuses it. */
static CURLU *
piece(const char *text, size_t len)
{
    char buf[REDIS_URL_TEXT_MAX + 16];
    CURLU *u;

    if ((size_t)snprintf(buf, sizeof buf, "redis://%.*s/", (int)len, text) >= sizeof buf ||
        (u = curl_url()) == NULL)
        return NULL;
    if (curl_url_set(u, CURLUPART_URL, buf, CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK) {
        curl_url_cleanup(u);
        return NULL;
    }
    return u;
}

/* One "host[:port]" of the Sentinel list. */
static int
sentinel_host(const char *s, size_t len, int def, struct redis_url_addr *a, char *err,
              size_t errlen)
{
    CURLU *u;
    int rc;

    if (len == 0)
        return fail(err, errlen, "has an empty host in its Sentinel list");
    if ((u = piece(s, len)) == NULL)
        return fail(err, errlen, "has a Sentinel that is not host[:port]");
    rc = host_part(u, a->host, err, errlen) == 0 && port_part(u, def, &a->port, err, errlen) == 0
             ? 0
             : -1;
    curl_url_cleanup(u);
    return rc;
}

static int
sentinel_hosts(const char *s, const char *end, struct redis_url *out, char *err, size_t errlen)
{
    int def = out->cluster ? REDIS_URL_PORT_DEFAULT : REDIS_URL_SENTINEL_PORT_DEFAULT;

    for (;;) {
        const char *comma = memchr(s, ',', (size_t)(end - s));
        const char *stop = comma != NULL ? comma : end;

        if (out->n_sentinels == REDIS_URL_SENTINELS_MAX)
            return fail(err, errlen,
                        out->cluster ? "names more than 16 seed nodes"
                                     : "names more than 16 Sentinels");
        if (sentinel_host(s, (size_t)(stop - s), def, &out->sentinels[out->n_sentinels], err,
                          errlen) != 0)
            return -1;
        out->n_sentinels++;
        if (comma == NULL)
            return 0;
        s = comma + 1;
    }
}

static int
master_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '-';
}

/* "/master[/db]" (db as in redis://: /0../15, "/" alone or nothing for 0). */
static int
sentinel_path(const char *p, struct redis_url *out, char *err, size_t errlen)
{
    size_t n = 0;

    if (*p != '/')
        return fail(err, errlen, "needs the master name after the hosts: /mymaster[/db]");
    for (p++; master_char(*p); p++, n++)
        if (n + 1 == REDIS_URL_MASTER_MAX)
            return fail(err, errlen, "the master name is longer than 64 bytes");
        else
            out->master[n] = *p;
    out->master[n] = '\0';
    if (n == 0 || (*p != '\0' && *p != '/'))
        return fail(err, errlen, "the master name must be 1..64 of [A-Za-z0-9_.-]");
    if (*p == '/' && p[1] != '\0' && number(p + 1, 0, REDIS_URL_DB_MAX, &out->db) != 0)
        return fail(err, errlen, "the database number after the master name must be 0..15");
    return 0;
}

static int
sentinel_credentials(const char *s, size_t len, struct redis_url *out, char *err, size_t errlen)
{
    char buf[REDIS_URL_TEXT_MAX];
    CURLU *u;
    int rc;

    if ((size_t)snprintf(buf, sizeof buf, "%.*s@h", (int)len, s) >= sizeof buf ||
        (u = piece(buf, strlen(buf))) == NULL)
        return fail(err, errlen, "has credentials that are not [user]:password");
    rc = credentials(u, out, err, errlen);
    curl_url_cleanup(u);
    return rc;
}

/* redis[s]-sentinel://[[user]:password@]host[:port][,host[:port]...]/master[/db], and the Cluster
 * form with the same host list and no master. libcurl takes one host per URL, so the list is cut
 * here and each piece goes through it. */
static int
parse_sentinel(const char *rest, struct redis_url *out, char *err, size_t errlen)
{
    const char *slash = strchr(rest, '/'), *end = slash != NULL ? slash : rest + strlen(rest);
    const char *at = NULL;

    if (strlen(rest) >= REDIS_URL_TEXT_MAX)
        return fail(err, errlen, "is longer than 8191 bytes");
    if (strpbrk(rest, "?#") != NULL)
        return fail(err, errlen, "takes no query string or fragment");
    for (const char *p = rest; p < end; p++)
        if (*p == '@')
            at = p;
    out->sentinel = !out->cluster;
    if (at != NULL && sentinel_credentials(rest, (size_t)(at - rest), out, err, errlen) != 0)
        return -1;
    if (sentinel_hosts(at != NULL ? at + 1 : rest, end, out, err, errlen) != 0)
        return -1;
    if (!out->cluster)
        return sentinel_path(end, out, err, errlen);
    /* Cluster serves database 0 alone and refuses SELECT. */
    if (*end != '\0' && strcmp(end, "/") != 0 && strcmp(end, "/0") != 0)
        return fail(err, errlen, "a Cluster URL takes no path but / or /0 (Cluster has db 0 only)");
    return 0;
}

/* The scheme's length when url starts with redis[s]-sentinel:// or redis[s]-cluster:// (setting
 * *tls and *cluster), else 0. */
static size_t
list_scheme(const char *url, int *tls, int *cluster)
{
    static const char *const schemes[] = {"redis-sentinel://", "rediss-sentinel://",
                                          "redis-cluster://", "rediss-cluster://"};

    for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++)
        if (strncasecmp(url, schemes[i], strlen(schemes[i])) == 0) {
            *tls = (int)(i % 2);
            *cluster = i >= 2;
            return strlen(schemes[i]);
        }
    return 0;
}

int
redis_url_parse(const char *url, struct redis_url *out, char *err, size_t errlen)
{
    char scheme[REDIS_URL_FIELD_MAX];
    CURLU *u = curl_url();
    int rc = -1;

    memset(out, 0, sizeof *out);
    if (u == NULL)
        return fail(err, errlen, "out of memory");
    size_t skip = list_scheme(url, &out->tls, &out->cluster);
    if (skip > 0) {
        rc = has_nul_escape(url) ? fail(err, errlen, "must not contain %00")
                                 : parse_sentinel(url + skip, out, err, errlen);
        goto done;
    }
    if (curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK) {
        fail(err, errlen, "is not a URL of the form redis://[[user]:password@]host[:port][/db]");
        goto done;
    }
    if (part(u, CURLUPART_SCHEME, 0, scheme, sizeof scheme) != 1) {
        fail(err, errlen, "needs the scheme redis://");
        goto done;
    }
    out->tls = strcasecmp(scheme, "rediss") == 0;
    if (!out->tls && strcasecmp(scheme, "redis") != 0) {
        fail(err, errlen,
             "needs the scheme redis://, rediss:// (TLS), redis[s]-sentinel:// or "
             "redis[s]-cluster://");
        goto done;
    }
    if (has_nul_escape(url)) {
        fail(err, errlen, "must not contain %00");
        goto done;
    }
    if (host_part(u, out->host, err, errlen) == 0 && credentials(u, out, err, errlen) == 0 &&
        port_db(u, out, err, errlen) == 0)
        rc = 0;
done:
    curl_url_cleanup(u);
    return rc;
}
