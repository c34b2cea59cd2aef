/* config.c -- reads TOCSIN_* environment variables once at start. Every numeric setting has a
 * bound; anything malformed or out of range stops the start with one line naming the variable. */
#include "config.h"
#include "db.h"
#include "email_addr.h"
#include "meeting.h"
#include "ratelimit.h"
#include "redis_url.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HOSTNAME_MAX 64

struct int_setting {
    const char *name;
    int64_t def, min, max, scale; /* value stored = parsed * scale */
    size_t offset;                /* into struct config */
    int is_int;                   /* stored as int instead of int64_t */
};

/* What a setting's number counts, named in its error when a plain range would leave a reader
 * guessing the unit (a share written "0.5" or "50%" is refused with this). */
static const struct {
    const char *name, *unit;
} int_units[] = {
    {"TOCSIN_DELIVERY_TENANT_SHARE", "percent of a delivery worker's slots, without a % sign"},
};

static const char *
unit_of(const char *name)
{
    for (size_t i = 0; i < sizeof int_units / sizeof int_units[0]; i++)
        if (strcmp(int_units[i].name, name) == 0)
            return int_units[i].unit;
    return NULL;
}

/* The rows below spell their bounds as numbers (scripts/check_maps.py reads them against
 * docs/configuration.md); where a bound is another module's limit, it is tied here. */
_Static_assert(RATELIMIT_RATE_MAX == 1000000 && RATELIMIT_BURST_MAX == 1000000,
               "TOCSIN_TENANT_RATE and TOCSIN_TENANT_BURST go up to ratelimit.h's bounds");
_Static_assert(MEETING_PARTICIPANTS_MAX == 500,
               "TOCSIN_BROWSER_PARTICIPANTS_MAX goes up to a meeting's own bound");

