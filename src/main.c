/* main.c -- wiring only: parse the subcommand (serve, migrate, keys, import), load config, then
 * for serve: wait for PostgreSQL -> migrate (or wait for `tocsin migrate`) -> delivery workers ->
 * stream hub -> reminder engine -> HTTP; wait for SIGTERM/SIGINT; tear down in reverse. Exit
 * codes: 0 ok, 1 runtime failure, 2 usage or configuration error. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "apikey.h"
#include "config.h"
#include "db.h"
#include "deliver.h"
#include "engine.h"
#include "http_server.h"
#include "hub.h"
#include "import.h"
#include "log.h"
#include "outbound.h"
#include "timefmt.h"
#include "transport.h"
#include "version.h"

#define EXIT_USAGE 2
/* Waiting for PostgreSQL at start: the first retry after this, doubling up to the step max, for
 * at most TOCSIN_DB_WAIT_S in all. */
#define DB_WAIT_FIRST_MS 250
#define DB_WAIT_STEP_MAX_MS 5000
/* `tocsin keys` is run by a person at a prompt: a database that is not there after a few seconds
 * is a wrong TOCSIN_DATABASE_URL far more often than one still starting, so it waits at most this
 * long (or TOCSIN_DB_WAIT_S, when that is shorter) instead of serve's start-up wait. */
#define KEYS_DB_WAIT_MS 5000

static const char usage_main[] =
    "usage: tocsin [serve|migrate|keys|import] [--help|--version]\n"
    "  serve                     run the HTTP API and the reminder engine (default)\n"
    "  migrate                   apply pending database migrations and exit\n"
    "  keys create --tenant NAME print a new API key for tenant NAME (created if new)\n"
    "  keys list                 list API keys (prefix, tenant, created, state)\n"
    "  keys revoke PREFIX        revoke the live keys whose prefix starts with PREFIX\n"
    "  import --tenant NAME FILE create the meetings of FILE (JSON lines; - for stdin), with\n"
    "         [--jobs N]         N batches at once (1..8, default 4),\n"
    "         [--batch N]        N lines a batch (1..1000, default 1000),\n"
    "         [--rate N]         at most N lines a second (default: no bound)\n"
    "Configuration comes from TOCSIN_* environment variables; see docs/configuration.md.\n";

static int
is_help(const char *s)
{
    return strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0 || strcmp(s, "help") == 0;
}

/* The next pause of a wait that started at start_ms, or -1 when the wait is over: doubling steps,
 * the last one cut to end exactly at the bound. */
static int64_t
next_pause(const struct config *cfg, int64_t start_ms, int64_t *step_ms)
{
    int64_t left = start_ms + cfg->db_wait_ms - timefmt_mono_ms();
    int64_t pause = *step_ms < left ? *step_ms : left;

    if (left <= 0)
        return -1;
    *step_ms = *step_ms * 2 < DB_WAIT_STEP_MAX_MS ? *step_ms * 2 : DB_WAIT_STEP_MAX_MS;
    return pause;
}

/* Connects to PostgreSQL, which may not be up yet (a compose or Kubernetes start): retries with
 * backoff for up to TOCSIN_DB_WAIT_S, one log line per failed attempt. */
static struct db *
open_waiting(const struct config *cfg)
{
    char err[DB_ERR_MAX];
    int64_t start = timefmt_mono_ms(), step = DB_WAIT_FIRST_MS, pause;

    for (int attempt = 1;; attempt++) {
        struct db *db = db_open(cfg->database_url, err, sizeof(err));
        if (db != NULL) {
            if (attempt > 1)
                LOG_INFO("database reachable after %d attempts", attempt);
            return db;
        }
        if ((pause = next_pause(cfg, start, &step)) < 0) {
            LOG_ERROR("%s (gave up after %d attempts in %lld ms, TOCSIN_DB_WAIT_S)", err, attempt,
                      (long long)(timefmt_mono_ms() - start));
            return NULL;
        }
        LOG_WARN("%s (attempt %d; retrying in %lld ms)", err, attempt, (long long)pause);
        timefmt_sleep_ms(pause);
    }
}

