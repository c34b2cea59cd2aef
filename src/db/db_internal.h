/* db_internal.h -- what the db*.c files share and nobody else sees: the statement ids, the one
 * function that runs a statement (lazy PREPARE, reconnect, error classification) and helpers for
 * the text-format parameters and results. Only db*.c include this (it includes libpq-fe.h). */
#ifndef TOCSIN_DB_INTERNAL_H
#define TOCSIN_DB_INTERNAL_H

#include <libpq-fe.h>

#include "db.h"

/* Every prepared statement; the id indexes the per-connection "prepared" flags and names the
 * statement (tocsin_<id>), so ids keep the order they were added in, each marked with its file. */
enum db_stmt {
    STMT_TENANT_ENSURE, /* db_tenant.c */
    STMT_TENANT_LOCK,
    STMT_KEY_INSERT, /* db_keys.c */
    STMT_KEY_LOOKUP,
    STMT_KEY_LIST,
    STMT_KEY_REVOKE,
    STMT_MEETING_INSERT, /* db_meeting.c */
    STMT_MEETING_GET,    /* db_meeting_get.c */
    STMT_MEETING_GET_FOR_UPDATE,
    STMT_MEETING_UPDATE, /* db_meeting.c */
    STMT_MEETING_DELETE,
    STMT_MEETING_CANCEL_REMINDERS,
    STMT_MEETING_LIST, /* db_meeting_list.c */
    STMT_IDEM_LOCK,    /* db_idem.c */
    STMT_IDEM_GET,
    STMT_IDEM_PUT,
    STMT_REMINDER_DUE_SHARDS, /* db_reminder.c */
    STMT_REMINDER_SHARD_WALK,
    STMT_REMINDER_FIRE_BATCH, /* db_fire.c */
    STMT_OUTBOX_BACKLOG,      /* db_outbox.c */
    STMT_OUTBOX_OLDEST_DUE,
    STMT_OUTBOX_CLAIM,
    STMT_OUTBOX_DELIVERED,
    STMT_OUTBOX_FAILED,
    STMT_OUTBOX_RELEASE,
    STMT_OUTBOX_PASS_ON,
    STMT_OUTBOX_OWNER_REGISTER,
    STMT_OUTBOX_OWNER_RENEW,
    STMT_OUTBOX_OWNER_LEAVE,
    STMT_OUTBOX_DELIVERIES,
    STMT_DELIVERY_SEARCH, /* db_delivery.c */
    STMT_DELIVERY_GET,
    STMT_DELIVERY_RETRY,
    STMT_DELIVERY_RECOVER,
    STMT_STATS,          /* db_stats.c */
    STMT_WEBHOOK_INSERT, /* db_webhook.c */
    STMT_WEBHOOK_LIST,
    STMT_WEBHOOK_GET,
    STMT_WEBHOOK_UPDATE,
    STMT_WEBHOOK_DISABLE,
    STMT_WEBHOOK_ROTATE,
    STMT_WEBHOOK_DELETE,
    STMT_CLOCK,       /* db.c */
    STMT_MEMBER_BEAT, /* db_members.c */
    STMT_MEMBER_LEAVE,
    STMT_STREAM_HEADS, /* db_stream.c */
    STMT_STREAM_EVENTS,
    STMT_STREAM_EVENTS_FOR,
    STMT_STREAM_LATEST,
    STMT_SIGNING_KEY_COUNT, /* db_signing_key.c */
    STMT_SIGNING_KEY_INSERT,
    STMT_SIGNING_KEY_LIST,
    STMT_SIGNING_KEY_REVOKE,
    STMT_SIGNING_KEY_GET,
    STMT_SIGNING_KEY_NEWEST,
    STMT_SIGNING_KEY_LIVE,
    STMT_VAPID_KEY_GET, /* db_push.c */
    STMT_VAPID_KEY_PUT,
    STMT_PUSH_SUB_SAME,
    STMT_PUSH_SUB_TAKE,
    STMT_PUSH_SUB_COUNT,
    STMT_PUSH_SUB_INSERT,
    STMT_PUSH_SUB_DELETE,
    STMT_PUSH_SUB_GONE,
    STMT_SERIES_PUT, /* db_series.c */
    STMT_SERIES_DROP,
    STMT_SERIES_SYNC,
    STMT_OVERRIDE_LIST, /* db_override.c */
    STMT_OVERRIDE_PUT,
    STMT_OVERRIDE_DELETE,
    STMT_SERIES_DUE_ALL, /* db_series.c */
    STMT_SERIES_DUE_SHARDS,
    STMT_SERIES_LOAD,
    STMT_SERIES_LOCK,
    STMT_SERIES_EXTEND_ROWS,
    STMT_SERIES_EXTEND_WINDOWS,
    STMT_MEETING_GET_MANY_FOR, /* db_meeting_get.c */
    STMT_OCCURRENCE_REMINDERS, /* db_occurrence.c */
    STMT_MEETING_LIST_SINGLES, /* db_meeting_list.c */
    STMT_MEETING_LIST_SERIES,
    STMT_MEETING_TOUCH,         /* db_meeting.c */
    STMT_RETENTION_IDEMPOTENCY, /* db_retention.c */
    STMT_RETENTION_DELIVERIES,
    STMT_RETENTION_MEETINGS,
    STMT_RETENTION_STREAM_EVENTS,
    STMT_QUOTA_MEETINGS,       /* db_quota.c */
    STMT_MEETING_INSERT_BATCH, /* db_meeting_batch.c */
    STMT_IDEM_GET_MANY,        /* db_idem.c */
    STMT_IDEM_LOCK_MANY,
    STMT_IDEM_PUT_MANY,
    STMT_INBOX_ITEM, /* db_inbox.c */
    STMT_INBOX_SET,
    STMT_INBOX_UP_TO,
    STMT_INBOX_ANCHOR,
    STMT_INBOX_UNREAD,
    STMT_INBOX_HEAD,
    STMT_INBOX_EVENT,
    STMT_PREFS_GET, /* db_prefs.c */
    STMT_PREFS_PUT,
    STMT_PREFS_EMAIL_OFF,
    STMT_PLAN_GENERIC, /* db.c: db_exec_generic */
    STMT_PLAN_CUSTOM,
    STMT_SNOOZE,       /* db_snooze.c */
    STMT_OWN_PLAN_WHO, /* db_own.c */
    STMT_OWN_PLAN_MEETINGS,
    DB_STMT_COUNT,
    DB_STMT_UNPREPARED = -1 /* run once with PQexecParams (migrations) */
};

