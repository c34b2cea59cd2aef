/* fixture.h -- what the database integration tests share: a database of their own on the server
 * of TOCSIN_TEST_DATABASE_URL (created at start, dropped at the end), a raw libpq connection for
 * poking rows, and meeting fixtures. Header-only like check.h: one test executable is one
 * translation unit (the helpers a test may not use are inline). Fails, never skips, without a
 * server. */
#ifndef TOCSIN_TESTS_FIXTURE_H
#define TOCSIN_TESTS_FIXTURE_H

#include <inttypes.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "meeting.h"

#define FIXTURE_URL_MAX 1024
#define FIXTURE_DBNAME_MAX 64
#define FIXTURE_MIN_MS 60000LL
#define FIXTURE_WAIT_ZERO_MS 10000 /* fixture_sql_reaches_zero's bound */
#define FIXTURE_POLL_MS 20

static PGconn *fixture_raw;

/* Runs sql with up to three text parameters on the raw connection; returns the first column of
 * the first row as a number (0 when there is none; the row count for commands), or -1 on error. */
static inline long long
fixture_sql(const char *sql, const char *p1, const char *p2, const char *p3)
{
    const char *params[] = {p1, p2, p3};
    int n = p3 ? 3 : p2 ? 2 : p1 ? 1 : 0;
    PGresult *res = PQexecParams(fixture_raw, sql, n, NULL, params, NULL, NULL, 0);
    long long v = -1;

    if (PQresultStatus(res) == PGRES_TUPLES_OK)
        v = PQntuples(res) > 0 && !PQgetisnull(res, 0, 0) ? atoll(PQgetvalue(res, 0, 0)) : 0;
    else if (PQresultStatus(res) == PGRES_COMMAND_OK)
        v = atoll(PQcmdTuples(res));
    else
        printf("raw sql failed: %s: %s", sql, PQerrorMessage(fixture_raw));
    PQclear(res);
    return v;
}

/* Runs sql (one optional parameter) every FIXTURE_POLL_MS until it answers 0, for up to
 * FIXTURE_WAIT_ZERO_MS: something that happens on its own a moment later (a closed connection's
 * backend exiting). Returns whether it got there. */
static inline bool
fixture_sql_reaches_zero(const char *sql, const char *p1)
{
    for (int waited = 0; waited < FIXTURE_WAIT_ZERO_MS; waited += FIXTURE_POLL_MS) {
        if (fixture_sql(sql, p1, NULL, NULL) == 0)
            return true;
        nanosleep(&(struct timespec){.tv_nsec = FIXTURE_POLL_MS * 1000000L}, NULL);
    }
    return false;
}

static inline const char *
fixture_i64(char buf[32], int64_t v)
{
    snprintf(buf, 32, "%" PRId64, v);
    return buf;
}

/* url with its database replaced by dbname (URIs get a new path; key=value strings a trailing
 * dbname=, the last value of a keyword winning). */
static int
fixture_url_with_db(const char *url, const char *dbname, char out[FIXTURE_URL_MAX])
{
    const char *scheme = strstr(url, "://");
    int n;

    if (scheme == NULL) {
        n = snprintf(out, FIXTURE_URL_MAX, "%s dbname=%s", url, dbname);
    } else {
        const char *host = scheme + 3;
        size_t hostlen = strcspn(host, "/?");
        const char *query = strchr(host + hostlen, '?');
        n = snprintf(out, FIXTURE_URL_MAX, "%.*s/%s%s", (int)(host - url + hostlen), url, dbname,
                     query ? query : "");
    }
    return n > 0 && n < FIXTURE_URL_MAX ? 0 : -1;
}

static int
fixture_admin(PGconn *admin, const char *sql)
{
    PGresult *res = PQexec(admin, sql);
    int ok = PQresultStatus(res) == PGRES_COMMAND_OK;

    if (!ok)
        printf("admin sql failed: %s: %s", sql, PQerrorMessage(admin));
    PQclear(res);
    return ok ? 0 : -1;
}

/* Creates the database <name>_<pid>, runs run(url of it), drops it. Returns the exit status. */
static int
fixture_main(const char *name, void (*run)(const char *url))
{
    const char *url = getenv("TOCSIN_TEST_DATABASE_URL");
    char dbname[FIXTURE_DBNAME_MAX], sql[2 * FIXTURE_DBNAME_MAX], test_url[FIXTURE_URL_MAX];

    CHECK(url != NULL && url[0] != '\0', "TOCSIN_TEST_DATABASE_URL is not set (a libpq URL of a "
                                         "PostgreSQL where this test may CREATE DATABASE)");
    if (fails > 0)
        return check_summary(name);
    PGconn *admin = PQconnectdb(url);
    CHECK(PQstatus(admin) == CONNECTION_OK, "cannot connect to TOCSIN_TEST_DATABASE_URL: %s",
          PQerrorMessage(admin));
    /* The name is built from ours and the pid, not from input: safe to format into SQL. */
    snprintf(dbname, sizeof dbname, "%s_%ld", name, (long)getpid());
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", dbname);
    if (fails == 0)
        CHECK(fixture_admin(admin, sql) == 0 && fixture_url_with_db(url, dbname, test_url) == 0,
              "cannot create the test database %s", dbname);
    if (fails > 0) {
        PQfinish(admin);
        return check_summary(name);
    }
    fixture_raw = PQconnectdb(test_url);
    CHECK(PQstatus(fixture_raw) == CONNECTION_OK, "raw connection: %s",
          PQerrorMessage(fixture_raw));
    if (PQstatus(fixture_raw) == CONNECTION_OK)
        run(test_url);
    PQfinish(fixture_raw);
    snprintf(sql, sizeof sql, "DROP DATABASE %s WITH (FORCE)", dbname);
    CHECK(fixture_admin(admin, sql) == 0, "cannot drop the test database %s", dbname);
    PQfinish(admin);
    return check_summary(name);
}

/* A meeting starting at starts_at_ms with reminders minutes[0..n), participant "u1". */
static inline void
fixture_meeting(struct meeting *m, const char *title, int64_t starts_at_ms, const int *minutes,
                size_t n)
{
    meeting_init(m);
    if (meeting_new_id(m->id) != 0)
        CHECK(0, "meeting_new_id");
    m->title = strdup(title);
    m->starts_at_ms = starts_at_ms;
    m->participants_json =
        strdup("[{\"id\":\"u1\",\"name\":\"Ada\",\"email\":\"ada@example.com\"}]");
    m->created_at_ms = m->updated_at_ms = starts_at_ms - 60 * FIXTURE_MIN_MS;
    m->n_reminders = n;
    for (size_t i = 0; i < n; i++)
        m->reminders[i].minutes_before = minutes[i];
    meeting_derive_fire_times(m);
}

#endif
