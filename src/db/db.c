/* db.c -- the PostgreSQL connection: open/close, lazy prepared statements, reconnecting, error
 * classification into enum db_status and the transaction runner. The statements themselves live
 * in the other db_*.c files. Like hiredis, it never logs a failure: the status and its text stay
 * on the handle (db_err, db_errmsg) for the thread that owns it, which logs once per change. */
#include "db_internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "panic.h"
#include "strbuf.h"

#define DB_STATEMENT_TIMEOUT_MS "10000"
#define DB_STMT_NAME_MAX 32
/* Clamp for "no bound" arguments: year 1 .. about year 287000, inside what PostgreSQL timestamps
 * and a millisecond interval can hold, and outside every time the API accepts (1970..9999). */
#define DB_MS_MIN (-62135596800000LL)
#define DB_MS_MAX 9000000000000000LL

/* Written once at start (db_set_pooled), before any thread connects; read-only afterwards. */
static bool pooled;

void
db_set_pooled(bool on)
{
    pooled = on;
}

const char *
db_tracks_backend(void)
{
    return pooled ? "f" : "t";
}

struct db {
    PGconn *conn;
    bool in_order; /* db_open_in_order: its session is in order, generic plans */
    bool in_tx;    /* inside db_tx_run: never reconnect mid-transaction */
    bool stale;    /* on a server that turned read-only: reconnect before the next statement */
    bool prepared[DB_STMT_COUNT]; /* per connection; cleared when the connection is reset */
    char err[DB_ERR_MAX];
    enum db_status err_st; /* of the last failure: DB_SOFT_ERROR or DB_HARD_ERROR */
};

void
db_set_err(struct db *db, const char *fmt, ...)
{
    va_list ap;

    db->err_st = DB_HARD_ERROR; /* a statement function's own finding; classify may say soft */
    va_start(ap, fmt);
    vsnprintf(db->err, sizeof(db->err), fmt, ap);
    va_end(ap);
    /* libpq messages span lines (ERROR, DETAIL, HINT); a log event is one line. */
    for (char *p = db->err; *p != '\0'; p++) {
        if (*p == '\n' || *p == '\t')
            *p = ' ';
    }
    size_t n = strlen(db->err);
    while (n > 0 && db->err[n - 1] == ' ')
        db->err[--n] = '\0';
}

enum db_status
db_oom(struct db *db, const char *what)
{
    db_set_err(db, "%s: out of memory", what);
    return DB_HARD_ERROR;
}

