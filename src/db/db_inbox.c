/* db_inbox.c -- the statements of db_inbox.h. A change runs in one transaction: the marks
 * first, then, when they changed, the tenant's stream head (its row lock orders the changes of
 * the tenant, so the unread count read after it sees every change committed before), the count,
 * and the event. The reader's items are found as its inbox finds them (db_stream_sql.h). */
#include "db_inbox.h"

#include <stdbool.h>
#include <stdlib.h>

#include "codec.h"
#include "db_internal.h"
#include "db_stream_sql.h"
#include "strbuf.h"

/* clang-format off */
/* $1 tenant, $2 the reader, $3 the item's seq, $4 the token's meetings. */
static const char item_sql[] =
    "SELECT " MARK_COLUMNS " FROM stream_events e" MARKS_JOIN("$2")
    " WHERE" READER_WHERE("$2", "$4") " AND e.kind = 0 AND e.seq = $3::bigint";

/* $4 and $5: read and archived, NULL to leave as it is. A mark already set keeps its time. */
static const char set_sql[] =
    "INSERT INTO inbox_state AS s (tenant_id, participant, seq, read_at, archived_at)"
    " VALUES ($1::bigint, $2::text, $3::bigint, CASE WHEN $4::bool THEN now() END,"
    "  CASE WHEN $5::bool THEN now() END)"
    " ON CONFLICT (tenant_id, participant, seq) DO UPDATE SET"
    "  read_at = CASE WHEN $4::bool IS NULL THEN s.read_at"
    "   WHEN $4::bool THEN coalesce(s.read_at, now()) END,"
    "  archived_at = CASE WHEN $5::bool IS NULL THEN s.archived_at"
    "   WHEN $5::bool THEN coalesce(s.archived_at, now()) END"
    " RETURNING " MARK_COLUMNS;

/* Every unread item up to $3 marked read: the count of rows written is how many were marked. */
static const char up_to_sql[] =
    "INSERT INTO inbox_state AS s (tenant_id, participant, seq, read_at)"
    " SELECT $1::bigint, $2::text, e.seq, now() FROM stream_events e"
    " WHERE" READER_WHERE("$2", "$4") " AND e.kind = 0 AND e.seq <= $3::bigint"
    " ON CONFLICT (tenant_id, participant, seq) DO UPDATE SET read_at = excluded.read_at"
    "  WHERE s.read_at IS NULL";

/* The newest item up to $3: the occurrence an up_to event names (its meeting decides, as for any
 * event, which of the reader's streams it goes to); and the transaction's time, the marks'. */
static const char anchor_sql[] =
    "SELECT e.seq, " DB_MS("now()") " FROM stream_events e"
    " WHERE" READER_WHERE("$2", "$4") " AND e.kind = 0 AND e.seq <= $3::bigint"
    " ORDER BY e.seq + 0 DESC LIMIT 1";

static const char unread_sql[] =
    "SELECT count(*) FROM stream_events e" MARKS_JOIN("$2")
    " WHERE" READER_WHERE("$2", "$3") " AND e.kind = 0"
    " AND s.read_at IS NULL AND s.archived_at IS NULL";

static const char head_sql[] =
    "UPDATE stream_heads SET seq = seq + 1 WHERE tenant_id = $1::bigint RETURNING seq";

/* The event of a change, about item $3 (its occurrence and meeting), for the reader alone. */
static const char event_sql[] =
    "INSERT INTO stream_events (tenant_id, seq, reminder_id, fire_at, fired_at, meeting_id,"
    "                           audience, kind, data)"
    " SELECT e.tenant_id, $2::bigint, e.reminder_id, e.fire_at, now(), e.meeting_id,"
    "  ARRAY[$4::text], 1, $5::text"
    " FROM stream_events e WHERE e.tenant_id = $1::bigint AND e.seq = $3::bigint";
/* clang-format on */

struct inbox_tx {
    int64_t tenant_id;
    const struct db_stream_reader *who;
    const char *mtg; /* the token's meetings as a parameter, or NULL */
    int64_t seq;     /* the item; db_inbox_read_up_to: up_to */
    int read, archived;
    bool up_to; /* db_inbox_read_up_to */
    struct db_inbox_change *out;
};

static const char *
flag_param(int v)
{
    return v < 0 ? NULL : v ? "true" : "false";
}

static enum db_status
count_unread(struct db *db, const struct inbox_tx *tx)
{
    char t[DB_I64_BUF];
    const char *params[] = {db_i64(t, tx->tenant_id), tx->who->sub, tx->mtg};

    return db_exec_i64(db, STMT_INBOX_UNREAD, unread_sql, 3, params, &tx->out->unread_count);
}