#define DB_PARAMS_MAX 20
#define DB_I64_BUF 24 /* "-9223372036854775808" + NUL, rounded up */

/* SQL fragments for times: parameters and results carry milliseconds since the epoch as bigint so
 * no code parses or formats time text. */
#define DB_TS(p) "('epoch'::timestamptz + " p "::bigint * interval '1 millisecond')"
#define DB_MS(x) "(extract(epoch from " x ") * 1000)::bigint"

/* A condition of a statement that reads a batch of rows by key, written so that the planner can
 * match it to no partial index: with statistics that lag behind a table that grew fast (a bulk
 * import, a burst just fired), a scan of a partial index over every pending reminder, every live
 * meeting or every leased outbox row looks cheaper than the key lookups, and each batch then
 * reads them all (a 50,000 burst's fire batches read the whole due set each, 127 ms a batch,
 * measured here). The condition is still checked on every row, and rechecked after a row lock
 * wait. */
#define DB_FILTER(cond) "coalesce(" cond ", false)"

/* Whether leases and heartbeats name the backend that wrote them (migrations/015): on a direct
 * connection, where a backend ends with its client; not through a pooler, whose server
 * connections outlive their clients (db_set_pooled). As a statement's parameter: "t" or "f", the
 * track of DB_BACKEND_PID and DB_BACKEND_START. */
const char *db_tracks_backend(void);
/* The backend a lease or heartbeat names, given the parameter track (db_tracks_backend): its pid
 * and start time, both NULL when it is not tracked. */
#define DB_BACKEND_PID(track) "CASE WHEN " track "::bool THEN pg_backend_pid() END"
#define DB_BACKEND_START(track) "tocsin_backend_start(" track "::bool)"