void
db_note_error(struct db *db, const char *fmt, ...)
{
    char msg[DB_ERR_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    db_set_err(db, "%s", msg);
}

/* Server notices ("relation already exists, skipping") would go to stderr unformatted. */
static void
on_notice(void *arg, const char *message)
{
    int len = (int)strcspn(message, "\n");

    LOG_DEBUG("database notice: %.*s", len < 200 ? len : 200, message);
}

/* Session settings that must survive a reconnect. The statement timeout bounds how long a
 * request thread can hang on a lock or a slow plan. Prepared statements save the parse only: each
 * execution is planned with its parameters, for the tables as they are now, as the unnamed
 * statements behind a pooler are. Cached generic plans went wrong twice: one made while the
 * outbox was small scanned it whole on every delivery record as it grew (1,490 outbox rows read
 * per delivered reminder over a 10,000-reminder run here), and the fire statement, guessing 10
 * rows for its unnest, compared each batch of 1,024 with itself (364 ms a batch against 13).
 * db_exec_in_order may ask for a generic plan for one statement (DB_PLAN_GENERIC): with
 * sequential and bitmap scans off a generic plan cannot turn into either. A connection opened
 * with db_open_in_order has those scans off and generic plans for its whole session. JIT is off:
 * every statement here is short, and estimates that overshoot (the delivery lease's loose index
 * scan over a bloated outbox_held, millions of outbox rows) crossed jit_above_cost and compiled
 * for 215 ms a lease that then ran in 15 (bench/recover.mjs, a second recover). */
static int
setup_session(struct db *db)
{
    if (pooled) /* a session SET would stay on whichever server connection took it */
        return 0;
    PGresult *res = PQexec(
        db->conn, db->in_order
                      ? "SET statement_timeout = " DB_STATEMENT_TIMEOUT_MS "; SET jit = off"
                        "; SET plan_cache_mode = force_generic_plan; SET enable_bitmapscan = off;"
                        " SET enable_seqscan = off"
                      : "SET statement_timeout = " DB_STATEMENT_TIMEOUT_MS "; SET jit = off"
                        "; SET plan_cache_mode = force_custom_plan");

    int ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    if (!ok)
        db_set_err(db, "session setup: %s", PQerrorMessage(db->conn));
    PQclear(res);
    return ok ? 0 : -1;
}

static struct db *
open_session(const char *url, bool in_order, char *err, size_t errlen)
{
    /* The keys before dbname are defaults the URL may override (libpq lets each value override
     * the ones before it); those after it are ours whatever the URL says. */
    static const char *const keys[] = {
        "keepalives",       "keepalives_idle",           "keepalives_interval",
        "keepalives_count", "tcp_user_timeout",          "dbname",
        "connect_timeout",  "fallback_application_name", NULL};
    char timeout[DB_I64_BUF], idle[DB_I64_BUF], interval[DB_I64_BUF], count[DB_I64_BUF],
        user_timeout[DB_I64_BUF];
    const char *values[] = {"1",
                            db_i64(idle, DB_KEEPALIVE_IDLE_S),
                            db_i64(interval, DB_KEEPALIVE_INTERVAL_S),
                            db_i64(count, DB_KEEPALIVE_COUNT),
                            db_i64(user_timeout, DB_TCP_USER_TIMEOUT_MS),
                            url,
                            db_i64(timeout, DB_CONNECT_TIMEOUT_S),
                            "tocsin",
                            NULL};
    _Static_assert(sizeof values / sizeof *values == sizeof keys / sizeof *keys, "one value a key");
    struct db *db = calloc(1, sizeof(*db));

    if (db == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    db->in_order = in_order;
    db->conn = PQconnectdbParams(keys, values, 1);
    if (db->conn != NULL)
        PQsetNoticeProcessor(db->conn, on_notice, NULL);
    if (db->conn == NULL || PQstatus(db->conn) != CONNECTION_OK || setup_session(db) != 0) {
        if (db->conn != NULL && db->err[0] == '\0')
            db_set_err(db, "%s", PQerrorMessage(db->conn));
        snprintf(err, errlen, "database: %s", db->conn == NULL ? "out of memory" : db->err);
        db_close(db);
        return NULL;
    }
    return db;
}

struct db *
db_open(const char *url, char *err, size_t errlen)
{
    return open_session(url, false, err, errlen);
}

struct db *
db_open_in_order(const char *url, char *err, size_t errlen)
{
    return open_session(url, true, err, errlen);
}

int
db_url_check(const char *url, char *err, size_t errlen)
{
    char *why = NULL;
    PQconninfoOption *opts = PQconninfoParse(url, &why);

    if (opts != NULL) {
        PQconninfoFree(opts);
        return 0;
    }
    /* libpq's message ends with a newline; NULL message = out of memory. */
    snprintf(err, errlen, "%.*s", why ? (int)strcspn(why, "\n") : 13, why ? why : "out of memory");
    PQfreemem(why);
    return -1;
}

void
db_close(struct db *db)
{
    if (db == NULL)
        return;
    PQfinish(db->conn);
    free(db);
}

int
db_socket(const struct db *db)
{
    return db != NULL && db->conn != NULL ? PQsocket(db->conn) : -1;
}

enum db_status
db_err(const struct db *db)
{
    return db->err_st;
}

const char *
db_errmsg(const struct db *db)
{
    return db->err;
}

PGconn *
db_conn(struct db *db)
{
    return db->conn;
}

/* Reconnects a broken connection when that is safe (no transaction open). Prepared statements
 * die with the old session. Returns 0 when the connection is usable, or -1 with a soft error
 * recorded (the owner notices the outage; it logs nothing here, nor the reconnection). */
static int
ensure_conn(struct db *db)
{
    if (PQstatus(db->conn) == CONNECTION_OK && !db->stale)
        return 0;
    if (db->in_tx) {
        db_set_err(db, "connection lost inside a transaction");
    } else {
        /* PQreset walks the URL's host list from its start again, so a multi-host URL with
         * target_session_attrs=read-write lands on whichever host accepts writes now. */
        memset(db->prepared, 0, sizeof(db->prepared));
        db->stale = false;
        PQreset(db->conn);
        if (PQstatus(db->conn) != CONNECTION_OK)
            db_set_err(db, "reconnect: %s", PQerrorMessage(db->conn));
        else if (setup_session(db) == 0)
            return 0;
    }
    db->err_st = DB_SOFT_ERROR;
    return -1;
}

/* A write refused because the server is read-only: a primary demoted to a standby after a
 * failover (the old primary still up) or a server set default_transaction_read_only. The session
 * stays open and would refuse every write; only a new one finds the host that takes writes. */
#define SQLSTATE_READ_ONLY "25006"

/* Soft: worth retrying the whole transaction. Serialization failure, deadlock, the connection
 * class (08), the server shutting down or starting (57P01..57P03), a read-only server (25006),
 * or no SQLSTATE at all because the connection broke. */
static bool
is_soft(PGconn *conn, const char *state)
{
    if (state == NULL)
        return PQstatus(conn) != CONNECTION_OK;
    return strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0 ||
           strncmp(state, "08", 2) == 0 || strcmp(state, "57P01") == 0 ||
           strcmp(state, "57P02") == 0 || strcmp(state, "57P03") == 0 ||
           strcmp(state, SQLSTATE_READ_ONLY) == 0;
}

/* Turns a failed result into a status and records it and the message. Clears res. */
static enum db_status
classify(struct db *db, PGresult *res, const char *what)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    const char *msg = res ? PQresultErrorMessage(res) : "";

    if (msg == NULL || msg[0] == '\0')
        msg = PQerrorMessage(db->conn);
    db_set_err(db, "%s: %s%s%s", what, state ? state : "", state ? " " : "", msg);
    enum db_status st = is_soft(db->conn, state) ? DB_SOFT_ERROR : DB_HARD_ERROR;
    db->err_st = st;
    if (state != NULL && strcmp(state, SQLSTATE_READ_ONLY) == 0)
        db->stale = true;
    PQclear(res);
    return st;
}

static enum db_status
prepare(struct db *db, enum db_stmt id, const char *name, const char *sql, int n)
{
    PGresult *res = PQprepare(db->conn, name, sql, n, NULL);

    if (PQresultStatus(res) != PGRES_COMMAND_OK)
        return classify(db, res, name);
    PQclear(res);
    db->prepared[id] = true;
    return DB_ONE_RESULT;
}

enum db_status
db_exec(struct db *db, enum db_stmt id, const char *sql, int n, const char *const *values,
        PGresult **res)
{
    char name[DB_STMT_NAME_MAX];

    *res = NULL;
    if (ensure_conn(db) != 0)
        return DB_SOFT_ERROR;
    if (id == DB_STMT_UNPREPARED || pooled) {
        *res = PQexecParams(db->conn, sql, n, NULL, values, NULL, NULL, 0);
        snprintf(name, sizeof(name), "statement %d", (int)id);
    } else {
        snprintf(name, sizeof(name), "tocsin_%d", (int)id);
        if (!db->prepared[id]) {
            enum db_status st = prepare(db, id, name, sql, n);
            if (st != DB_ONE_RESULT)
                return st;
        }
        *res = PQexecPrepared(db->conn, name, n, values, NULL, NULL, 0);
    }
    ExecStatusType rs = PQresultStatus(*res);
    if (rs == PGRES_TUPLES_OK || rs == PGRES_COMMAND_OK)
        return DB_ONE_RESULT;
    enum db_status st = classify(db, *res, name);
    *res = NULL;
    return st;
}

/* db_exec_generic's settings: no parameters, so their own plans are cached whatever the mode. */
static const char plan_generic_sql[] =
    "SELECT set_config('plan_cache_mode', 'force_generic_plan', true)";
static const char plan_custom_sql[] =
    "SELECT set_config('plan_cache_mode', 'force_custom_plan', true)";
#define PIPED_MAX 3 /* the generic mode, the statement, the session's mode again */

struct piped {
    enum db_stmt id;
    const char *sql;
    int n;
    const char *const *values;
};

/* Sends q[0..nq) in one pipeline and one Sync; *res gets the result of q[keep]. Every result is
 * read up to the Sync whatever failed, so the connection leaves pipeline mode as it entered it;
 * one that broke is reset by the next ensure_conn (PQreset ends pipeline mode too). */
static enum db_status
exec_piped(struct db *db, const struct piped *q, size_t nq, size_t keep, PGresult **res)
{
    char name[PIPED_MAX][DB_STMT_NAME_MAX];
    enum db_status st = DB_ONE_RESULT;
    size_t sent = 0;
    PGresult *r;

    for (size_t i = 0; i < nq; i++) {
        snprintf(name[i], sizeof name[i], "tocsin_%d", (int)q[i].id);
        if (!db->prepared[q[i].id] &&
            (st = prepare(db, q[i].id, name[i], q[i].sql, q[i].n)) != DB_ONE_RESULT)
            return st;
    }
    if (PQenterPipelineMode(db->conn) != 1)
        return classify(db, NULL, "pipeline");
    while (sent < nq &&
           PQsendQueryPrepared(db->conn, name[sent], q[sent].n, q[sent].values, NULL, NULL, 0) == 1)
        sent++;
    if (sent < nq || PQpipelineSync(db->conn) != 1)
        st = classify(db, NULL, name[sent < nq ? sent : nq - 1]);
    for (size_t i = 0; i < sent; i++) {
        while ((r = PQgetResult(db->conn)) != NULL) {
            ExecStatusType rs = PQresultStatus(r);
            if (rs != PGRES_TUPLES_OK && rs != PGRES_COMMAND_OK) {
                if (st == DB_ONE_RESULT)
                    st = classify(db, r, name[i]);
                else
                    PQclear(r);
            } else if (i == keep && st == DB_ONE_RESULT) {
                *res = r;
            } else {
                PQclear(r);
            }
        }
    }
    /* Then the Sync's result; before it, an error of the commit it made in autocommit. */
    while (sent == nq && (r = PQgetResult(db->conn)) != NULL) {
        bool sync = PQresultStatus(r) == PGRES_PIPELINE_SYNC;
        if (!sync && st == DB_ONE_RESULT)
            st = classify(db, r, "commit");
        else
            PQclear(r);
        if (sync)
            break;
    }
    if (PQexitPipelineMode(db->conn) != 1 && st == DB_ONE_RESULT)
        st = classify(db, NULL, "pipeline");
    if (st != DB_ONE_RESULT) {
        PQclear(*res);
        *res = NULL;
    }
    return st;
}

enum db_status
db_exec_generic(struct db *db, enum db_stmt id, const char *sql, int n, const char *const *values,
                PGresult **res)
{
    const struct piped q[PIPED_MAX] = {{STMT_PLAN_GENERIC, plan_generic_sql, 0, NULL},
                                       {id, sql, n, values},
                                       {STMT_PLAN_CUSTOM, plan_custom_sql, 0, NULL}};

    if (pooled || db->in_order || id == DB_STMT_UNPREPARED)
        return db_exec(db, id, sql, n, values, res);
    *res = NULL;
    if (ensure_conn(db) != 0)
        return DB_SOFT_ERROR;
    /* In autocommit the statement's transaction ends at the Sync, and the mode with it. */
    return exec_piped(db, q, db->in_tx ? PIPED_MAX : PIPED_MAX - 1, 1, res);
}

enum db_status
db_exec_i64(struct db *db, enum db_stmt id, const char *sql, int n, const char *const *values,
            int64_t *out)
{
    PGresult *res;
    enum db_status st = db_exec(db, id, sql, n, values, &res);

    if (st != DB_ONE_RESULT)
        return st;
    st = PQntuples(res) > 0 ? DB_ONE_RESULT : DB_NO_RESULTS;
    if (st == DB_ONE_RESULT)
        *out = db_get_i64(res, 0, 0);
    PQclear(res);
    return st;
}

enum db_status
db_exec_one_row(struct db *db, enum db_stmt id, const char *sql, int n, const char *const *values)
{
    PGresult *res;
    enum db_status st = db_exec(db, id, sql, n, values, &res);

    if (st != DB_ONE_RESULT)
        return st;
    st = db_affected(res) == 1 ? DB_ONE_RESULT : DB_NO_RESULTS;
    PQclear(res);
    return st;
}

enum db_status
db_exec_ids(struct db *db, enum db_stmt id, const char *sql, const char *const *ids, size_t n,
            const char *what, PGresult **res)
{
    struct strbuf b = {0};
    const char *params[] = {db_array_ids(&b, ids, n)};
    enum db_status st = params[0] == NULL ? db_oom(db, what) : db_exec(db, id, sql, 1, params, res);

    strbuf_fini(&b);
    return st;
}

enum db_status
db_exec_simple(struct db *db, const char *sql)
{
    if (ensure_conn(db) != 0)
        return DB_SOFT_ERROR;
    PGresult *res = PQexec(db->conn, sql);
    ExecStatusType rs = PQresultStatus(res);
    if (rs == PGRES_TUPLES_OK || rs == PGRES_COMMAND_OK) {
        PQclear(res);
        return DB_ONE_RESULT;
    }
    return classify(db, res, "simple query");
}

/* One look at whether the session's server takes writes: DB_ONE_RESULT when it does,
 * DB_NO_RESULTS (the connection then marked stale) when it is read-only, else the error. */
static enum db_status
ping_once(struct db *db)
{
    if (ensure_conn(db) != 0)
        return DB_SOFT_ERROR;
    PGresult *res = PQexec(db->conn, "SELECT current_setting('transaction_read_only')");
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        return classify(db, res, "ping");
    bool read_only = PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, 0), "on") == 0;
    PQclear(res);
    if (!read_only)
        return DB_ONE_RESULT;
    db->stale = true;
    db->err_st = DB_SOFT_ERROR;
    db_set_err(db, "the server is read-only (a standby, or default_transaction_read_only)");
    return DB_NO_RESULTS;
}

