/* test_config.c -- environment parsing: defaults, bounds (at the limit and one past), URLs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "config.h"

static const struct {
    const char *var, *value;
    int ok;
} cases[] = {
    {"TOCSIN_WEBHOOK_ROTATE_OVERLAP_S", "1", 1},
    {"TOCSIN_WEBHOOK_ROTATE_OVERLAP_S", "2592000", 1},
    {"TOCSIN_WEBHOOK_ROTATE_OVERLAP_S", "0", 0},
    {"TOCSIN_WEBHOOK_ROTATE_OVERLAP_S", "2592001", 0},
    {"TOCSIN_WEBHOOK_DISABLE_AFTER_S", "1", 1},
    {"TOCSIN_WEBHOOK_DISABLE_AFTER_S", "31622400", 1},
    {"TOCSIN_WEBHOOK_DISABLE_AFTER_S", "0", 0},
    {"TOCSIN_WEBHOOK_DISABLE_AFTER_S", "31622401", 0},
    {"TOCSIN_HTTP_THREADS", "1", 1},
    {"TOCSIN_HTTP_THREADS", "64", 1},
    {"TOCSIN_HTTP_THREADS", "65", 0},
    {"TOCSIN_HTTP_THREADS", "0", 0},
    {"TOCSIN_HTTP_THREADS", "-1", 0},
    {"TOCSIN_HTTP_THREADS", "4x", 0},
    {"TOCSIN_HTTP_THREADS", "", 0},
    {"TOCSIN_HTTP_THREADS", " 4", 0},
    {"TOCSIN_HTTP_CONNECTIONS_PER_ADDR", "1", 1},
    {"TOCSIN_HTTP_CONNECTIONS_PER_ADDR", "100000", 1},
    {"TOCSIN_HTTP_CONNECTIONS_PER_ADDR", "0", 0},
    {"TOCSIN_HTTP_CONNECTIONS_PER_ADDR", "100001", 0},
    {"TOCSIN_HTTP_HEADER_TIMEOUT_S", "1", 1},
    {"TOCSIN_HTTP_HEADER_TIMEOUT_S", "300", 1},
    {"TOCSIN_HTTP_HEADER_TIMEOUT_S", "0", 0},
    {"TOCSIN_HTTP_HEADER_TIMEOUT_S", "301", 0},
    {"TOCSIN_HTTP_BODY_TIMEOUT_S", "600", 1},
    {"TOCSIN_HTTP_BODY_TIMEOUT_S", "601", 0},
    {"TOCSIN_PAGE_BYTES_MAX", "65536", 1},
    {"TOCSIN_PAGE_BYTES_MAX", "65535", 0},
    {"TOCSIN_PAGE_BYTES_MAX", "67108864", 1},
    {"TOCSIN_PAGE_BYTES_MAX", "67108865", 0},
    {"TOCSIN_MIRROR_HORIZON_S", "3600", 1},
    {"TOCSIN_MIRROR_HORIZON_S", "3599", 0},
    {"TOCSIN_RECON_INTERVAL_MS", "100", 1},
    {"TOCSIN_RECON_INTERVAL_MS", "99", 0},
    {"TOCSIN_MISSED_GRACE_MS", "86400000", 1},
    {"TOCSIN_MISSED_GRACE_MS", "86400001", 0},
    {"TOCSIN_MISSED_GRACE_MS", "99999999999999999999999", 0},
    {"TOCSIN_DELIVERY_TENANT_SHARE", "1", 1},
    {"TOCSIN_DELIVERY_TENANT_SHARE", "100", 1},
    {"TOCSIN_DELIVERY_TENANT_SHARE", "0", 0},
    {"TOCSIN_DELIVERY_TENANT_SHARE", "101", 0},
    {"TOCSIN_DELIVERY_TENANT_SHARE", "50%", 0},
    {"TOCSIN_DELIVERY_TENANT_SHARE", "0.5", 0},
    {"TOCSIN_HTTP_ADDR", "127.0.0.1:1", 1},
    {"TOCSIN_HTTP_ADDR", "[::1]:8080", 1},
    {"TOCSIN_HTTP_ADDR", "127.0.0.1", 0},
    {"TOCSIN_HTTP_ADDR", "127.0.0.1:65536", 0},
    {"TOCSIN_HTTP_ADDR", ":80", 0},
    {"TOCSIN_REDIS_URL", "redis://127.0.0.1:6379/0", 1},
    {"TOCSIN_REDIS_URL", "redis://localhost", 1},
    {"TOCSIN_REDIS_URL", "redis://:secret@h:1/15", 1},
    {"TOCSIN_REDIS_URL", "redis://h:1/16", 0},
    {"TOCSIN_REDIS_URL", "http://h:1/0", 0},
    {"TOCSIN_REDIS_URL", "redis://h:0/0", 0},
    {"TOCSIN_REDIS_URL", "redis://:6379", 0},
    {"TOCSIN_REDIS_URL", "redis://u:p@[::1]:1/0", 1},
    {"TOCSIN_REDIS_URL", "rediss://h:1/0", 1},
    {"TOCSIN_DATABASE_URL", "postgresql://u:p%40w@db:5432/tocsin?sslmode=require", 1},
    {"TOCSIN_DATABASE_URL", "host=db port=5432 dbname=tocsin", 1},
    {"TOCSIN_DATABASE_URL", "postgresql://db/tocsin?sslmod=require", 0},
    {"TOCSIN_DATABASE_URL", "postgresql://db/t%zz", 0},
    {"TOCSIN_DATABASE_URL", "host=db port", 0},
    {"TOCSIN_DATABASE_URL", "", 0},
    {"TOCSIN_DB_WAIT_S", "0", 1},
    {"TOCSIN_DB_WAIT_S", "3600", 1},
    {"TOCSIN_DB_WAIT_S", "3601", 0},
    {"TOCSIN_MIGRATE_ON_START", "0", 1},
    {"TOCSIN_MIGRATE_ON_START", "2", 0},
    {"TOCSIN_REDIS_PREFIX", "a", 1},
    {"TOCSIN_REDIS_PREFIX", "has space", 0},
    {"TOCSIN_REDIS_PREFIX", "", 0},
    {"TOCSIN_LOG_LEVEL", "debug", 1},
    {"TOCSIN_LOG_LEVEL", "loud", 0},
    {"TOCSIN_INSTANCE_ID", "replica-1", 1},
    {"TOCSIN_INSTANCE_ID", "a:b", 0},
    {"TOCSIN_VAPID_SUBJECT", "mailto:ops@example.com", 1},
    {"TOCSIN_VAPID_SUBJECT", "https://example.com/contact", 1},
    {"TOCSIN_VAPID_SUBJECT", "https://", 0},
    {"TOCSIN_VAPID_SUBJECT", "https://example.com/a\\b", 0}, /* a JWT claim would need escapes */
    {"TOCSIN_VAPID_SUBJECT", "https://example.com/\xc3\xa9", 0},
    {"TOCSIN_VAPID_SUBJECT", "mailto:no-at-sign", 0},
    {"TOCSIN_VAPID_SUBJECT", "http://example.com", 0},
    {"TOCSIN_WEBPUSH_ALLOW_PRIVATE", "1", 1},
    {"TOCSIN_WEBPUSH_ALLOW_PRIVATE", "2", 0},
    {"TOCSIN_SMTP_URL", "ftp://mail", 0},
    {"TOCSIN_SMTP_URL", "smtp://mail", 0}, /* TOCSIN_SMTP_FROM is then required */
    {"TOCSIN_DB_POOLED", "1", 0},          /* needs TOCSIN_MIGRATE_ON_START=0 */
    {"TOCSIN_CORS_ORIGINS", "https://app.example.com, http://[::1]:8080", 1},
    {"TOCSIN_CORS_ORIGINS", "http://[anything]", 0}, /* test_cors.c has the rest */
    {"TOCSIN_TRUSTED_PROXIES", "", 1},
    {"TOCSIN_TRUSTED_PROXIES", "172.16.0.0/12, fd00::/8, 10.1.2.3", 1},
    {"TOCSIN_TRUSTED_PROXIES", "10.0.0.0/33", 0},
    {"TOCSIN_TRUSTED_PROXIES", "lb.internal", 0}, /* test_forwarded.c has the rest */
    {"TOCSIN_TENANT_RATE", "0", 1},
    {"TOCSIN_TENANT_RATE", "1000000", 1},
    {"TOCSIN_TENANT_RATE", "1000001", 0},
    {"TOCSIN_TENANT_RATE", "-1", 0},
    {"TOCSIN_TENANT_BURST", "1", 1},
    {"TOCSIN_TENANT_BURST", "1000000", 1},
    {"TOCSIN_TENANT_BURST", "0", 0},
    {"TOCSIN_TENANT_BURST", "1000001", 0},
    {"TOCSIN_TENANT_MEETINGS_MAX", "0", 1},
    {"TOCSIN_TENANT_MEETINGS_MAX", "100000000", 1},
    {"TOCSIN_TENANT_MEETINGS_MAX", "100000001", 0},
    {"TOCSIN_BROWSER_EMAIL", "1", 1},
    {"TOCSIN_BROWSER_EMAIL", "2", 0},
    {"TOCSIN_BROWSER_PARTICIPANTS_MAX", "1", 1},
    {"TOCSIN_BROWSER_PARTICIPANTS_MAX", "500", 1},
    {"TOCSIN_BROWSER_PARTICIPANTS_MAX", "0", 0},
    {"TOCSIN_BROWSER_PARTICIPANTS_MAX", "501", 0},
};