/* Runs statement id (sql, n text parameters, NULL = SQL NULL). Prepares it on first use on this
 * connection (unless pooled: then every run is unnamed, see db_set_pooled). Reconnects first when
 * the connection is broken and no transaction is open. Returns DB_ONE_RESULT with *res set (the
 * caller PQclear's it; rows may be 0) or an error status with *res NULL and the error in
 * db_err/db_errmsg (not logged: the caller decides). */
enum db_status db_exec(struct db *db, enum db_stmt id, const char *sql, int n,
                       const char *const *values, PGresult **res);
/* db_exec for a statement that changes one row and returns none (an UPDATE or DELETE by key, an
 * INSERT ... ON CONFLICT DO NOTHING): ONE_RESULT when it changed exactly one row, NO_RESULTS when
 * it changed none, or the error. */
enum db_status db_exec_one_row(struct db *db, enum db_stmt id, const char *sql, int n,
                               const char *const *values);
/* db_exec for a statement that answers one number (a count, a RETURNING id or time): ONE_RESULT
 * with the first column of the first row in *out, NO_RESULTS when there is no row, or the
 * error. */
enum db_status db_exec_i64(struct db *db, enum db_stmt id, const char *sql, int n,
                           const char *const *values, int64_t *out);
/* Runs constant SQL without parameters (BEGIN, session setup, a whole migration file). */
enum db_status db_exec_simple(struct db *db, const char *sql);
/* db_exec in a transaction of its own (db_tx_run: not inside one) with bitmap and sequential
 * scans off, for a statement whose point is an index walked in order and left at its LIMIT.
 * Statistics that expect few matching rows (a table at rest before a burst) make the planner
 * trade that walk for a bitmap that reads every matching row, then a sort: every due row on every
 * read; statistics of a table still small (a fresh deployment's first burst) made it read the
 * whole table instead, once per probe of a loose index scan.
 *
 * DB_PLAN_GENERIC keeps one plan per prepared statement (until the tables' statistics change)
 * instead of planning each run with its parameters, as setup_session otherwise asks: for a
 * statement polled several times a second whose planning costs more than its execution (a
 * delivery worker's lease: 1.1 ms of planning against 0.04 ms of execution on an idle outbox
 * here; a batch of a few reminders fired: 1.1 ms against about 0.4 ms). With those scans off its
 * plan is the index walk it was written for, whatever the parameters. A statement whose best plan
 * depends on how many elements an array parameter has asks for it only for small arrays (the
 * fire statement: db_fire.c). Behind a pooler every statement is planned at each run. */
enum db_plan { DB_PLAN_CUSTOM, DB_PLAN_GENERIC };
enum db_status db_exec_in_order(struct db *db, enum db_stmt id, const char *sql, int n,
                                const char *const *values, enum db_plan plan, PGresult **res);
/* db_exec for a statement whose best plan depends on neither its parameters nor the tables'
 * statistics (an INSERT of its parameters' values, which scans no table): it runs with a generic
 * plan, made once per connection, instead of being planned at each run as setup_session asks. The
 * meeting insert took 0.07 ms to plan (and its foreign key's check 0.04 ms more, planned each
 * time too) against 0.33 ms to execute, more PostgreSQL CPU per create than anything but the
 * execution (bench/create.sh, docs/benchmarks.md). One round trip still: the mode is set for the
 * statement's transaction (set_config's is_local) in a pipeline that sends both before one Sync;
 * inside db_tx_run the session's mode is set back after the statement, for the ones that follow.
 * Behind a pooler and on an in-order session it is db_exec. Returns as db_exec does. */
enum db_status db_exec_generic(struct db *db, enum db_stmt id, const char *sql, int n,
                               const char *const *values, PGresult **res);