enum db_ping
db_ping(struct db *db)
{
    enum db_status st = DB_SOFT_ERROR;

    /* An idle connection only learns that the server went away, or that it turned read-only,
     * when it is used: one retry lets ensure_conn reconnect (to the host that takes writes now,
     * with a multi-host URL). */
    for (int attempt = 0; attempt < 2 && st != DB_ONE_RESULT; attempt++)
        st = ping_once(db);
    if (st == DB_ONE_RESULT)
        return DB_PING_OK;
    return st == DB_NO_RESULTS ? DB_PING_READ_ONLY : DB_PING_DOWN;
}

/* Truncated like the local readings (dbclock.c allows 1 ms for that): DB_MS rounds, which could
 * put a sample up to half a millisecond ahead of the database, and an occurrence handed out on it
 * would find the fire statement's now() not yet at its time (left for the sweep, seconds late). */
enum db_status
db_clock_ms(struct db *db, int64_t *ms)
{
    return db_exec_i64(db, STMT_CLOCK,
                       "SELECT floor(extract(epoch from clock_timestamp()) * 1000)::bigint", 0,
                       NULL, ms);
}

/* COMMIT of a transaction that already failed answers "ROLLBACK" without an error: that means fn
 * swallowed a failed statement, which is our bug. */
static enum db_status
commit(struct db *db)
{
    PGresult *res = PQexec(db->conn, "COMMIT");

    if (PQresultStatus(res) != PGRES_COMMAND_OK)
        return classify(db, res, "COMMIT");
    bool committed = strcmp(PQcmdStatus(res), "COMMIT") == 0;
    PQclear(res);
    if (committed)
        return DB_ONE_RESULT;
    db_set_err(db, "transaction was rolled back: a statement failed but fn went on");
    return DB_HARD_ERROR;
}