static const struct int_setting int_settings[] = {
    /* Each HTTP thread holds one PostgreSQL connection and waits for its commit: the thread count
     * is also how many inserts can share one WAL flush (group commit), hence more than cores. */
    {"TOCSIN_HTTP_THREADS", 16, 1, 64, 1, offsetof(struct config, http_threads), 1},
    {"TOCSIN_HTTP_CONNECTIONS_MAX", 1024, 16, 10000, 1,
     offsetof(struct config, http_connections_max), 1},
    {"TOCSIN_HTTP_TIMEOUT_S", 30, 1, 3600, 1, offsetof(struct config, http_timeout_s), 1},
    /* One address may hold an eighth of TOCSIN_HTTP_CONNECTIONS_MAX's default (streams count too),
     * so one client cannot take every connection; clients behind one proxy or NAT share its
     * address (raise this there). */
    {"TOCSIN_HTTP_CONNECTIONS_PER_ADDR", 128, 1, 100000, 1,
     offsetof(struct config, http_connections_per_addr), 1},
    {"TOCSIN_HTTP_HEADER_TIMEOUT_S", 20, 1, 300, 1, offsetof(struct config, http_header_timeout_s),
     1},
    {"TOCSIN_HTTP_BODY_TIMEOUT_S", 30, 1, 600, 1, offsetof(struct config, http_body_timeout_s), 1},
    /* A list page stops before the item that would take its body past this (http_page.h): a
     * page costs CPU and memory in proportion to its bytes, whatever its limit. */
    {"TOCSIN_PAGE_BYTES_MAX", 2097152, 65536, 67108864, 1, offsetof(struct config, page_bytes_max),
     0},
    {"TOCSIN_MIRROR_HORIZON_S", 86400, 3600, 31622400, 1000,
     offsetof(struct config, mirror_horizon_ms), 0},
    /* Recurring meetings: how far ahead occurrences get their reminder rows (series_sync.h). */
    {"TOCSIN_SERIES_WINDOW_S", 1209600, 86400, 31622400, 1000,
     offsetof(struct config, series_window_ms), 0},
    {"TOCSIN_RECON_INTERVAL_MS", 1000, 100, 3600000, 1, offsetof(struct config, recon_interval_ms),
     0},
    {"TOCSIN_RECON_FULL_INTERVAL_MS", 60000, 1000, 86400000, 1,
     offsetof(struct config, recon_full_interval_ms), 0},
    {"TOCSIN_MISSED_GRACE_MS", 60000, 0, 86400000, 1, offsetof(struct config, missed_grace_ms), 0},
    {"TOCSIN_AUTH_CACHE_MS", 2000, 0, 60000, 1, offsetof(struct config, auth_cache_ms), 0},
    {"TOCSIN_CLAIM_TTL_MS", 2000, 1000, 600000, 1, offsetof(struct config, claim_ttl_ms), 0},
    {"TOCSIN_SCHED_WINDOW_MS", 10000, 1000, 600000, 1, offsetof(struct config, sched_window_ms), 0},
    {"TOCSIN_SCHED_POLL_MS", 500, 50, 60000, 1, offsetof(struct config, sched_poll_ms), 0},
    {"TOCSIN_DELIVERY_RETRY_BASE_MS", 5000, 10, 3600000, 1,
     offsetof(struct config, delivery_retry_base_ms), 0},
    {"TOCSIN_DELIVERY_TIMEOUT_MS", 10000, 100, 60000, 1,
     offsetof(struct config, delivery_timeout_ms), 0},
    {"TOCSIN_DELIVERY_MAX_ATTEMPTS", 15, 1, 50, 1, offsetof(struct config, delivery_max_attempts),
     0},
    {"TOCSIN_DELIVERY_WORKERS", 2, 1, 64, 1, offsetof(struct config, delivery_workers), 1},
    {"TOCSIN_DELIVERY_CONCURRENCY", 256, 1, 4096, 1, offsetof(struct config, delivery_concurrency),
     1},
    {"TOCSIN_DELIVERY_RECEIVER_CONCURRENCY", 16, 1, 4096, 1,
     offsetof(struct config, delivery_per_receiver), 1},
    /* A push service carries every tenant's subscribers of one browser vendor and is built for
     * load, so its share is larger than a webhook's: a 10,000-push burst took 2.0 s with 16 and
     * 1.8 s with 64 (bench/channels.sh push, 3 replicas). */
    {"TOCSIN_DELIVERY_PUSH_SERVICE_CONCURRENCY", 64, 1, 4096, 1,
     offsetof(struct config, delivery_per_push_service), 1},
    /* A tenant's share of a worker's slots, in percent (deliver_policy_tenant_share), so that one
     * tenant's slow receivers cannot take every slot from the others: 32 webhooks answering after
     * 9 s kept another tenant's delivery waiting 16.9 s. 100 gives one tenant every slot. */
    {"TOCSIN_DELIVERY_TENANT_SHARE", 50, 1, 100, 1, offsetof(struct config, delivery_tenant_share),
     1},
    {"TOCSIN_WEBHOOK_ALLOW_PRIVATE", 0, 0, 1, 1, offsetof(struct config, webhook_allow_private), 1},
    {"TOCSIN_SHUTDOWN_GRACE_MS", 10000, 0, 120000, 1, offsetof(struct config, shutdown_grace_ms),
     0},
    /* Each open stream is one connection on top of TOCSIN_HTTP_CONNECTIONS_MAX (http_server.c):
     * streams never take the API's connections. */
    {"TOCSIN_STREAMS_MAX", 10000, 1, 100000, 1, offsetof(struct config, streams_max), 1},
    {"TOCSIN_STREAMS_PER_PARTICIPANT", 5, 1, 1000, 1,
     offsetof(struct config, streams_per_participant), 1},
    /* One tenant's share of a replica's streams (hub.h), so that its streams cannot take every
     * other tenant's place. Off (0) by default, as the other limits per tenant: a deployment that
     * serves one tenant must not find half its streams refused by surprise. */
    {"TOCSIN_STREAMS_PER_TENANT", 0, 0, 100000, 1, offsetof(struct config, streams_per_tenant), 1},
    {"TOCSIN_STREAM_BUFFER_MAX", 65536, 4096, 16777216, 1,
     offsetof(struct config, stream_buffer_max), 0},
    {"TOCSIN_STREAM_MAX_AGE_S", 900, 10, 86400, 1000, offsetof(struct config, stream_max_age_ms),
     0},
    {"TOCSIN_STREAM_HEARTBEAT_MS", 20000, 100, 60000, 1,
     offsetof(struct config, stream_heartbeat_ms), 0},
    {"TOCSIN_STREAM_RETRY_MS", 3000, 0, 60000, 1, offsetof(struct config, stream_retry_ms), 0},
    {"TOCSIN_STREAM_POLL_MS", 1000, 50, 60000, 1, offsetof(struct config, stream_poll_ms), 0},
    {"TOCSIN_DEMO", 0, 0, 1, 1, offsetof(struct config, demo), 1},
    /* PostgreSQL may start after tocsin (compose, Kubernetes): how long start-up waits for it. */
    {"TOCSIN_DB_WAIT_S", 60, 0, 3600, 1000, offsetof(struct config, db_wait_ms), 0},
    {"TOCSIN_MIGRATE_ON_START", 1, 0, 1, 1, offsetof(struct config, migrate_on_start), 1},
    /* Through PgBouncer in transaction mode: no named prepared statements, no session SET. */
    {"TOCSIN_DB_POOLED", 0, 0, 1, 1, offsetof(struct config, db_pooled), 1},
    {"TOCSIN_WEBPUSH_ALLOW_PRIVATE", 0, 0, 1, 1, offsetof(struct config, webpush_allow_private), 1},
    {"TOCSIN_SMTP_REQUIRE_TLS", 0, 0, 1, 1, offsetof(struct config, smtp_require_tls), 1},
    /* Retention: a replayed POST must still find its key a day later; records for a week. */
    {"TOCSIN_RETENTION_IDEMPOTENCY_S", 86400, 3600, 2592000, 1,
     offsetof(struct config, retention_idempotency_s), 0},
    {"TOCSIN_RETENTION_DELIVERIES_S", 604800, 3600, 31622400, 1,
     offsetof(struct config, retention_deliveries_s), 0},
    {"TOCSIN_RETENTION_DELETED_MEETINGS_S", 604800, 3600, 31622400, 1,
     offsetof(struct config, retention_meetings_s), 0},
    {"TOCSIN_RETENTION_STREAM_EVENTS_S", 604800, 3600, 31622400, 1,
     offsetof(struct config, retention_stream_events_s), 0},
    {"TOCSIN_RETENTION_INTERVAL_S", 60, 1, 86400, 1000,
     offsetof(struct config, retention_interval_ms), 0},
    {"TOCSIN_RETENTION_BATCH", 1000, 10, 10000, 1, offsetof(struct config, retention_batch), 1},
    /* A webhook failing without one success this long is turned off (retention's pass). */
    {"TOCSIN_WEBHOOK_DISABLE_AFTER_S", 432000, 1, 31622400, 1,
     offsetof(struct config, webhook_disable_after_s), 0},
    /* A rotated secret still signs this long beside the new one. */
    {"TOCSIN_WEBHOOK_ROTATE_OVERLAP_S", 86400, 1, 2592000, 1,
     offsetof(struct config, webhook_rotate_overlap_s), 0},
    /* What one tenant may take (http_rate.h, meetings_post.c): off by default, as a self-hosted
     * deployment's one tenant must not be throttled by surprise. */
    {"TOCSIN_TENANT_RATE", 0, 0, 1000000, 1, offsetof(struct config, tenant_rate), 0},
    {"TOCSIN_TENANT_BURST", 100, 1, 1000000, 1, offsetof(struct config, tenant_burst), 0},
    {"TOCSIN_TENANT_MEETINGS_MAX", 0, 0, 100000000, 1, offsetof(struct config, tenant_meetings_max),
     0},
    /* What a browser token may write (browser_writes.h): no email unless the operator says so,
     * and meetings small enough for a person to invite by hand. */
    {"TOCSIN_BROWSER_EMAIL", 0, 0, 1, 1, offsetof(struct config, browser_email), 1},
    {"TOCSIN_BROWSER_PARTICIPANTS_MAX", 50, 1, 500, 1,
     offsetof(struct config, browser_participants_max), 1},
};