/* redis-sentinel://: its Sentinels and master in the config; the Sentinels' credentials only
 * with it, a user only with a password. */
static void
check_sentinel(struct config *cfg, char *err, size_t errlen)
{
    setenv("TOCSIN_REDIS_SENTINEL_PASSWORD", "sp", 1);
    CHECK(config_load(cfg, err, errlen) != 0 &&
              strstr(err, "TOCSIN_REDIS_SENTINEL_PASSWORD") != NULL &&
              strstr(err, "redis-sentinel://") != NULL,
          "a Sentinel password with redis://: %s", err);
    setenv("TOCSIN_REDIS_URL", "redis-sentinel://:pw@s1,s2:26380/mymaster/2", 1);
    setenv("TOCSIN_REDIS_SENTINEL_USER", "watcher", 1);
    CHECK(config_load(cfg, err, errlen) == 0 && cfg->redis_sentinels_n == 2 &&
              strcmp(cfg->redis_sentinels[0].host, "s1") == 0 &&
              cfg->redis_sentinels[0].port == 26379 && cfg->redis_sentinels[1].port == 26380 &&
              strcmp(cfg->redis_master, "mymaster") == 0 && cfg->redis_db == 2 &&
              strcmp(cfg->redis_password, "pw") == 0 && cfg->redis_host[0] == '\0' &&
              strcmp(cfg->redis_sentinel_user, "watcher") == 0 &&
              strcmp(cfg->redis_sentinel_password, "sp") == 0,
          "redis-sentinel:// fields: %s", err);
    unsetenv("TOCSIN_REDIS_SENTINEL_PASSWORD");
    CHECK(config_load(cfg, err, errlen) != 0 && strstr(err, "TOCSIN_REDIS_SENTINEL_USER") != NULL,
          "a Sentinel user without a password: %s", err);
    unsetenv("TOCSIN_REDIS_SENTINEL_USER");
    unsetenv("TOCSIN_REDIS_URL");
    CHECK(config_load(cfg, err, errlen) == 0 && cfg->redis_sentinels_n == 0, "plain again: %s",
          err);
}

