/* db_snooze.c -- the statement of db_snooze.h: one INSERT of outbox rows, found and checked in
 * the same statement. The rows carry the reminder's id and the due time as their fire time, so
 * their occurrence id (the webhook-id, the push tag, the email's Message-ID) is a new one; they
 * are pending and nobody's, due then, so the delivery workers' claim sends them when due, like
 * rows waiting for quiet hours to end. The stream and the inbox keep the item they have. */
#include "db_snooze.h"

#include "db_internal.h"
#include "db_prefs_sql.h"
#include "db_stream_sql.h"
#include "strbuf.h"

/* clang-format off */
/* $1 tenant, $2 the reader, $3 the item's seq, $4 the token's meetings, $5 minutes, $6 email. */
static const char snooze_sql[] =
    "WITH it AS (SELECT e.tenant_id, e.reminder_id, e.meeting_id FROM stream_events e"
    "  WHERE" READER_WHERE("$2", "$4") " AND e.kind = 0 AND e.seq = $3::bigint),"
    " a AS (SELECT it.tenant_id, it.meeting_id, r.id, r.channels, m.participants,"
    "  coalesce(r.starts_at, m.starts_at) AS starts_at,"
    "  date_trunc('milliseconds', now() + $5::int * interval '1 minute') AS due"
    "  FROM it JOIN reminders r ON r.id = it.reminder_id"
    "  JOIN meetings m ON m.id = it.meeting_id AND m.deleted_at IS NULL),"
    " ok AS (SELECT * FROM a WHERE a.due < a.starts_at),"
    " ins AS ("
    "  INSERT INTO outbox (tenant_id, meeting_id, reminder_id, fire_at, channel, target, receiver,"
    "                      webhook_id, push_subscription_id, recipient, address, status, attempts,"
    "                      delivered_at, next_attempt_at, lease_owner, last_error)"
    "  SELECT a.tenant_id, a.meeting_id, a.id, a.due, 'push', ps.id::text, ps.origin, NULL::uuid,"
    "   ps.id, ps.participant_id, NULL::text, " PREF_COLUMNS("a.due", "NULL::text")
    "  FROM ok a JOIN push_subscriptions ps ON ps.tenant_id = a.tenant_id"
    "   AND ps.participant_id = $2::text" PREF_JOIN("ps.participant_id", "push", "a.due")
    "  WHERE a.channels & 4 <> 0 AND (ps.expires_at IS NULL OR ps.expires_at > a.due)"
    "  UNION ALL"
    "  SELECT a.tenant_id, a.meeting_id, a.id, a.due, 'email', p ->> 'id', 'smtp', NULL, NULL,"
    "   p ->> 'id', p ->> 'email', " PREF_COLUMNS("a.due", "NULL::text")
    "  FROM ok a CROSS JOIN json_array_elements(a.participants) AS p"
    PREF_JOIN("p ->> 'id'", "email", "a.due")
    "  WHERE a.channels & 8 <> 0 AND $6::bool AND p ->> 'id' = $2::text"
    "   AND p ->> 'email' IS NOT NULL"
    "  ON CONFLICT (reminder_id, fire_at, channel, target) DO NOTHING RETURNING 1)"
    " SELECT a.id, " DB_MS("a.due") ", a.due >= a.starts_at, (SELECT count(*) FROM ins) FROM a";
/* clang-format on */

enum db_status
db_snooze(struct db *db, int64_t tenant_id, const struct db_stream_reader *who, int64_t seq,
          int minutes, bool email, struct db_snooze *out)
{
    char t[DB_I64_BUF], s[DB_I64_BUF], m[DB_I64_BUF];
    struct strbuf b = {0};
    bool oom;
    PGresult *res = NULL;

    *out = (struct db_snooze){0};
    const char *mtg = db_stream_mtg_param(&b, who, &oom);
    const char *params[] = {db_i64(t, tenant_id), who->sub,
                            db_i64(s, seq),       mtg,
                            db_i64(m, minutes),   email ? "true" : "false"};
    enum db_status st =
        oom ? db_oom(db, "snooze") : db_exec(db, STMT_SNOOZE, snooze_sql, 6, params, &res);
    strbuf_fini(&b);
    if (st != DB_ONE_RESULT)
        return st;
    if (PQntuples(res) != 1) {
        PQclear(res);
        return DB_NO_RESULTS;
    }
    out->reminder_id = db_get_i64(res, 0, 0);
    out->due_ms = db_get_i64(res, 0, 1);
    out->started = PQgetvalue(res, 0, 2)[0] == 't';
    out->deliveries = db_get_i64(res, 0, 3);
    PQclear(res);
    return DB_ONE_RESULT;
}