static void
rollback(struct db *db)
{
    /* Best effort: on a broken connection the server has rolled back already. */
    PQclear(PQexec(db->conn, "ROLLBACK"));
}

static enum db_status
tx_once(struct db *db, db_tx_fn fn, void *arg)
{
    enum db_status st = db_exec_simple(
        db, pooled ? "BEGIN; SET LOCAL statement_timeout = " DB_STATEMENT_TIMEOUT_MS : "BEGIN");

    if (st != DB_ONE_RESULT)
        return st;
    db->in_tx = true;
    st = fn(db, arg);
    if (st == DB_HARD_ERROR || st == DB_SOFT_ERROR) {
        rollback(db);
        db->in_tx = false;
        return st;
    }
    enum db_status cst = commit(db);
    db->in_tx = false;
    return cst == DB_ONE_RESULT ? st : cst;
}

enum db_status
db_tx_run(struct db *db, db_tx_fn fn, void *arg)
{
    enum db_status st = DB_SOFT_ERROR;

    TOCSIN_ASSERT(!db->in_tx); /* transactions do not nest */
    /* The first run plus DB_TX_RETRIES_MAX retries. */
    for (int attempt = 0; attempt <= DB_TX_RETRIES_MAX; attempt++) {
        db_set_err(db, "transaction function reported a soft error");
        db->err_st = DB_SOFT_ERROR;
        st = tx_once(db, fn, arg);
        if (st != DB_SOFT_ERROR)
            return st;
    }
    return st; /* the last attempt's error is on the handle */
}