/* With TOCSIN_MIGRATE_ON_START=0 another process (`tocsin migrate`, a Kubernetes Job) applies
 * the migrations: wait for them within the same bound instead of starting on an old schema. */
static int
wait_migrated(const struct config *cfg, struct db *db)
{
    int64_t start = timefmt_mono_ms(), step = DB_WAIT_FIRST_MS, pause;

    while (db_migrate_current(db) != 0) {
        if ((pause = next_pause(cfg, start, &step)) < 0) {
            LOG_ERROR("the schema is not migrated (TOCSIN_MIGRATE_ON_START=0: run tocsin migrate; "
                      "gave up after TOCSIN_DB_WAIT_S)");
            return -1;
        }
        LOG_WARN("waiting for tocsin migrate (TOCSIN_MIGRATE_ON_START=0); retrying in %lld ms",
                 (long long)pause);
        timefmt_sleep_ms(pause);
    }
    return 0;
}

/* A connection to a database whose schema is current: migrated here when migrate is set,
 * otherwise waited for. */
static struct db *
open_migrated(const struct config *cfg, int migrate)
{
    char err[DB_ERR_MAX];
    struct db *db = open_waiting(cfg);

    if (db == NULL)
        return NULL;
    if (migrate && db_migrate(db, err, sizeof(err)) != 0) {
        LOG_ERROR("migrations: %s", err);
        db_close(db);
        return NULL;
    }
    if (!migrate && wait_migrated(cfg, db) != 0) {
        db_close(db);
        return NULL;
    }
    return db;
}

/* rediss://'s CA, certificate and key read once before any thread starts, so a wrong path or a
 * key of another certificate stops the start with one line instead of every connect failing. */
static int
check_redis_tls(const struct config *cfg)
{
    char err[TRANSPORT_ERR_MAX];
    struct transport_tls *tls;

    if (!cfg->redis_tls)
        return 0;
    tls = transport_tls_new(cfg->redis_tls_ca[0] ? cfg->redis_tls_ca : NULL,
                            cfg->redis_tls_cert[0] ? cfg->redis_tls_cert : NULL,
                            cfg->redis_tls_key[0] ? cfg->redis_tls_key : NULL, err, sizeof err);
    if (tls == NULL) {
        LOG_ERROR("TOCSIN_REDIS_TLS_*: %s", err);
        return -1;
    }
    transport_tls_free(tls);
    return 0;
}