static int
fail(char *err, size_t errlen, const char *name, const char *why)
{
    snprintf(err, errlen, "%s: %s", name, why);
    return -1;
}

/* Strict decimal: no sign, no spaces, no trailing bytes. */
static int
parse_int(const char *s, int64_t *out)
{
    char *end;
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return -1;
    *out = v;
    return 0;
}

static int
load_ints(struct config *cfg, char *err, size_t errlen)
{
    for (size_t i = 0; i < sizeof(int_settings) / sizeof(int_settings[0]); i++) {
        const struct int_setting *s = &int_settings[i];
        const char *env = getenv(s->name);
        int64_t v = s->def;
        char why[160];
        if (env != NULL && (parse_int(env, &v) != 0 || v < s->min || v > s->max)) {
            const char *unit = unit_of(s->name);
            snprintf(why, sizeof(why), "must be an integer from %lld to %lld%s%s%s",
                     (long long)s->min, (long long)s->max, unit ? " (" : "", unit ? unit : "",
                     unit ? ")" : "");
            return fail(err, errlen, s->name, why);
        }
        char *field = (char *)cfg + s->offset;
        if (s->is_int)
            *(int *)(void *)field = (int)v;
        else
            *(int64_t *)(void *)field = v * s->scale;
    }
    return 0;
}