/* One statement in a transaction of its own with bitmap and sequential scans off
 * (db_exec_in_order). */
#define IN_ORDER_SETTINGS "SET LOCAL enable_bitmapscan = off; SET LOCAL enable_seqscan = off"
/* What DB_PLAN_GENERIC adds to them, and what DB_PLAN_CUSTOM adds on an in-order session. */
#define GENERIC_PLAN_SETTING "SET LOCAL plan_cache_mode = force_generic_plan"
#define CUSTOM_PLAN_SETTING "SET LOCAL plan_cache_mode = force_custom_plan"
struct in_order {
    enum db_stmt id;
    const char *sql;
    int n;
    const char *const *values;
    enum db_plan plan;
    PGresult *res;
};

static enum db_status
in_order_tx(struct db *db, void *arg)
{
    struct in_order *o = arg;
    enum db_status st =
        db_exec_simple(db, o->plan == DB_PLAN_GENERIC ? IN_ORDER_SETTINGS "; " GENERIC_PLAN_SETTING
                                                      : IN_ORDER_SETTINGS "; " CUSTOM_PLAN_SETTING);

    PQclear(o->res); /* a retried transaction's first result */
    o->res = NULL;
    if (st != DB_ONE_RESULT)
        return st;
    return db_exec(db, o->id, o->sql, o->n, o->values, &o->res);
}

