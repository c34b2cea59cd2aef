/* db_retention.c -- the statements of db_retention.h. Each picks its batch through the kind's
 * index of migration 009 (oldest first, FOR UPDATE SKIP LOCKED) and deletes it by primary key or
 * ctid in the same statement. */
#include "db_retention.h"

#include "db_internal.h"

/* clang-format off */
#define OLDER(col) col " < now() - $1::bigint * interval '1 second'"

static const char idem_sql[] =
    "WITH d AS (DELETE FROM idempotency_keys WHERE ctid = ANY(ARRAY("
    "  SELECT ctid FROM idempotency_keys WHERE " OLDER("created_at")
    "  ORDER BY created_at LIMIT $2::int FOR UPDATE SKIP LOCKED)) RETURNING 1)"
    " SELECT count(*) FROM d";

/* The attempts (migrations/020) go by their own age in the same statement: an attempt is never
 * older than its row, so a purged row's attempts go with it or soon after, and those of rows
 * other statements deleted (a meeting's) go too. Found along the BRIN index of at, in no order;
 * the count is the larger of the two, so that the pass goes on while either has a full batch. */
static const char deliveries_sql[] =
    "WITH d AS (DELETE FROM outbox WHERE id = ANY(ARRAY("
    "  SELECT id FROM outbox WHERE status IN ('delivered', 'failed', 'skipped')"
    "  AND " OLDER("created_at")
    "  ORDER BY created_at LIMIT $2::int FOR UPDATE SKIP LOCKED)) RETURNING 1),"
    " a AS (DELETE FROM delivery_attempts WHERE ctid = ANY(ARRAY("
    "  SELECT ctid FROM delivery_attempts WHERE " OLDER("at")
    "  LIMIT $2::int FOR UPDATE SKIP LOCKED)) RETURNING 1)"
    " SELECT greatest((SELECT count(*) FROM d), (SELECT count(*) FROM a))";

/* A meeting takes its reminders (a single meeting's along reminders_single, a series' along
 * reminders_occurrence, its participants' own along reminders_own) and their outbox rows along; no key cascades them (migrations/013, 014).
 * Run in order (db_exec_in_order), so each is a probe per meeting. */
static const char meetings_sql[] =
    "WITH p AS (SELECT id FROM meetings WHERE deleted_at IS NOT NULL AND " OLDER("deleted_at")
    "  ORDER BY deleted_at LIMIT $2::int FOR UPDATE SKIP LOCKED),"
    " rs AS (DELETE FROM reminders r USING p WHERE r.meeting_id = p.id"
    "  AND r.original_start IS NULL AND r.participant IS NULL RETURNING r.id),"
    " ro AS (DELETE FROM reminders r USING p WHERE r.meeting_id = p.id"
    "  AND r.original_start IS NOT NULL AND r.participant IS NULL RETURNING r.id),"
    " rp AS (DELETE FROM reminders r USING p WHERE r.meeting_id = p.id"
    "  AND r.participant IS NOT NULL RETURNING r.id),"
    " o AS (DELETE FROM outbox o WHERE o.reminder_id = ANY(ARRAY("
    "  SELECT id FROM rs UNION ALL SELECT id FROM ro UNION ALL SELECT id FROM rp))),"
    " d AS (DELETE FROM meetings WHERE id = ANY(ARRAY(SELECT id FROM p)) RETURNING 1)"
    " SELECT count(*) FROM d";

/* The head's purged_through rises in the same statement, so a reader sees both or neither: a
 * resume from a cursor below it is told to reset instead of missing the purged events. */
static const char stream_sql[] =
    "WITH d AS (DELETE FROM stream_events WHERE ctid = ANY(ARRAY("
    "  SELECT ctid FROM stream_events WHERE " OLDER("fired_at")
    "  ORDER BY fired_at LIMIT $2::int FOR UPDATE SKIP LOCKED)) RETURNING tenant_id, seq),"
    " m AS (SELECT tenant_id, max(seq) AS seq FROM d GROUP BY tenant_id),"
    " u AS (UPDATE stream_heads h SET purged_through = m.seq FROM m"
    "  WHERE h.tenant_id = m.tenant_id AND h.purged_through < m.seq RETURNING 1)"
    " SELECT count(*) FROM d";
/* clang-format on */

static const struct {
    const char *name;
    const char *sql;
    enum db_stmt stmt;
    bool in_order; /* run through db_exec_in_order */
} kinds[DB_RETENTION_KINDS] = {
    [DB_RETENTION_IDEMPOTENCY] = {"idempotency_keys", idem_sql, STMT_RETENTION_IDEMPOTENCY, false},
    [DB_RETENTION_DELIVERIES] = {"deliveries", deliveries_sql, STMT_RETENTION_DELIVERIES, false},
    [DB_RETENTION_MEETINGS] = {"deleted_meetings", meetings_sql, STMT_RETENTION_MEETINGS, true},
    [DB_RETENTION_STREAM_EVENTS] = {"stream_events", stream_sql, STMT_RETENTION_STREAM_EVENTS,
                                    false},
};

const char *
db_retention_name(enum db_retention_kind k)
{
    return (unsigned)k < DB_RETENTION_KINDS ? kinds[k].name : "?";
}

enum db_status
db_retention_purge(struct db *db, enum db_retention_kind k, int64_t older_than_s, int batch,
                   int64_t *purged)
{
    char age[DB_I64_BUF], n[DB_I64_BUF];
    const char *params[] = {db_i64(age, older_than_s), db_i64(n, batch)};
    PGresult *res;

    *purged = 0;
    if ((unsigned)k >= DB_RETENTION_KINDS || batch < 1 || batch > DB_RETENTION_BATCH_MAX) {
        db_set_err(db, "retention: kind %d, batch %d", (int)k, batch);
        return DB_HARD_ERROR;
    }
    enum db_status st =
        kinds[k].in_order
            ? db_exec_in_order(db, kinds[k].stmt, kinds[k].sql, 2, params, DB_PLAN_CUSTOM, &res)
            : db_exec(db, kinds[k].stmt, kinds[k].sql, 2, params, &res);
    if (st != DB_ONE_RESULT)
        return st;
    *purged = PQntuples(res) == 1 ? db_get_i64(res, 0, 0) : 0;
    PQclear(res);
    return DB_ONE_RESULT;
}