/* "host:port", host may be "[v6]". */
static int
parse_addr(struct config *cfg, const char *s)
{
    const char *colon = strrchr(s, ':');
    int64_t port;
    if (colon == NULL || colon == s || parse_int(colon + 1, &port) != 0 || port < 1 || port > 65535)
        return -1;
    size_t hlen = (size_t)(colon - s);
    if (s[0] == '[') {
        if (hlen < 3 || s[hlen - 1] != ']')
            return -1;
        s++;
        hlen -= 2;
    }
    if (hlen >= sizeof(cfg->http_host))
        return -1;
    memcpy(cfg->http_host, s, hlen);
    cfg->http_host[hlen] = '\0';
    cfg->http_port = (int)port;
    return 0;
}

static int
copy_str(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n >= cap)
        return -1;
    memcpy(dst, src, n + 1);
    return 0;
}

/* The Redis URL through redis_url.c; the reason goes after the variable's name. */
static int
load_redis_url(struct config *cfg, const char *url, char *err, size_t errlen)
{
    struct redis_url ru;
    char why[CONFIG_ERR_MAX];

    _Static_assert(sizeof ru.host <= sizeof cfg->redis_host, "redis host fits the config");
    _Static_assert(sizeof ru.password <= sizeof cfg->redis_password, "password fits the config");
    _Static_assert(sizeof ru.user <= sizeof cfg->redis_user, "user fits the config");
    if (redis_url_parse(url, &ru, why, sizeof why) != 0)
        return fail(err, errlen, "TOCSIN_REDIS_URL", why);
    strcpy(cfg->redis_host, ru.host);
    strcpy(cfg->redis_user, ru.user);
    strcpy(cfg->redis_password, ru.password);
    cfg->redis_port = ru.port;
    cfg->redis_db = ru.db;
    cfg->redis_tls = ru.tls;
    cfg->redis_sentinels_n = ru.sentinel ? ru.n_sentinels : 0;
    memcpy(cfg->redis_sentinels, ru.sentinels, sizeof ru.sentinels);
    strcpy(cfg->redis_master, ru.master);
    cfg->redis_seeds_n = ru.cluster ? ru.n_sentinels : 0;
    memcpy(cfg->redis_seeds, ru.sentinels, sizeof ru.sentinels);
    return 0;
}

/* A setting that only a form of TOCSIN_REDIS_URL takes (allowed: the URL has it, else why_not)
 * copied into dst of cap bytes (else too_long). Unset or empty: nothing to do. */
static int
url_setting(char *dst, size_t cap, const char *name, const char *v, int allowed,
            const char *why_not, const char *too_long, char *err, size_t errlen)
{
    if (v == NULL || v[0] == '\0')
        return 0;
    if (!allowed)
        return fail(err, errlen, name, why_not);
    if (copy_str(dst, cap, v) != 0)
        return fail(err, errlen, name, too_long);
    return 0;
}

