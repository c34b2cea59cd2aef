/* config.h -- environment -> struct config, validated once at start, read-only afterwards and
 * shared by every thread as const. Each setting's default and bound: docs/configuration.md. */
#ifndef TOCSIN_CONFIG_H
#define TOCSIN_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "cors.h"
#include "forwarded.h"
#include "log.h"
#include "netguard.h"
#include "redis_url.h"

#define CONFIG_STR_MAX 1024
#define CONFIG_HOST_MAX 256
#define CONFIG_ERR_MAX 256
#define CONFIG_AUDIENCE_MAX 128
#define CONFIG_ADDRESS_MAX 254 /* an email address, or the VAPID subject */

struct config {
    char http_host[CONFIG_HOST_MAX];   /* TOCSIN_HTTP_ADDR host part, default 127.0.0.1 */
    int http_port;                     /* TOCSIN_HTTP_ADDR port, default 8080 */
    int http_threads;                  /* TOCSIN_HTTP_THREADS 1..64, default 16 */
    int http_connections_max;          /* TOCSIN_HTTP_CONNECTIONS_MAX 16..10000, default 1024 */
    int http_timeout_s;                /* TOCSIN_HTTP_TIMEOUT_S 1..3600, default 30 */
    int http_connections_per_addr;     /* TOCSIN_HTTP_CONNECTIONS_PER_ADDR 1..100000, default 128 */
    int http_header_timeout_s;         /* TOCSIN_HTTP_HEADER_TIMEOUT_S 1..300, default 20 */
    int http_body_timeout_s;           /* TOCSIN_HTTP_BODY_TIMEOUT_S 1..600, default 30 */
    int64_t page_bytes_max;            /* TOCSIN_PAGE_BYTES_MAX 65536..67108864, default 2097152 */
    char database_url[CONFIG_STR_MAX]; /* TOCSIN_DATABASE_URL, default "postgresql:///tocsin" */
    int64_t db_wait_ms;                /* TOCSIN_DB_WAIT_S 0..3600, default 60 */
    int migrate_on_start;              /* TOCSIN_MIGRATE_ON_START 0|1, default 1 */
    int db_pooled; /* TOCSIN_DB_POOLED 0|1: PostgreSQL through PgBouncer in transaction mode */
    char redis_host[CONFIG_HOST_MAX]; /* from TOCSIN_REDIS_URL, default redis://127.0.0.1:6379/0 */
    int redis_port;
    int redis_db;                         /* 0..15 */
    char redis_user[CONFIG_HOST_MAX];     /* "" = the default user */
    char redis_password[CONFIG_HOST_MAX]; /* "" = none */
    int redis_tls;                        /* rediss:// */
    char redis_tls_ca[CONFIG_STR_MAX];    /* TOCSIN_REDIS_TLS_CA, "" = the system's CAs */
    char redis_tls_cert[CONFIG_STR_MAX];  /* TOCSIN_REDIS_TLS_CERT, "" = no client certificate */
    char redis_tls_key[CONFIG_STR_MAX];   /* TOCSIN_REDIS_TLS_KEY, "" = the key is in the cert */
    /* redis[s]-sentinel://: the Sentinels and the master name (redis_host is then ""). */
    size_t redis_sentinels_n; /* 0 = no Sentinel */
    struct redis_url_addr redis_sentinels[REDIS_URL_SENTINELS_MAX];
    /* redis[s]-cluster://: the seed nodes (redis_host is then ""; db is 0). */
    size_t redis_seeds_n; /* 0 = no Cluster */
    struct redis_url_addr redis_seeds[REDIS_URL_SENTINELS_MAX];
    char redis_master[REDIS_URL_MASTER_MAX];
    char redis_sentinel_user[CONFIG_HOST_MAX];     /* TOCSIN_REDIS_SENTINEL_USER, "" = default */
    char redis_sentinel_password[CONFIG_HOST_MAX]; /* TOCSIN_REDIS_SENTINEL_PASSWORD, "" = none */
    char redis_prefix[65];      /* TOCSIN_REDIS_PREFIX, [A-Za-z0-9_.-]{1,64}, default tocsin */
    char instance_id[129];      /* TOCSIN_INSTANCE_ID, default <hostname>-<pid> */
    enum log_level log_level;   /* TOCSIN_LOG_LEVEL, default info */
    enum log_format log_format; /* TOCSIN_LOG_FORMAT text|json, default text */
    int64_t mirror_horizon_ms;  /* TOCSIN_MIRROR_HORIZON_S 3600..31622400, default 86400 */
    int64_t series_window_ms;   /* TOCSIN_SERIES_WINDOW_S 86400..31622400, default 1209600 */
    int64_t recon_interval_ms;  /* TOCSIN_RECON_INTERVAL_MS 100..3600000, default 1000 */
    int64_t
        recon_full_interval_ms; /* TOCSIN_RECON_FULL_INTERVAL_MS 1000..86400000, default 60000 */
    int64_t missed_grace_ms;    /* TOCSIN_MISSED_GRACE_MS 0..86400000, default 60000 */
    int64_t auth_cache_ms;      /* TOCSIN_AUTH_CACHE_MS 0..60000, default 2000 */
    int64_t claim_ttl_ms;       /* TOCSIN_CLAIM_TTL_MS 1000..600000, default 2000 */
    int64_t sched_window_ms;    /* TOCSIN_SCHED_WINDOW_MS 1000..600000, default 10000 */
    int64_t sched_poll_ms;      /* TOCSIN_SCHED_POLL_MS 50..60000, default 500 */
    int64_t delivery_retry_base_ms; /* TOCSIN_DELIVERY_RETRY_BASE_MS 10..3600000, default 5000 */
    int64_t delivery_timeout_ms;    /* TOCSIN_DELIVERY_TIMEOUT_MS 100..60000, default 10000 */
    int64_t delivery_max_attempts;  /* TOCSIN_DELIVERY_MAX_ATTEMPTS 1..50, default 15 */
    int delivery_workers;           /* TOCSIN_DELIVERY_WORKERS 1..64, default 2 */
    int delivery_concurrency;      /* TOCSIN_DELIVERY_CONCURRENCY 1..4096, default 256 per worker */
    int delivery_per_receiver;     /* TOCSIN_DELIVERY_RECEIVER_CONCURRENCY 1..4096, default 16 */
    int delivery_per_push_service; /* TOCSIN_DELIVERY_PUSH_SERVICE_CONCURRENCY 1..4096, 64 */
    int delivery_tenant_share;     /* TOCSIN_DELIVERY_TENANT_SHARE 1..100 percent, default 50 */
    int webhook_allow_private;     /* TOCSIN_WEBHOOK_ALLOW_PRIVATE 0|1, default 0 */
    /* TOCSIN_WEBHOOK_ALLOW_NETS, default "" (public targets only); .all = the setting above */
    struct netguard_allow webhook_allow;
    /* TOCSIN_TRUSTED_PROXIES, default "" (nobody): whose X-Forwarded-For names the client */
    struct forwarded_proxies trusted_proxies;
    int64_t shutdown_grace_ms; /* TOCSIN_SHUTDOWN_GRACE_MS 0..120000, default 10000 */
    /* Retention (retention.h): how long each kind is kept, in seconds, and how purges run. */
    int64_t retention_idempotency_s;   /* TOCSIN_RETENTION_IDEMPOTENCY_S 3600..2592000, 86400 */
    int64_t retention_deliveries_s;    /* TOCSIN_RETENTION_DELIVERIES_S 3600..31622400, 7 days */
    int64_t retention_meetings_s;      /* TOCSIN_RETENTION_DELETED_MEETINGS_S, same, 7 days */
    int64_t retention_stream_events_s; /* TOCSIN_RETENTION_STREAM_EVENTS_S, same, 7 days */
    int64_t retention_interval_ms;     /* TOCSIN_RETENTION_INTERVAL_S 1..86400, default 60 */
    int retention_batch;               /* TOCSIN_RETENTION_BATCH 10..10000, default 1000 */
    int64_t webhook_disable_after_s;   /* TOCSIN_WEBHOOK_DISABLE_AFTER_S 1..31622400, 5 days */
    int64_t webhook_rotate_overlap_s;  /* TOCSIN_WEBHOOK_ROTATE_OVERLAP_S 1..2592000, 24 h */
    /* What one tenant may take of this replica (0: no bound). */
    int64_t tenant_rate;         /* TOCSIN_TENANT_RATE 0..1000000 requests a second, default 0 */
    int64_t tenant_burst;        /* TOCSIN_TENANT_BURST 1..1000000, default 100 */
    int64_t tenant_meetings_max; /* TOCSIN_TENANT_MEETINGS_MAX 0..100000000 live, default 0 */
    /* What a browser token may write (browser_writes.h). */
    int browser_email;            /* TOCSIN_BROWSER_EMAIL 0|1, default 0: no email from tokens */
    int browser_participants_max; /* TOCSIN_BROWSER_PARTICIPANTS_MAX 1..500, default 50 */
    /* Browsers (docs/design.md section 7). */
    struct cors_origins cors; /* TOCSIN_CORS_ORIGINS, default "" (no browser access) */
    char token_audience[CONFIG_AUDIENCE_MAX + 1]; /* TOCSIN_TOKEN_AUDIENCE, default tocsin */
    int streams_max;                              /* TOCSIN_STREAMS_MAX 1..100000, default 10000 */
    int streams_per_participant; /* TOCSIN_STREAMS_PER_PARTICIPANT 1..1000, default 5 */
    int streams_per_tenant;      /* TOCSIN_STREAMS_PER_TENANT 0..100000, default 0 (off) */
    int64_t stream_buffer_max;   /* TOCSIN_STREAM_BUFFER_MAX 4096..16777216, default 65536 */
    int64_t stream_max_age_ms;   /* TOCSIN_STREAM_MAX_AGE_S 10..86400, default 900 */
    int64_t stream_heartbeat_ms; /* TOCSIN_STREAM_HEARTBEAT_MS 100..60000, default 20000 */
    int64_t stream_retry_ms;     /* TOCSIN_STREAM_RETRY_MS 0..60000, default 3000 */
    int64_t stream_poll_ms;      /* TOCSIN_STREAM_POLL_MS 50..60000, default 1000 */
    int demo;                    /* TOCSIN_DEMO 0|1, default 0: serve GET /demo */
    /* Channels to people (docs/design.md section 8). */
    char smtp_url[CONFIG_STR_MAX];       /* TOCSIN_SMTP_URL smtp(s)://, default "" (no email) */
    char smtp_from[CONFIG_HOST_MAX];     /* TOCSIN_SMTP_FROM, the From address */
    char smtp_username[CONFIG_HOST_MAX]; /* TOCSIN_SMTP_USERNAME, "" = no AUTH */
    char smtp_password[CONFIG_HOST_MAX]; /* TOCSIN_SMTP_PASSWORD */
    int smtp_require_tls;                /* TOCSIN_SMTP_REQUIRE_TLS 0|1: smtp:// must STARTTLS */
    char vapid_subject[CONFIG_HOST_MAX]; /* TOCSIN_VAPID_SUBJECT mailto: or https: URL */
    int webpush_allow_private;           /* TOCSIN_WEBPUSH_ALLOW_PRIVATE 0|1, default 0 */
};

/* Fills cfg from the environment. Returns 0, or -1 with one line naming the variable in err. */
int config_load(struct config *cfg, char *err, size_t errlen);

#endif