static int
serve(const struct config *cfg)
{
    char err[CONFIG_ERR_MAX];
    sigset_t sigs;
    int sig = 0;
    struct db *db = check_redis_tls(cfg) == 0 ? open_migrated(cfg, cfg->migrate_on_start) : NULL;

    if (db == NULL)
        return 1;
    db_close(db);
    /* Block the stop signals before any thread starts so that only sigwait below sees them. */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (cfg->smtp_url[0] != '\0' && cfg->public_url[0] == '\0')
        LOG_WARN("TOCSIN_SMTP_URL is set but TOCSIN_PUBLIC_URL is not: emails carry no one-click "
                 "unsubscribe link (List-Unsubscribe, RFC 8058)");
    struct channel_opts chopt = {.timeout_ms = cfg->delivery_timeout_ms,
                                 .webhook_allow = &cfg->webhook_allow,
                                 .smtp_url = cfg->smtp_url,
                                 .smtp_from = cfg->smtp_from,
                                 .smtp_username = cfg->smtp_username[0] ? cfg->smtp_username : NULL,
                                 .smtp_password = cfg->smtp_password,
                                 .smtp_require_tls = cfg->smtp_require_tls != 0,
                                 .vapid_subject = cfg->vapid_subject,
                                 .push_allow_private = cfg->webpush_allow_private != 0,
                                 .missed_grace_ms = cfg->missed_grace_ms,
                                 .public_url = cfg->public_url,
                                 .unsub_secret = cfg->unsub_secret};
    struct deliver_opts dopt = {.database_url = cfg->database_url,
                                .instance_id = cfg->instance_id,
                                .workers = cfg->delivery_workers,
                                .concurrency = cfg->delivery_concurrency,
                                .per_receiver = cfg->delivery_per_receiver,
                                .per_push_service = cfg->delivery_per_push_service,
                                .tenant_share_pct = cfg->delivery_tenant_share,
                                .retry_base_ms = cfg->delivery_retry_base_ms,
                                .timeout_ms = cfg->delivery_timeout_ms,
                                .max_attempts = (int)cfg->delivery_max_attempts,
                                .channel = chopt};
    struct hub_opts hopt = {cfg->database_url,
                            cfg->stream_poll_ms,
                            cfg->stream_heartbeat_ms,
                            cfg->stream_retry_ms,
                            cfg->stream_max_age_ms,
                            (size_t)cfg->streams_max,
                            (size_t)cfg->streams_per_participant,
                            (size_t)cfg->streams_per_tenant,
                            (size_t)cfg->stream_buffer_max};
    struct deliver *deliver = outbound_global_init() == 0 ? deliver_start(&dopt) : NULL;
    struct hub *hub = deliver ? hub_start(&hopt) : NULL;
    struct engine_hooks hooks = {deliver_notify, deliver_owner_for, deliver, hub_notify, hub};
    struct engine *engine = hub ? engine_start(cfg, &hooks) : NULL;
    struct http_server *srv = engine ? http_server_start(cfg, engine, hub, err, sizeof(err)) : NULL;
    if (srv == NULL) {
        LOG_ERROR("%s", engine ? err : "cannot start the engine's, hub's or delivery's threads");
        engine_stop(engine);
        hub_stop(hub);
        deliver_stop(deliver);
        return 1;
    }
    LOG_INFO("tocsin %s (%s) %s listening on %s:%d", version_number, version_commit,
             cfg->instance_id, cfg->http_host, cfg->http_port);
    sigwait(&sigs, &sig);
    LOG_INFO("signal %d: shutting down", sig);
    http_server_stop(srv); /* ends the streams first */
    engine_stop(engine);
    hub_stop(hub);
    deliver_stop(deliver);
    LOG_INFO("stopped");
    return 0;
}

_Static_assert(APIKEY_TENANT_NAME_MAX == TENANT_NAME_MAX, "one bound for tenant names");

/* Tenant names made before they were bounded may hold any byte: escaped, one row stays one line. */
static void
print_key_row(void *arg, const char *prefix, const char *tenant, int64_t created_at_ms,
              int64_t revoked_at_ms)
{
    char name[4 * TENANT_NAME_MAX + 1], created[TIMEFMT_BUF];
    log_escape(name, sizeof(name), tenant, strlen(tenant));
    printf("%s\t%s\t%s\t%s\n", prefix, name, timefmt_format(created_at_ms, created),
           revoked_at_ms ? "revoked" : "live");
}

static int
keys_create(struct db *db, const char *tenant)
{
    char key[APIKEY_LEN + 1], prefix[APIKEY_PREFIX_LEN + 1];
    uint8_t hash[APIKEY_HASH_LEN];
    int64_t tenant_id;

    if (!apikey_tenant_name_valid(tenant)) {
        fprintf(stderr, "tocsin keys create: --tenant must be 1..%d of [A-Za-z0-9_.-]\n",
                TENANT_NAME_MAX);
        return EXIT_USAGE;
    }
    if (apikey_generate(key, prefix) != 0 ||
        db_tenant_ensure(db, tenant, &tenant_id) != DB_ONE_RESULT)
        return 1;
    apikey_hash(key, strlen(key), hash);
    if (db_keys_insert(db, tenant_id, prefix, hash) != DB_ONE_RESULT)
        return 1;
    printf("%s\n", key);
    return 0;
}