/* The PGconn itself, for the few libpq calls db_exec does not cover. */
PGconn *db_conn(struct db *db);
/* Fills db_errmsg with a message of our own; db_err then says DB_HARD_ERROR. */
void db_set_err(struct db *db, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* db_set_err of "<what>: out of memory"; returns DB_HARD_ERROR. The db layer logs nothing
 * (db.h): the failure stays on the handle, as db_exec keeps PostgreSQL's, for the caller to
 * report. */
enum db_status db_oom(struct db *db, const char *what);
/* The rows ('g' or 'f', reminder id, fire_at_ms) of a statement that re-planned reminder rows:
 * the 'g' keys appended to gone, the 'f' ones to fresh (a NULL list takes none). Clears res;
 * what names an out-of-memory error (db_series.c). */
struct db_series_keys;
enum db_status db_series_keys_take(struct db *db, PGresult *res, struct db_series_keys *gone,
                                   struct db_series_keys *fresh, const char *what);
/* db_exec of a statement whose one parameter is the array of the valid meeting ids among
 * ids[0..n) (db_array_ids); what names it in an out-of-memory error. */
enum db_status db_exec_ids(struct db *db, enum db_stmt id, const char *sql, const char *const *ids,
                           size_t n, const char *what, PGresult **res);

/* ---- array literals for text parameters (db_array.c) ---- */

/* Writes element i of the array at arg as text into buf (DB_I64_BUF bytes) and returns the text
 * (buf, or a constant such as "t"). */
typedef const char *(*db_array_elem_fn)(const void *arg, size_t i, char buf[DB_I64_BUF]);
/* The array literal "{e0,e1,...}" of n elements written by fn, for a text parameter ($1::bigint[]
 * and the like). The elements must need no quoting: numbers, t and f. malloc'ed; NULL when out
 * of memory. */
char *db_array(size_t n, db_array_elem_fn fn, const void *arg);
/* db_array of n int64 at v. */
char *db_array_i64(const int64_t *v, size_t n);
/* The same built item by item in a strbuf, for elements longer than DB_I64_BUF (meeting ids):
 * db_array_add appends one, formatted from fmt (at most MEETING_ID_LEN + DB_I64_BUF - 1 bytes);
 * db_array_end closes the array and returns its text, "{}" when no item was added, NULL when out
 * of memory. The text is b's: strbuf_fini(b) frees it. */
struct strbuf;
void db_array_add(struct strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *db_array_end(struct strbuf *b);
/* "{id,...}" of the valid meeting ids among ids[0..n) (hex digits and dashes only) into b, as
 * db_array_end returns it. */
const char *db_array_ids(struct strbuf *b, const char *const *ids, size_t n);
/* Appends one element of any text to a text[] literal started like db_array_add's: quoted, with
 * '"' and backslash escaped; NULL is the element NULL. Close it with db_array_end. */
void db_array_text(struct strbuf *b, const char *s);

/* ---- text parameters and results (db.c) ---- */

/* Decimal text of v into buf (DB_I64_BUF bytes); returns buf. */
const char *db_i64(char buf[DB_I64_BUF], int64_t v);
/* Like db_i64, clamped to what PostgreSQL timestamps hold (year 1 .. ~287000), so callers may
 * pass INT64_MIN / INT64_MAX as "no bound". */
const char *db_ms(char buf[DB_I64_BUF], int64_t ms);
/* What a search's q becomes for ILIKE: a substring pattern ('%' around it, '\\', '%' and '_'
 * escaped, so q matches only itself). */
#define DB_LIKE_BUF (2 * DB_SEARCH_Q_MAX + 3)
const char *db_like_pattern(const char *q, char out[DB_LIKE_BUF]);
/* Field as int64 (0 when NULL). */
int64_t db_get_i64(const PGresult *res, int row, int col);
/* Field copied to a malloc'ed string (NULL when NULL or out of memory: check with PQgetisnull). */
char *db_get_str(const PGresult *res, int row, int col);
/* An optional text field into *out (db_get_str): 0, or -1 when a present value could not be
 * copied. */
int db_get_opt_str(const PGresult *res, int row, int col, char **out);
/* Number of rows an INSERT/UPDATE/DELETE touched. */
long db_affected(PGresult *res);

/* ---- the delivery lists' rows (db_outbox.c) ---- */
struct db_delivery;
/* Reads row of a delivery list into *d, the columns in the order of db_outbox.c's deliveries_sql
 * (id, reminder_id, fire_at, webhook_id, status, attempts, last_status, last_error,
 * next_attempt_at, delivered_at, meeting_id, channel, recipient); d's pointers are res's. */
void db_outbox_delivery_row(const PGresult *res, int row, struct db_delivery *d);

#endif
