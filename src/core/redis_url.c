/* redis_url.c -- TOCSIN_REDIS_URL through curl_url(): libcurl already ships a maintained URL
 * parser (percent-decoding, bracketed IPv6, port bounds), so tocsin does not keep its own. The
 * "redis" and "rediss" schemes are unknown to libcurl, hence CURLU_NON_SUPPORT_SCHEME. */
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

static int
host_part(CURLU *u, struct redis_url *out, char *err, size_t errlen)
{
    char host[REDIS_URL_HOST_MAX], zone[REDIS_URL_HOST_MAX];
    size_t n;

    if (part(u, CURLUPART_HOST, 0, host, sizeof host) != 1 || host[0] == '\0')
        return fail(err, errlen, "needs a host, e.g. redis://redis:6379/0");
    n = strlen(host);
    if (host[0] == '[') { /* libcurl keeps the brackets of an IPv6 literal; hiredis wants none */
        memmove(host, host + 1, n - 2);
        host[n - 2] = '\0';
    }
    if (part(u, CURLUPART_ZONEID, 0, zone, sizeof zone) < 0 ||
        (size_t)snprintf(out->host, sizeof out->host, "%s%s%s", host, zone[0] ? "%" : "", zone) >=
            sizeof out->host)
        return fail(err, errlen, "the host is too long");
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
    int has;

    out->port = REDIS_URL_PORT_DEFAULT;
    has = part(u, CURLUPART_PORT, 0, buf, sizeof buf);
    if (has < 0 || (has == 1 && number(buf, 1, 65535, &out->port) != 0))
        return fail(err, errlen, "the port must be 1..65535");
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

int
redis_url_parse(const char *url, struct redis_url *out, char *err, size_t errlen)
{
    char scheme[REDIS_URL_FIELD_MAX];
    CURLU *u = curl_url();
    int rc = -1;

    memset(out, 0, sizeof *out);
    if (u == NULL)
        return fail(err, errlen, "out of memory");
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
        fail(err, errlen, "needs the scheme redis:// or rediss:// (TLS)");
        goto done;
    }
    if (has_nul_escape(url)) {
        fail(err, errlen, "must not contain %00");
        goto done;
    }
    if (host_part(u, out, err, errlen) == 0 && credentials(u, out, err, errlen) == 0 &&
        port_db(u, out, err, errlen) == 0)
        rc = 0;
done:
    curl_url_cleanup(u);
    return rc;
}