enum db_status
db_exec_in_order(struct db *db, enum db_stmt id, const char *sql, int n, const char *const *values,
                 enum db_plan plan, PGresult **res)
{
    struct in_order o = {id, sql, n, values, plan, NULL};
    enum db_status st = DB_SOFT_ERROR;

    /* Its session has the settings already: the statement alone, retried as db_tx_run would. */
    if (db->in_order && !pooled && plan == DB_PLAN_GENERIC) {
        TOCSIN_ASSERT(!db->in_tx);
        for (int attempt = 0; attempt <= DB_TX_RETRIES_MAX && st == DB_SOFT_ERROR; attempt++)
            st = db_exec(db, id, sql, n, values, res);
        return st;
    }
    st = db_tx_run(db, in_order_tx, &o);

    if (st != DB_ONE_RESULT) {
        PQclear(o.res);
        o.res = NULL;
    }
    *res = o.res;
    return st;
}

const char *
db_i64(char buf[DB_I64_BUF], int64_t v)
{
    snprintf(buf, DB_I64_BUF, "%" PRId64, v);
    return buf;
}

const char *
db_ms(char buf[DB_I64_BUF], int64_t ms)
{
    if (ms < DB_MS_MIN)
        ms = DB_MS_MIN;
    if (ms > DB_MS_MAX)
        ms = DB_MS_MAX;
    return db_i64(buf, ms);
}

const char *
db_like_pattern(const char *q, char out[DB_LIKE_BUF])
{
    size_t n = 0;

    out[n++] = '%';
    for (size_t i = 0; i < DB_SEARCH_Q_MAX && q[i] != '\0'; i++) {
        if (q[i] == '\\' || q[i] == '%' || q[i] == '_')
            out[n++] = '\\';
        out[n++] = q[i];
    }
    out[n++] = '%';
    out[n] = '\0';
    return out;
}

int64_t
db_get_i64(const PGresult *res, int row, int col)
{
    if (PQgetisnull(res, row, col))
        return 0;
    return strtoll(PQgetvalue(res, row, col), NULL, 10);
}

char *
db_get_str(const PGresult *res, int row, int col)
{
    if (PQgetisnull(res, row, col))
        return NULL;
    return strdup(PQgetvalue(res, row, col));
}

int
db_get_opt_str(const PGresult *res, int row, int col, char **out)
{
    *out = db_get_str(res, row, col);
    return *out == NULL && !PQgetisnull(res, row, col) ? -1 : 0;
}

long
db_affected(PGresult *res)
{
    return strtol(PQcmdTuples(res), NULL, 10);
}