#define SENTINEL_ONLY "is set but TOCSIN_REDIS_URL is not redis-sentinel://"
#define SENTINEL_CRED_LONG "must be 255 bytes at most"

/* AUTH on the Sentinels (their requirepass or an ACL user of theirs), apart from the data nodes'
 * credentials in the URL: Sentinels and data nodes are configured apart. */
static int
load_redis_sentinel(struct config *cfg, char *err, size_t errlen)
{
    int on = cfg->redis_sentinels_n > 0;

    if (url_setting(cfg->redis_sentinel_user, CONFIG_HOST_MAX, "TOCSIN_REDIS_SENTINEL_USER",
                    getenv("TOCSIN_REDIS_SENTINEL_USER"), on, SENTINEL_ONLY, SENTINEL_CRED_LONG,
                    err, errlen) != 0 ||
        url_setting(cfg->redis_sentinel_password, CONFIG_HOST_MAX, "TOCSIN_REDIS_SENTINEL_PASSWORD",
                    getenv("TOCSIN_REDIS_SENTINEL_PASSWORD"), on, SENTINEL_ONLY, SENTINEL_CRED_LONG,
                    err, errlen) != 0)
        return -1;
    if (cfg->redis_sentinel_user[0] != '\0' && cfg->redis_sentinel_password[0] == '\0')
        return fail(err, errlen, "TOCSIN_REDIS_SENTINEL_USER",
                    "needs TOCSIN_REDIS_SENTINEL_PASSWORD");
    return 0;
}

/* One of rediss://'s files: only with rediss://, a path of under CONFIG_STR_MAX bytes. */
static int
tls_file(const struct config *cfg, char *dst, const char *name, const char *v, char *err,
         size_t errlen)
{
    return url_setting(dst, CONFIG_STR_MAX, name, v, cfg->redis_tls,
                       "is set but TOCSIN_REDIS_URL is redis://: use rediss:// (or "
                       "rediss-sentinel://) for TLS",
                       "must be a path of under 1024 bytes", err, errlen);
}

/* rediss://'s files. The files are read (and a key checked against its certificate) by main.c
 * through transport.c before any thread starts; here only their names and how they combine. */
static int
load_redis_tls(struct config *cfg, char *err, size_t errlen)
{
    if (tls_file(cfg, cfg->redis_tls_ca, "TOCSIN_REDIS_TLS_CA", getenv("TOCSIN_REDIS_TLS_CA"), err,
                 errlen) != 0 ||
        tls_file(cfg, cfg->redis_tls_cert, "TOCSIN_REDIS_TLS_CERT", getenv("TOCSIN_REDIS_TLS_CERT"),
                 err, errlen) != 0 ||
        tls_file(cfg, cfg->redis_tls_key, "TOCSIN_REDIS_TLS_KEY", getenv("TOCSIN_REDIS_TLS_KEY"),
                 err, errlen) != 0)
        return -1;
    if (cfg->redis_tls_key[0] != '\0' && cfg->redis_tls_cert[0] == '\0')
        return fail(err, errlen, "TOCSIN_REDIS_TLS_KEY", "needs TOCSIN_REDIS_TLS_CERT");
    return 0;
}

static int
valid_prefix(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 64)
        return 0;
    return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == n;
}

