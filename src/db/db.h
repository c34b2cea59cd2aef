/* db.h -- PostgreSQL access (libpq lives only in db*.c). One struct db per thread; every statement
 * is one function returning the four-valued enum db_status. Soft errors (serialization failure,
 * deadlock, lost connection) are retried only by db_tx_run. */
#ifndef TOCSIN_DB_H
#define TOCSIN_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "meeting.h"

enum db_status {
    DB_HARD_ERROR = -2, /* our bug or a constraint we did not expect; do not retry */
    DB_SOFT_ERROR = -1, /* transient: 40001, 40P01, connection lost, read-only; retry the tx */
    DB_NO_RESULTS = 0,
    DB_ONE_RESULT = 1
};

#define DB_TX_RETRIES_MAX 3
#define DB_ERR_MAX 256
#define DB_CONNECT_TIMEOUT_S 5
/* A thread whose connect failed tries again after this (a statement on an open handle reconnects
 * by itself): short, so that after a PostgreSQL failover every thread finds the new primary
 * within a second of it taking writes (docs/deployment.md, PostgreSQL failover). */
#define DB_RECONNECT_WAIT_MS 250
/* TCP settings of every connection unless its URL sets them: a server whose host vanished (no
 * reset ever comes) is noticed within about a minute when idle (keepalive probes after
 * DB_KEEPALIVE_IDLE_S, then every DB_KEEPALIVE_INTERVAL_S, DB_KEEPALIVE_COUNT unanswered) and
 * within DB_TCP_USER_TIMEOUT_MS when a statement was sent and never acknowledged, instead of the
 * kernel's hours: the thread waiting on it gets a lost connection and reconnects. */
#define DB_KEEPALIVE_IDLE_S 30
#define DB_KEEPALIVE_INTERVAL_S 10
#define DB_KEEPALIVE_COUNT 3
#define DB_TCP_USER_TIMEOUT_MS 30000

struct db; /* opaque: a PGconn and its prepared-statement state */

/* Whether connections go through a pooler in transaction mode (PgBouncer): then statements are
 * unnamed (PQexecParams: no prepared statement outlives a transaction's server connection) and
 * no session setting is made (the statement timeout then belongs on the role, docs/deployment.md;
 * each db_tx_run transaction still sets it with SET LOCAL). Set once, before any connection. */
void db_set_pooled(bool pooled);
/* Connects (connect_timeout DB_CONNECT_TIMEOUT_S, the TCP settings above unless url sets them).
 * Returns a handle to free with db_close, or NULL with the reason in err. The handle reconnects by
 * itself after a lost connection. */
struct db *db_open(const char *url, char *err, size_t errlen);
/* db_open for a connection whose every statement is a probe by key or an index walk in order
 * (the scheduler's, dispatch's, each delivery worker's): its session has sequential and bitmap
 * scans off and plans generic, so a statement run with DB_PLAN_GENERIC in order is one round trip
 * instead of a transaction of three (BEGIN and the settings, the statement, COMMIT) and is
 * planned once per connection. Through a pooler it is db_open. */
struct db *db_open_in_order(const char *url, char *err, size_t errlen);
void db_close(struct db *db);
/* The connection's socket, or -1 when it has none (tests read its TCP options). */
int db_socket(const struct db *db);
/* Checks url (a libpq URI or key=value string) with libpq's own parser, without connecting.
 * Returns 0, or -1 with libpq's reason in err. */
int db_url_check(const char *url, char *err, size_t errlen);
/* What db_ping found: the server takes writes, it answers but is read-only (db_errmsg says so;
 * the next statement reconnects), or it does not answer (db_errmsg says why). */
enum db_ping { DB_PING_OK = 0, DB_PING_READ_ONLY, DB_PING_DOWN };
/* Asks the server whether it takes writes, reconnecting first if the connection broke or the
 * server turned read-only (a failover's old primary). */
enum db_ping db_ping(struct db *db);
/* The database's clock_timestamp() in ms since the epoch (for dbclock.h). */
enum db_status db_clock_ms(struct db *db, int64_t *ms);
/* The last failure on this handle, as hiredis keeps err/errstr on its context: its class
 * (DB_SOFT_ERROR: the server is unreachable or asked for a retry; DB_HARD_ERROR: our bug or a
 * constraint we did not expect) and its text, one line (valid until the next call on the
 * handle). Meaningful right after a call returned an error status. The db layer logs nothing:
 * the thread that owns the handle logs an outage once when it starts and once when it ends,
 * and a hard error as the bug it is. Two exceptions, neither an error a caller could report:
 * server notices at debug (libpq hands them to a callback, not to a call), and db_migrate's
 * lines (below). */