int
main(void)
{
    struct config cfg;
    char err[CONFIG_ERR_MAX];
    CHECK(config_load(&cfg, err, sizeof(err)) == 0 && cfg.http_port == 8080 &&
              strcmp(cfg.http_host, "127.0.0.1") == 0 && cfg.mirror_horizon_ms == 86400000 &&
              cfg.redis_port == 6379 && strcmp(cfg.redis_prefix, "tocsin") == 0 &&
              cfg.http_connections_per_addr == 128 && cfg.http_header_timeout_s == 20 &&
              cfg.http_body_timeout_s == 30 && cfg.db_wait_ms == 60000 &&
              cfg.migrate_on_start == 1 && cfg.page_bytes_max == 2097152,
          "defaults: %s", err);
    CHECK(cfg.trusted_proxies.nets.n_nets == 0, "no proxy is trusted by default");
    CHECK(cfg.tenant_rate == 0 && cfg.tenant_burst == 100 && cfg.tenant_meetings_max == 0 &&
              cfg.browser_email == 0 && cfg.browser_participants_max == 50,
          "tenant and browser defaults: nothing limited but browser writes");
    CHECK(cfg.delivery_tenant_share == 50, "a tenant takes half a delivery worker's slots");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        setenv(cases[i].var, cases[i].value, 1);
        err[0] = '\0';
        int ok = config_load(&cfg, err, sizeof(err)) == 0;
        unsetenv(cases[i].var);
        CHECK(ok == cases[i].ok && (ok || strstr(err, cases[i].var) != NULL),
              "config %zu: %s=%s -> %d (%s)", i, cases[i].var, cases[i].value, ok, err);
    }
    setenv("TOCSIN_REDIS_URL", "redis://:pw@redis.local:6380/3", 1);
    CHECK(config_load(&cfg, err, sizeof(err)) == 0 && strcmp(cfg.redis_host, "redis.local") == 0 &&
              cfg.redis_port == 6380 && cfg.redis_db == 3 &&
              strcmp(cfg.redis_password, "pw") == 0 && cfg.redis_user[0] == '\0',
          "redis url fields");
    setenv("TOCSIN_REDIS_URL", "redis://ops:a%2Fb@10.0.0.5/1", 1);
    CHECK(config_load(&cfg, err, sizeof(err)) == 0 && strcmp(cfg.redis_user, "ops") == 0 &&
              strcmp(cfg.redis_password, "a/b") == 0,
          "redis ACL user fields");
    /* TLS files only with rediss://; a key only with its certificate. */
    setenv("TOCSIN_REDIS_TLS_CA", "ca.pem", 1);
    CHECK(config_load(&cfg, err, sizeof(err)) != 0 && strstr(err, "TOCSIN_REDIS_TLS_CA") != NULL &&
              strstr(err, "rediss://") != NULL,
          "a CA with redis://: %s", err);
    setenv("TOCSIN_REDIS_URL", "rediss://redis.local:6380/0", 1);
    setenv("TOCSIN_REDIS_TLS_KEY", "key.pem", 1);
    CHECK(config_load(&cfg, err, sizeof(err)) != 0 && strstr(err, "TOCSIN_REDIS_TLS_CERT") != NULL,
          "a key alone: %s", err);
    setenv("TOCSIN_REDIS_TLS_CERT", "cert.pem", 1);
    CHECK(config_load(&cfg, err, sizeof(err)) == 0 && cfg.redis_tls &&
              strcmp(cfg.redis_tls_ca, "ca.pem") == 0 &&
              strcmp(cfg.redis_tls_cert, "cert.pem") == 0 &&
              strcmp(cfg.redis_tls_key, "key.pem") == 0,
          "rediss:// with its files: %s", err);
    unsetenv("TOCSIN_REDIS_TLS_CA");
    unsetenv("TOCSIN_REDIS_TLS_CERT");
    unsetenv("TOCSIN_REDIS_TLS_KEY");
    unsetenv("TOCSIN_REDIS_URL");
    check_sentinel(&cfg, err, sizeof err);
    /* A share's error names its unit: "0.5" is not half. */
    setenv("TOCSIN_DELIVERY_TENANT_SHARE", "0.5", 1);
    CHECK(config_load(&cfg, err, sizeof(err)) != 0 &&
              strstr(err, "TOCSIN_DELIVERY_TENANT_SHARE") != NULL && strstr(err, "percent") != NULL,
          "tenant share reason: %s", err);
    unsetenv("TOCSIN_DELIVERY_TENANT_SHARE");
    /* libpq's reason follows the variable's name. */
    setenv("TOCSIN_DATABASE_URL", "postgresql://db/tocsin?sslmod=require", 1);
    CHECK(config_load(&cfg, err, sizeof(err)) != 0 &&
              strncmp(err, "TOCSIN_DATABASE_URL: ", 21) == 0 && strstr(err, "sslmod") != NULL,
          "database url reason: %s", err);
    unsetenv("TOCSIN_DATABASE_URL");
    /* The From address passes the check every message's addresses pass (email_addr_ok): one
     * that did not would fail every email for good. */
    setenv("TOCSIN_SMTP_URL", "smtp://127.0.0.1:2525", 1);
    static const struct {
        const char *from;
        int ok;
    } froms[] = {{"reminders@example.com", 1},  {"tocsin@localhost", 1},
                 {"reminders@mail_host", 0},    {"a..b@example.com", 0},
                 {"reminders@-example.com", 0}, {"r\xc3\xa9@example.com", 0}};
    for (size_t i = 0; i < sizeof froms / sizeof froms[0]; i++) {
        setenv("TOCSIN_SMTP_FROM", froms[i].from, 1);
        int ok = config_load(&cfg, err, sizeof(err)) == 0;
        CHECK(ok == froms[i].ok && (ok || strstr(err, "TOCSIN_SMTP_FROM") != NULL),
              "TOCSIN_SMTP_FROM=%s -> %d (%s)", froms[i].from, ok, err);
    }
    unsetenv("TOCSIN_SMTP_FROM");
    unsetenv("TOCSIN_SMTP_URL");
    return check_summary("test_config");
}