/* After a change: takes the head (its lock), counts, and writes the event about item seq. */
static enum db_status
tell(struct db *db, const struct inbox_tx *tx, int64_t about)
{
    char t[DB_I64_BUF], ev[DB_I64_BUF], a[DB_I64_BUF];
    const char *head_params[] = {db_i64(t, tx->tenant_id)};
    struct codec_inbox_event body = {.seq = tx->seq,
                                     .up_to = tx->up_to,
                                     .read_at_ms = tx->out->read_at_ms,
                                     .archived_at_ms = tx->out->archived_at_ms};
    enum db_status st =
        db_exec_i64(db, STMT_INBOX_HEAD, head_sql, 1, head_params, &tx->out->event_seq);

    if (st == DB_ONE_RESULT)
        st = count_unread(db, tx);
    if (st != DB_ONE_RESULT)
        return st == DB_NO_RESULTS ? (db_set_err(db, "inbox: no stream head"), DB_HARD_ERROR) : st;
    body.unread_count = tx->out->unread_count;
    char *data = codec_inbox_event_encode(&body);
    if (data == NULL)
        return db_oom(db, "inbox event");
    const char *params[] = {t, db_i64(ev, tx->out->event_seq), db_i64(a, about), tx->who->sub,
                            data};
    st = db_exec_one_row(db, STMT_INBOX_EVENT, event_sql, 5, params);
    free(data);
    return st == DB_NO_RESULTS ? (db_set_err(db, "inbox: its item is gone"), DB_SOFT_ERROR) : st;
}

static enum db_status
mark_fn(struct db *db, void *arg)
{
    struct inbox_tx *tx = arg;
    char t[DB_I64_BUF], s[DB_I64_BUF];
    const char *params[] = {db_i64(t, tx->tenant_id), tx->who->sub, db_i64(s, tx->seq), tx->mtg,
                            NULL};
    PGresult *res;
    enum db_status st = db_exec(db, STMT_INBOX_ITEM, item_sql, 4, params, &res);

    if (st != DB_ONE_RESULT)
        return st;
    bool found = PQntuples(res) == 1;
    int64_t was_read = found ? db_get_i64(res, 0, 0) : -1;
    int64_t was_archived = found ? db_get_i64(res, 0, 1) : -1;
    PQclear(res);
    if (!found)
        return DB_NO_RESULTS;
    params[3] = flag_param(tx->read);
    params[4] = flag_param(tx->archived);
    if ((st = db_exec(db, STMT_INBOX_SET, set_sql, 5, params, &res)) != DB_ONE_RESULT)
        return st;
    tx->out->read_at_ms = db_get_i64(res, 0, 0);
    tx->out->archived_at_ms = db_get_i64(res, 0, 1);
    PQclear(res);
    tx->out->event_seq = 0;
    if (tx->out->read_at_ms == was_read && tx->out->archived_at_ms == was_archived)
        return count_unread(db, tx);
    return tell(db, tx, tx->seq);
}

static enum db_status
up_to_fn(struct db *db, void *arg)
{
    struct inbox_tx *tx = arg;
    char t[DB_I64_BUF], u[DB_I64_BUF];
    const char *params[] = {db_i64(t, tx->tenant_id), tx->who->sub, db_i64(u, tx->seq), tx->mtg};
    PGresult *res;
    int64_t about = 0;
    enum db_status st = db_exec(db, STMT_INBOX_UP_TO, up_to_sql, 4, params, &res);

    if (st != DB_ONE_RESULT)
        return st;
    tx->out->marked = db_affected(res);
    PQclear(res);
    tx->out->event_seq = 0;
    if (tx->out->marked == 0)
        return count_unread(db, tx);
    if ((st = db_exec(db, STMT_INBOX_ANCHOR, anchor_sql, 4, params, &res)) != DB_ONE_RESULT)
        return st;
    bool found = PQntuples(res) == 1;
    about = found ? db_get_i64(res, 0, 0) : 0;
    tx->out->read_at_ms = found ? db_get_i64(res, 0, 1) : -1;
    PQclear(res);
    if (!found) {
        db_set_err(db, "inbox: the items just marked are gone");
        return DB_SOFT_ERROR; /* a meeting changed meanwhile: the transaction runs again */
    }
    return tell(db, tx, about);
}

static enum db_status
run(struct db *db, struct inbox_tx *tx, db_tx_fn fn)
{
    struct strbuf b = {0};
    bool oom;

    tx->mtg = db_stream_mtg_param(&b, tx->who, &oom);
    enum db_status st = oom ? db_oom(db, "inbox") : db_tx_run(db, fn, tx);
    strbuf_fini(&b);
    return st;
}

enum db_status
db_inbox_mark(struct db *db, int64_t tenant_id, const struct db_stream_reader *who, int64_t seq,
              int read, int archived, struct db_inbox_change *out)
{
    struct inbox_tx tx = {tenant_id, who, NULL, seq, read, archived, false, out};

    *out = (struct db_inbox_change){-1, -1, 0, 0, 0};
    return run(db, &tx, mark_fn);
}

enum db_status
db_inbox_read_up_to(struct db *db, int64_t tenant_id, const struct db_stream_reader *who,
                    int64_t up_to, struct db_inbox_change *out)
{
    struct inbox_tx tx = {tenant_id, who, NULL, up_to, -1, -1, true, out};

    *out = (struct db_inbox_change){-1, -1, 0, 0, 0};
    return run(db, &tx, up_to_fn);
}

enum db_status
db_inbox_unread(struct db *db, int64_t tenant_id, const struct db_stream_reader *who,
                int64_t *count)
{
    struct db_inbox_change out = {0};
    struct inbox_tx tx = {tenant_id, who, NULL, 0, -1, -1, false, &out};
    struct strbuf b = {0};
    bool oom;

    tx.mtg = db_stream_mtg_param(&b, who, &oom);
    enum db_status st = oom ? db_oom(db, "inbox") : count_unread(db, &tx);
    strbuf_fini(&b);
    *count = out.unread_count;
    return st;
}