static int
keys(const struct config *cfg, int argc, char **argv)
{
    static const char usage[] = "usage: tocsin keys create --tenant NAME | keys list | "
                                "keys revoke PREFIX\n";
    int rc = EXIT_USAGE, n = 0;
    struct db *db;

    if (argc < 1 || is_help(argv[0]) || (argc > 1 && is_help(argv[1]))) {
        fputs(usage, argc < 1 ? stderr : stdout);
        return argc < 1 ? EXIT_USAGE : 0;
    }
    int create = strcmp(argv[0], "create") == 0 && argc == 3 && strcmp(argv[1], "--tenant") == 0;
    int list = strcmp(argv[0], "list") == 0 && argc == 1;
    int revoke = strcmp(argv[0], "revoke") == 0 && argc == 2 && argv[1][0] != '\0';
    if (!create && !list && !revoke) {
        fputs(usage, stderr);
        return EXIT_USAGE;
    }
    struct config quick = *cfg;
    if (quick.db_wait_ms > KEYS_DB_WAIT_MS)
        quick.db_wait_ms = KEYS_DB_WAIT_MS;
    if ((db = open_migrated(&quick, cfg->migrate_on_start)) == NULL) {
        fputs("tocsin keys: no database at TOCSIN_DATABASE_URL (set it to the service's "
              "PostgreSQL; scripts/dev.sh prints the export lines)\n",
              stderr);
        return 1;
    }
    if (create)
        rc = keys_create(db, argv[2]);
    else if (list) {
        puts("PREFIX\tTENANT\tCREATED\tSTATE");
        rc = db_keys_list(db, print_key_row, NULL) >= 0 ? 0 : 1;
    } else if (db_keys_revoke(db, argv[1], &n) < 0)
        rc = 1;
    else {
        fprintf(stderr, "revoked %d key(s)\n", n);
        rc = n > 0 ? 0 : 1;
    }
    /* The db layer logs nothing; the handle is this command's own, so an error on it is ours. */
    if (rc != 0 && db_errmsg(db)[0] != '\0')
        fprintf(stderr, "tocsin keys: database: %s\n", db_errmsg(db));
    db_close(db);
    return rc;
}

/* A number option of `tocsin import` (--jobs, --batch, --rate): 1..max, or -1. */
static long
import_number(const char *s, long max)
{
    char *end;
    long n = strtol(s, &end, 10);

    return *s != '\0' && *end == '\0' && n >= 1 && n <= max ? n : -1;
}

/* One option of `tocsin import` at argv[*i] (its value taken too): false when it is not one of
 * them or its value is out of bounds. */
static bool
import_option(struct import_opts *o, int argc, char **argv, int *i)
{
    long n;

    if (*i + 1 >= argc)
        return false;
    if (strcmp(argv[*i], "--jobs") == 0 && (n = import_number(argv[*i + 1], IMPORT_JOBS_MAX)) > 0)
        o->jobs = (int)n;
    else if (strcmp(argv[*i], "--batch") == 0 &&
             (n = import_number(argv[*i + 1], IMPORT_BATCH_MAX)) > 0)
        o->batch = (size_t)n;
    else if (strcmp(argv[*i], "--rate") == 0 &&
             (n = import_number(argv[*i + 1], IMPORT_RATE_MAX)) > 0)
        o->rate = n;
    else
        return false;
    ++*i;
    return true;
}

/* `tocsin import --tenant NAME [--jobs N] [--batch N] [--rate N] FILE`: the tenant made if new,
 * as `keys create` makes it. */