static int
load_strings(struct config *cfg, char *err, size_t errlen)
{
    const char *v;
    char why[CONFIG_ERR_MAX];

    v = getenv("TOCSIN_HTTP_ADDR");
    if (parse_addr(cfg, v ? v : "127.0.0.1:8080") != 0)
        return fail(err, errlen, "TOCSIN_HTTP_ADDR", "must be host:port, e.g. 127.0.0.1:8080");
    v = getenv("TOCSIN_DATABASE_URL");
    if (copy_str(cfg->database_url, sizeof(cfg->database_url), v ? v : "postgresql:///tocsin") ||
        cfg->database_url[0] == '\0')
        return fail(err, errlen, "TOCSIN_DATABASE_URL", "must be a libpq URI of under 1024 bytes");
    if (db_url_check(cfg->database_url, why, sizeof why) != 0)
        return fail(err, errlen, "TOCSIN_DATABASE_URL", why);
    v = getenv("TOCSIN_REDIS_URL");
    if (load_redis_url(cfg, v ? v : "redis://127.0.0.1:6379/0", err, errlen) != 0 ||
        load_redis_tls(cfg, err, errlen) != 0 || load_redis_sentinel(cfg, err, errlen) != 0)
        return -1;
    v = getenv("TOCSIN_REDIS_PREFIX");
    if (!valid_prefix(v ? v : "tocsin"))
        return fail(err, errlen, "TOCSIN_REDIS_PREFIX", "must be 1..64 of [A-Za-z0-9_.-]");
    copy_str(cfg->redis_prefix, sizeof(cfg->redis_prefix), v ? v : "tocsin");
    v = getenv("TOCSIN_LOG_LEVEL");
    if (v != NULL && log_level_parse(v, &cfg->log_level) != 0)
        return fail(err, errlen, "TOCSIN_LOG_LEVEL", "must be error, warn, info or debug");
    v = getenv("TOCSIN_LOG_FORMAT");
    if (v != NULL && log_format_parse(v, &cfg->log_format) != 0)
        return fail(err, errlen, "TOCSIN_LOG_FORMAT", "must be text or json");
    v = getenv("TOCSIN_INSTANCE_ID");
    if (v != NULL) {
        if (!valid_prefix(v))
            return fail(err, errlen, "TOCSIN_INSTANCE_ID", "must be 1..64 of [A-Za-z0-9_.-]");
        copy_str(cfg->instance_id, sizeof(cfg->instance_id), v);
    } else {
        char host[HOSTNAME_MAX + 1] = "tocsin";
        gethostname(host, HOSTNAME_MAX);
        host[HOSTNAME_MAX] = '\0';
        snprintf(cfg->instance_id, sizeof(cfg->instance_id), "%s-%ld", host, (long)getpid());
    }
    return 0;
}

/* Which private webhook targets are allowed: networks and host names, or all of them. */
static int
load_allow_nets(struct config *cfg, char *err, size_t errlen)
{
    const char *v = getenv("TOCSIN_WEBHOOK_ALLOW_NETS");
    char why[CONFIG_ERR_MAX];

    if (netguard_allow_parse(v ? v : "", &cfg->webhook_allow, why, sizeof why) != 0)
        return fail(err, errlen, "TOCSIN_WEBHOOK_ALLOW_NETS", why);
    cfg->webhook_allow.all = cfg->webhook_allow_private != 0;
    return 0;
}

/* Whose X-Forwarded-For is read (forwarded.h): nobody's unless named. */
static int
load_trusted_proxies(struct config *cfg, char *err, size_t errlen)
{
    const char *v = getenv("TOCSIN_TRUSTED_PROXIES");
    char why[CONFIG_ERR_MAX];

    if (forwarded_proxies_parse(v ? v : "", &cfg->trusted_proxies, why, sizeof why) != 0)
        return fail(err, errlen, "TOCSIN_TRUSTED_PROXIES", why);
    return 0;
}

/* The settings for browsers: allowed origins and the browser tokens' audience. */
static int
load_browser(struct config *cfg, char *err, size_t errlen)
{
    const char *v = getenv("TOCSIN_CORS_ORIGINS"), *why = NULL;

    if (cors_origins_parse(v ? v : "", &cfg->cors, &why) != 0)
        return fail(err, errlen, "TOCSIN_CORS_ORIGINS", why);
    v = getenv("TOCSIN_TOKEN_AUDIENCE");
    v = v ? v : "tocsin";
    if (v[0] == '\0' || strlen(v) > CONFIG_AUDIENCE_MAX ||
        strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                  "abcdefghijklmnopqrstuvwxyz"
                  "0123456789_.:/-") != strlen(v))
        return fail(err, errlen, "TOCSIN_TOKEN_AUDIENCE", "must be 1..128 of [A-Za-z0-9_.:/-]");
    copy_str(cfg->token_audience, sizeof(cfg->token_audience), v);
    return 0;
}