enum db_status db_err(const struct db *db);
const char *db_errmsg(const struct db *db);
/* For modules that build on the db layer's results (encode what it read, allocate around it):
 * records their own hard failure on the handle, as a statement function does, so that the
 * caller that logs db_errmsg after a DB_HARD_ERROR logs a true message, not the previous one.
 * Call it at every DB_HARD_ERROR such a module returns without a db call having set it. */
void db_note_error(struct db *db, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

typedef enum db_status (*db_tx_fn)(struct db *db, void *arg);
/* BEGIN; fn; COMMIT. Rolls back when fn returns an error; retries the whole transaction up to
 * DB_TX_RETRIES_MAX times on DB_SOFT_ERROR (from fn or COMMIT). fn must do database work only.
 * Transactions do not nest: calling it from fn is a bug (asserted). */
enum db_status db_tx_run(struct db *db, db_tx_fn fn, void *arg);

/* ---- migrations (db_migrate.c) ---- */
/* Applies pending embedded migrations under a session advisory lock. An applied migration whose
 * checksum differs from the embedded one is an error. Returns 0, or -1 with err filled. The one
 * db function that logs: a line per migration as it commits (the progress of a step that may
 * take minutes, run once on the main thread before any other starts, like a command's output)
 * and a failed release of the lock, which does not fail the migration (a lost connection
 * releases the lock by itself) and so has no error to return. */
int db_migrate(struct db *db, char *err, size_t errlen);
/* 0 when every embedded migration is applied with a matching checksum; -1 otherwise. */
int db_migrate_current(struct db *db);

/* ---- tenants (db_tenant.c) ---- */
#define TENANT_NAME_MAX 100
enum db_status db_tenant_ensure(struct db *db, const char *name, int64_t *tenant_id);
/* Locks the tenant's row until the transaction ends (use inside db_tx_run): every limit checked
 * by counting rows before inserting one (webhooks, signing keys, push subscriptions) takes it
 * first, so concurrent requests of one tenant count one after the other. NO_RESULTS when the
 * tenant does not exist. */
enum db_status db_tenant_lock(struct db *db, int64_t tenant_id);

/* ---- API keys (db_keys.c) ---- */
#define DB_KEY_PREFIX_MAX 32
enum db_status db_keys_insert(struct db *db, int64_t tenant_id, const char *prefix,
                              const uint8_t hash[32]);
/* Finds the live (not revoked) key with this prefix; compares hashes in constant time.
 * ONE_RESULT with *tenant_id, or NO_RESULTS. */
enum db_status db_keys_lookup(struct db *db, const char *prefix, const uint8_t hash[32],
                              int64_t *tenant_id);
/* Calls fn once per key row, ordered by created_at. */
typedef void (*db_keys_row_fn)(void *arg, const char *prefix, const char *tenant,
                               int64_t created_at_ms, int64_t revoked_at_ms /* 0 = live */);
enum db_status db_keys_list(struct db *db, db_keys_row_fn fn, void *arg);
/* Revokes live keys whose prefix starts with prefix. ONE_RESULT when at least one was revoked. */
enum db_status db_keys_revoke(struct db *db, const char *prefix, int *n_revoked);

/* ---- meetings: writes (db_meeting.c), reads by id (db_meeting_get.c), lists
 * (db_meeting_list.c). tenant_id scopes every statement but the delivery's batched read. ---- */
/* Inserts m (m->id, created/updated and organizer set by the caller; m->version is set to 1) and
 * its reminders (status pending, or as the caller set them); fills each reminder's id. *own (when
 * not NULL) says whether some participant m lists has own reminders (db_own.h), so that planning
 * them can change anything: never for a meeting without reminders. */
enum db_status db_meeting_insert(struct db *db, int64_t tenant_id, struct meeting *m, bool *own);
/* Loads a live (not deleted) meeting with its reminders. for_update locks the row (use inside
 * db_tx_run). m must be fresh from meeting_init. */
enum db_status db_meeting_get(struct db *db, int64_t tenant_id, const char *id, struct meeting *m,
                              bool for_update);
/* Replaces the writable fields of meeting m->id with m's, sets version = m->version and
 * updated_at = m->updated_at_ms, and reconciles reminders by minutes_before: unchanged fire time
 * keeps id and status; a changed fire time resets to pending with fired_at cleared; new ones are
 * inserted pending; removed ones are deleted. Fills m->reminders from the result. Pending keys
 * that stopped existing (old fire time, removed) are appended to gone. */
enum db_status db_meeting_update(struct db *db, int64_t tenant_id, struct meeting *m,
                                 struct reminder_keys *gone);
/* Soft-deletes a live meeting and cancels its pending reminders; their keys go to gone. */
/* Inserts the single meetings ms[0..n) (n <= DB_MEETING_BATCH_MAX, none a series) with their
 * reminders in one statement, as db_meeting_insert does one, and sets each reminder's id. */
#define DB_MEETING_BATCH_MAX 1000
enum db_status db_meeting_insert_batch(struct db *db, int64_t tenant_id, struct meeting *const *ms,
                                       size_t n);
enum db_status db_meeting_delete(struct db *db, int64_t tenant_id, const char *id,
                                 struct reminder_keys *gone);
/* The same inside the caller's db_tx_run (after db_meeting_get for_update, say); keys are
 * appended to gone, which the caller resets when its transaction is retried. */
enum db_status db_meeting_delete_tx(struct db *db, int64_t tenant_id, const char *id,
                                    struct reminder_keys *gone);
/* Counts a change of meeting id that its writable fields do not show (an occurrence override):
 * version + 1, updated_at = updated_at_ms. */
enum db_status db_meeting_touch(struct db *db, int64_t tenant_id, const char *id,
                                int64_t updated_at_ms);

#define DB_LIST_LIMIT_MAX 200
/* Bytes of a search's q, a case-insensitive substring (GET /v1/deliveries, GET /v1/meetings). */
#define DB_SEARCH_Q_MAX 200
struct db_list_query {
    int64_t from_ms; /* inclusive lower bound on starts_at; INT64_MIN = none */
    int64_t to_ms;   /* exclusive upper bound on starts_at; INT64_MAX = none */
    bool has_after;  /* keyset cursor: rows strictly after (after_starts_at_ms, after_id) */
    int64_t after_starts_at_ms;
    char after_id[MEETING_ID_LEN + 1];
    int64_t after_original_ms; /* expand=true: the occurrence's original start (series.h) */
    size_t limit; /* 1..DB_LIST_LIMIT_MAX; the function looks at limit+1 to know if more exist */
    /* The page's byte bound (TOCSIN_PAGE_BYTES_MAX): rows are read while the texts of those before
     * stay under it (the first always), so a page's rows hold about that much; 0 = none. */
    size_t bytes_max;
    const char *viewer;          /* a browser token's sub: only meetings it organizes or attends */
    const char *viewer_meetings; /* "{uuid,...}": only these (a token's mtg claim); or NULL */
    const char *title_q; /* only titles holding it (DB_SEARCH_Q_MAX bytes at most), or NULL */
};
struct db_meeting_list {
    size_t n;
    bool more;         /* another page exists after the last item (past limit or bytes_max) */
    struct meeting *m; /* n items, malloc'ed; free with db_meeting_list_fini */
};
enum db_status db_meeting_list(struct db *db, int64_t tenant_id, const struct db_list_query *q,
                               struct db_meeting_list *out);
void db_meeting_list_fini(struct db_meeting_list *l);
/* The most meetings one batched read loads in one round trip (db_meeting_get_many_for, the
 * occurrence reminders of db_series.h). */
#define DB_GET_MANY_MAX 1000
/* Loads, for each i, the live meeting ids[i] as its reminder rids[i] shows it: out->m[at[i]] is
 * the meeting (a single one, as GET /v1/meetings/{id} shows it) or, for a reminder of a series'
 * occurrence, that occurrence (is_occurrence set; starts_at, ends_at and title with its override
 * applied; reminders: the occurrence's). Equal pairs share one entry, read once. An absent
 * meeting leaves its entry's id "". n <= DB_GET_MANY_MAX; at has n entries. */
enum db_status db_meeting_get_many_for(struct db *db, const char *const *ids, const int64_t *rids,
                                       size_t n, struct db_meeting_list *out, size_t *at);

/* The meetings a calendar range [q->from_ms, q->to_ms) may show (GET /v1/meetings?expand=true):
 * single meetings starting in it after q's cursor position (keyset on starts_at, id), at most
 * q->limit of them and within q->bytes_max as db_meeting_list reads them (out->more: more singles
 * come after them), then every series that starts before the range's end and is not over
 * before its start, or has an occurrence moved into it; with q's viewer filters. More than
 * DB_EXPAND_SERIES_MAX series: NO_RESULTS (the range is too wide to expand in one request).
 * out->m holds the singles first (*n_singles of them, in order), then the series. */
#define DB_EXPAND_SERIES_MAX 1000
enum db_status db_meeting_list_range(struct db *db, int64_t tenant_id,
                                     const struct db_list_query *q, struct db_meeting_list *out,
                                     size_t *n_singles);

/* ---- idempotency (db_idem.c), used inside one db_tx_run together with the insert ---- */
#define IDEMPOTENCY_KEY_MAX 255
#define DB_REQUEST_HASH_LEN 64 /* hex digits of the request body's SHA-256 */
struct db_idem_response {
    int status;
    char *body;     /* malloc'ed */
    char *location; /* malloc'ed, may be NULL */
    char *etag;     /* malloc'ed, may be NULL */
};
void db_idem_response_fini(struct db_idem_response *r);
/* pg_try_advisory_xact_lock on (tenant, key): DB_NO_RESULTS when another transaction holds it
 * (the request is in flight), DB_ONE_RESULT when this transaction now holds it. */
enum db_status db_idem_lock(struct db *db, int64_t tenant_id, const char *key);
/* Loads a stored response: ONE_RESULT with request_hash (NUL-terminated) and *resp filled. */
enum db_status db_idem_get(struct db *db, int64_t tenant_id, const char *key,
                           char request_hash[DB_REQUEST_HASH_LEN + 1],
                           struct db_idem_response *resp);
enum db_status db_idem_put(struct db *db, int64_t tenant_id, const char *key,
                           const char request_hash[DB_REQUEST_HASH_LEN + 1],
                           const struct db_idem_response *resp);

/* The same for a batch of keys[0..n) (POST /v1/meetings/batch), one statement each. The keys
 * are not NULL and are distinct. */
#define DB_IDEM_LOCATION_MAX 128
struct db_idem_hit {
    bool found;                                 /* a response is stored under the key */
    char request_hash[DB_REQUEST_HASH_LEN + 1]; /* when found */
    int status;
    char location[DB_IDEM_LOCATION_MAX]; /* "" when none was stored */
};
/* Fills hits[0..n) from the stored responses. */
enum db_status db_idem_get_many(struct db *db, int64_t tenant_id, const char *const *keys, size_t n,
                                struct db_idem_hit *hits);
/* pg_try_advisory_xact_lock on every key, as db_idem_lock: locked[i] false when another
 * transaction holds keys[i]. */
enum db_status db_idem_lock_many(struct db *db, int64_t tenant_id, const char *const *keys,
                                 size_t n, bool *locked);
/* Stores resps[i] under keys[i] with hashes[i] (ON CONFLICT DO NOTHING, as db_idem_put). */
enum db_status db_idem_put_many(struct db *db, int64_t tenant_id, const char *const *keys,
                                const char *const *hashes, const struct db_idem_response *resps,
                                size_t n);

/* ---- pending occurrences for the scheduler, the sweep and the mirror repair (db_reminder.c) */
#define DB_DUE_BATCH_MAX 5000 /* rows per page: a burst of 50,000 due together is 10 pages */
struct shard_set;
/* Pending occurrences of live meetings with fire_at <= until_ms, strictly after the keyset
 * position (after_fire_at_ms, after_id) in (fire_at, id) order (INT64_MIN, 0: from the earliest,
 * overdue ones included), of the shards in shards (NULL: every shard). At most max (clamped to
 * DB_DUE_BATCH_MAX) rows into out; ONE_RESULT whenever the query ran, *n_out == 0 for an empty
 * page. */
enum db_status db_reminder_due_batch(struct db *db, const struct shard_set *shards,
                                     int64_t after_fire_at_ms, int64_t after_id, int64_t until_ms,
                                     struct reminder_key *out, size_t max, size_t *n_out);
/* The same for one shard, in (fire_at, id) order along that shard's part of the index alone: no
 * merge with other shards, so each row is read once (the reconciler's full pass, which needs no
 * order across shards). */
enum db_status db_reminder_shard_batch(struct db *db, unsigned shard, int64_t after_fire_at_ms,
                                       int64_t after_id, int64_t until_ms, struct reminder_key *out,
                                       size_t max, size_t *n_out);

#endif