static int
import(const struct config *cfg, int argc, char **argv)
{
    static const char usage[] =
        "usage: tocsin import --tenant NAME [--jobs N] [--batch N] [--rate N] FILE (JSON lines; - "
        "for standard input; --jobs 1..8, default 4; --batch 1..1000 lines, default 1000; --rate "
        "1..1000000 lines a second, default no bound)\n";
    _Static_assert(IMPORT_JOBS_MAX == 8 && IMPORT_JOBS_DEFAULT == 4 && IMPORT_BATCH_MAX == 1000 &&
                       IMPORT_RATE_MAX == 1000000,
                   "the usage lines say so");
    const char *tenant = NULL, *file = NULL;
    struct import_opts o = {.jobs = IMPORT_JOBS_DEFAULT, .batch = IMPORT_BATCH_MAX, .rate = 0};
    bool ok = true;
    int64_t tenant_id;
    struct db *db;
    FILE *in;
    int rc = 1;

    if (argc == 1 && is_help(argv[0])) {
        fputs(usage, stdout);
        return 0;
    }
    for (int i = 0; i < argc && ok; i++) {
        if (strcmp(argv[i], "--tenant") == 0 && i + 1 < argc)
            tenant = argv[++i];
        else if (file == NULL && (argv[i][0] != '-' || strcmp(argv[i], "-") == 0))
            file = argv[i];
        else
            ok = import_option(&o, argc, argv, &i);
    }
    if (!ok || tenant == NULL || file == NULL || !apikey_tenant_name_valid(tenant)) {
        fputs(usage, stderr);
        return EXIT_USAGE;
    }
    if ((in = strcmp(file, "-") == 0 ? stdin : fopen(file, "r")) == NULL) {
        perror(file);
        return 1;
    }
    struct config quick = *cfg;
    if (quick.db_wait_ms > KEYS_DB_WAIT_MS)
        quick.db_wait_ms = KEYS_DB_WAIT_MS;
    if ((db = open_migrated(&quick, cfg->migrate_on_start)) == NULL)
        fputs("tocsin import: no database at TOCSIN_DATABASE_URL\n", stderr);
    else if (db_tenant_ensure(db, tenant, &tenant_id) != DB_ONE_RESULT)
        fprintf(stderr, "tocsin import: database: %s\n", db_errmsg(db));
    else
        rc = import_run(cfg, db, tenant_id, &o, in, stderr);
    db_close(db);
    if (in != stdin)
        fclose(in);
    return rc;
}

int
main(int argc, char **argv)
{
    struct config cfg;
    char err[CONFIG_ERR_MAX];
    const char *cmd = argc > 1 ? argv[1] : "serve";

    int sub = strcmp(cmd, "keys") == 0 || strcmp(cmd, "import") == 0;

    if (is_help(cmd) || (argc > 2 && !sub && is_help(argv[2]))) {
        fputs(usage_main, stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0 && argc == 2) {
        printf("tocsin %s (commit %s)\n", version_number, version_commit);
        return 0;
    }
    if (strcmp(cmd, "serve") != 0 && strcmp(cmd, "migrate") != 0 && !sub) {
        fputs(usage_main, stderr);
        return EXIT_USAGE;
    }
    if (config_load(&cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "tocsin: %s\n", err);
        return EXIT_USAGE;
    }
    log_set_level(cfg.log_level);
    log_set_format(cfg.log_format);
    db_set_pooled(cfg.db_pooled != 0);
    if (strcmp(cmd, "migrate") == 0 && cfg.db_pooled) {
        fprintf(stderr, "tocsin: TOCSIN_DB_POOLED: migrations take a session lock that a pooler in "
                        "transaction mode cannot hold: run tocsin migrate with TOCSIN_DB_POOLED=0 "
                        "against PostgreSQL itself\n");
        return EXIT_USAGE;
    }
    if (strcmp(cmd, "keys") == 0)
        return keys(&cfg, argc - 2, argv + 2);
    if (strcmp(cmd, "import") == 0)
        return import(&cfg, argc - 2, argv + 2);
    if (argc > 2) {
        fputs(usage_main, stderr);
        return EXIT_USAGE;
    }
    if (strcmp(cmd, "migrate") == 0) {
        struct db *db = open_migrated(&cfg, 1);
        db_close(db);
        return db ? 0 : 1;
    }
    return serve(&cfg);
}