/* A From or subject address: printable ASCII, no blanks, one '@': no byte can break a header. */
static bool
address_ok(const char *s, size_t max)
{
    size_t n = strlen(s);
    const char *at = strchr(s, '@');

    if (n == 0 || n > max || at == NULL || at == s || strchr(at + 1, '@') != NULL || at[1] == '\0')
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] <= ' ' || s[i] > '~' || s[i] == '<' || s[i] == '>' || s[i] == '"')
            return false;
    return true;
}

/* An https: VAPID subject as a JWT claim takes it (webpush_vapid_jwt): printable ASCII without
 * blanks, quotes or backslashes, at most CONFIG_ADDRESS_MAX bytes. */
static bool
subject_url_ok(const char *s)
{
    size_t n = strlen(s);

    if (n <= 8 || n > CONFIG_ADDRESS_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] <= ' ' || s[i] > '~' || s[i] == '"' || s[i] == '\\')
            return false;
    return true;
}

/* The channels to people: SMTP for email, the VAPID subject for Web Push. */
static int
load_people(struct config *cfg, char *err, size_t errlen)
{
    const char *url = getenv("TOCSIN_SMTP_URL"), *from = getenv("TOCSIN_SMTP_FROM");
    const char *subject = getenv("TOCSIN_VAPID_SUBJECT");

    url = url ? url : "";
    if (url[0] != '\0' && ((strncmp(url, "smtp://", 7) != 0 && strncmp(url, "smtps://", 8) != 0) ||
                           copy_str(cfg->smtp_url, sizeof cfg->smtp_url, url) != 0))
        return fail(err, errlen, "TOCSIN_SMTP_URL",
                    "must be smtp://host[:port] or smtps://host[:port], under 1024 bytes");
    if (url[0] != '\0' && (from == NULL || !email_addr_ok(from)))
        return fail(err, errlen, "TOCSIN_SMTP_FROM",
                    "must be an address such as reminders@example.com when TOCSIN_SMTP_URL is set");
    copy_str(cfg->smtp_from, sizeof cfg->smtp_from, from && url[0] != '\0' ? from : "");
    const char *user = getenv("TOCSIN_SMTP_USERNAME"), *pass = getenv("TOCSIN_SMTP_PASSWORD");
    if (copy_str(cfg->smtp_username, sizeof cfg->smtp_username, user ? user : "") != 0 ||
        copy_str(cfg->smtp_password, sizeof cfg->smtp_password, pass ? pass : "") != 0)
        return fail(err, errlen,
                    user && strlen(user) >= CONFIG_HOST_MAX ? "TOCSIN_SMTP_USERNAME"
                                                            : "TOCSIN_SMTP_PASSWORD",
                    "must be under 256 bytes");
    subject = subject ? subject : "mailto:tocsin@localhost";
    if ((strncmp(subject, "mailto:", 7) != 0 || !address_ok(subject + 7, CONFIG_ADDRESS_MAX)) &&
        (strncmp(subject, "https://", 8) != 0 || !subject_url_ok(subject)))
        return fail(err, errlen, "TOCSIN_VAPID_SUBJECT",
                    "must be mailto:<address> or an https:// URL of at most 254 bytes");
    copy_str(cfg->vapid_subject, sizeof cfg->vapid_subject, subject);
    return 0;
}

int
config_load(struct config *cfg, char *err, size_t errlen)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->log_level = LOG_LEVEL_INFO;
    cfg->log_format = LOG_FORMAT_TEXT;
    if (load_strings(cfg, err, errlen) != 0 || load_browser(cfg, err, errlen) != 0 ||
        load_people(cfg, err, errlen) != 0 || load_ints(cfg, err, errlen) != 0 ||
        load_allow_nets(cfg, err, errlen) != 0 || load_trusted_proxies(cfg, err, errlen) != 0)
        return -1;
    if (cfg->db_pooled && cfg->migrate_on_start)
        return fail(err, errlen, "TOCSIN_DB_POOLED",
                    "needs TOCSIN_MIGRATE_ON_START=0: migrations take a session lock, so run "
                    "tocsin migrate against PostgreSQL itself");
    return 0;
}
