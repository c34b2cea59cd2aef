/* db_migrate.c -- applies the migrations compiled in from migrations/ (db_migrations.h). Replicas
 * starting together serialize on a session advisory lock; each migration runs in its own
 * transaction together with its row in schema_migrations (version, file name, SHA-256). */
#include <stdio.h>
#include <string.h>

#include "crypto.h"
#include "db_internal.h"
#include "db_migrations.h"
#include "log.h"

/* Any fixed number works as long as nothing else in the database uses it: "tocsin" in ASCII. */
#define MIGRATE_LOCK_KEY "128021758699886"
#define MIGRATIONS_MAX 999 /* NNN in the file names */
#define CHECKSUM_HEX_LEN CRYPTO_SHA256_HEX_LEN

static const char create_table_sql[] = "CREATE TABLE IF NOT EXISTS schema_migrations ("
                                       " version int PRIMARY KEY,"
                                       " name text NOT NULL,"
                                       " checksum text NOT NULL,"
                                       " applied_at timestamptz NOT NULL DEFAULT now())";

static const struct db_migration *
find(int version)
{
    for (size_t i = 0; i < db_migrations_count; i++) {
        if (db_migrations[i].version == version)
            return &db_migrations[i];
    }
    return NULL;
}

/* Compares the recorded migrations with the embedded ones and marks which are applied. A
 * recorded version we do not know (a newer binary migrated this database) is accepted: older
 * replicas keep working during a rolling upgrade. Returns 0, or -1 with err filled. */
static int
compare(struct db *db, bool applied[MIGRATIONS_MAX + 1], char *err, size_t errlen)
{
    PGresult *res;
    char sum[CHECKSUM_HEX_LEN + 1];
    int rc = 0;

    memset(applied, 0, (MIGRATIONS_MAX + 1) * sizeof(applied[0]));
    if (db_exec(db, DB_STMT_UNPREPARED, "SELECT version, checksum FROM schema_migrations", 0, NULL,
                &res) != DB_ONE_RESULT) {
        snprintf(err, errlen, "reading schema_migrations: %s", db_errmsg(db));
        return -1;
    }
    for (int row = 0; row < PQntuples(res) && rc == 0; row++) {
        const struct db_migration *m = find((int)db_get_i64(res, row, 0));
        if (m == NULL)
            continue;
        crypto_sha256_hex(m->sql, strlen(m->sql), sum);
        if (strcmp(sum, PQgetvalue(res, row, 1)) != 0) {
            snprintf(err, errlen,
                     "migration %s was changed after it was applied (checksum mismatch); "
                     "add a new migration instead of editing an applied one",
                     m->name);
            rc = -1;
        } else {
            applied[m->version] = true;
        }
    }
    PQclear(res);
    return rc;
}

static enum db_status
apply_one(struct db *db, void *arg)
{
    const struct db_migration *m = arg;
    char version[DB_I64_BUF];
    char sum[CHECKSUM_HEX_LEN + 1];
    PGresult *res;

    crypto_sha256_hex(m->sql, strlen(m->sql), sum);
    enum db_status st = db_exec_simple(db, m->sql);
    if (st != DB_ONE_RESULT)
        return st;
    const char *params[] = {db_i64(version, m->version), m->name, sum};
    st = db_exec(db, DB_STMT_UNPREPARED,
                 "INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)", 3,
                 params, &res);
    PQclear(res);
    return st;
}

static int
lock(struct db *db, bool take)
{
    const char *params[] = {MIGRATE_LOCK_KEY};
    PGresult *res;
    enum db_status st = db_exec(db, DB_STMT_UNPREPARED,
                                take ? "SELECT pg_advisory_lock($1::bigint)"
                                     : "SELECT pg_advisory_unlock($1::bigint)",
                                1, params, &res);

    PQclear(res);
    return st == DB_ONE_RESULT ? 0 : -1;
}

static int
apply_pending(struct db *db, char *err, size_t errlen)
{
    bool applied[MIGRATIONS_MAX + 1];

    if (db_exec_simple(db, create_table_sql) != DB_ONE_RESULT) {
        snprintf(err, errlen, "creating schema_migrations: %s", db_errmsg(db));
        return -1;
    }
    if (compare(db, applied, err, errlen) != 0)
        return -1;
    for (size_t i = 0; i < db_migrations_count; i++) {
        const struct db_migration *m = &db_migrations[i];
        if (applied[m->version])
            continue;
        if (db_tx_run(db, apply_one, (void *)m) != DB_ONE_RESULT) {
            snprintf(err, errlen, "applying %s: %s", m->name, db_errmsg(db));
            return -1;
        }
        LOG_INFO("applied migration %s", m->name);
    }
    return 0;
}

int
db_migrate(struct db *db, char *err, size_t errlen)
{
    if (lock(db, true) != 0) {
        snprintf(err, errlen, "taking the migration lock: %s", db_errmsg(db));
        return -1;
    }
    int rc = apply_pending(db, err, errlen);
    /* A lost connection releases the lock by itself, so a failed unlock is only logged. */
    if (lock(db, false) != 0)
        LOG_WARN("releasing the migration lock: %s", db_errmsg(db));
    return rc;
}

int
db_migrate_current(struct db *db)
{
    bool applied[MIGRATIONS_MAX + 1];
    char err[DB_ERR_MAX];
    PGresult *res;

    /* Before the first migration the table does not exist: not current, and not worth an
     * error in the log on every readiness probe. */
    if (db_exec(db, DB_STMT_UNPREPARED, "SELECT to_regclass('schema_migrations') IS NOT NULL", 0,
                NULL, &res) != DB_ONE_RESULT)
        return -1;
    bool exists = PQgetvalue(res, 0, 0)[0] == 't';
    PQclear(res);
    if (!exists || compare(db, applied, err, sizeof(err)) != 0)
        return -1;
    for (size_t i = 0; i < db_migrations_count; i++) {
        if (!applied[db_migrations[i].version])
            return -1;
    }
    return 0;
}
