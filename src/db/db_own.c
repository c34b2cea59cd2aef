/* db_own.c -- the statements of db_own.h: one statement that computes the own reminder rows a
 * set of meetings should have and makes them so.
 *
 * The occurrences come from the meeting's own rows: a single meeting's start, and each occurrence
 * of a series whose rows series_sync.c wrote, that is not cancelled and starts after now. A
 * meeting (or an occurrence) without reminders of its own reminds nobody, so it has no own rows
 * either. The wanted rows are each such occurrence's start less each own offset of each listed
 * participant with own reminders. A new row whose fire time has passed is not written (an offset
 * set late does not fire at once); a row that exists is moved with its occurrence and, moved,
 * is pending again, as the meeting's are (db_meeting.c). A pending row no longer wanted is
 * deleted; a fired one is kept, cancelled (its deliveries and inbox item stay; a cancelled row
 * makes no exclusion at the meeting's fire, and comes back fired when the offset is wanted
 * again, so it never fires twice). The target row's own status is tested again in each write: a
 * fire that committed meanwhile wins. */
#include "db_own.h"

#include "db_internal.h"

/* clang-format off */
/* The match of a wanted row w and a current one c. */
#define OWN_SAME(w, c)                                                                             \
    w ".mid = " c ".meeting_id AND " w ".pid = " c ".participant AND " w ".mb = " c                \
    ".minutes_before AND " w ".os IS NOT DISTINCT FROM " c ".original_start"
/* mt: the meetings (id, tenant_id, starts_at, participant_ids); who: a condition on pp (the
 * participant's preferences), cur: on r (their own rows). */
#define OWN_PLAN_SQL(mt, who, cur)                                                                 \
    "WITH mt AS MATERIALIZED (" mt "),"                                                            \
    " occ AS (SELECT DISTINCT mt.id AS mid, mt.tenant_id AS tid, r.original_start AS os,"          \
    "  r.starts_at AS sa, coalesce(r.starts_at, mt.starts_at) AS s FROM mt JOIN reminders r"       \
    "  ON r.meeting_id = mt.id AND r.participant IS NULL AND r.status <> 'cancelled'"              \
    "  WHERE coalesce(r.starts_at, mt.starts_at) > now()),"                                        \
    " who AS (SELECT mt.id AS mid, pp.participant AS pid, pp.own_minutes, pp.own_channels"         \
    "  FROM mt JOIN participant_prefs pp ON pp.tenant_id = mt.tenant_id"                           \
    "  AND pp.participant = ANY (mt.participant_ids) WHERE pp.own_minutes IS NOT NULL" who "),"    \
    " want AS (SELECT occ.*, who.pid, o.mb, o.ch, occ.s - o.mb * interval '1 minute' AS fa"        \
    "  FROM occ JOIN who ON who.mid = occ.mid"                                                     \
    "  CROSS JOIN unnest(who.own_minutes, who.own_channels) AS o(mb, ch)),"                        \
    " cur AS (SELECT r.id, r.meeting_id, r.participant, r.original_start, r.minutes_before,"       \
    "  r.fire_at, r.status FROM mt JOIN reminders r ON r.meeting_id = mt.id"                       \
    "  AND r.participant IS NOT NULL" cur "),"                                                     \
    " d AS (DELETE FROM reminders r USING cur c WHERE r.id = c.id AND r.status = 'pending'"       \
    "  AND NOT EXISTS (SELECT 1 FROM want w WHERE " OWN_SAME("w", "c") ") RETURNING r.id),"       \
    " x AS (UPDATE reminders r SET status = 'cancelled' FROM cur c WHERE r.id = c.id"              \
    "  AND r.status IN ('fired', 'missed')"                                                        \
    "  AND NOT EXISTS (SELECT 1 FROM want w WHERE " OWN_SAME("w", "c") ") RETURNING 1),"          \
    " up AS (INSERT INTO reminders AS r (meeting_id, tenant_id, minutes_before, fire_at, status,"  \
    "  channels, original_start, starts_at, participant)"                                          \
    "  SELECT w.mid, w.tid, w.mb, w.fa, 'pending', w.ch, w.os, w.sa, w.pid FROM want w"            \
    "  WHERE w.fa > now() OR EXISTS (SELECT 1 FROM cur c WHERE " OWN_SAME("w", "c") ")"           \
    "  ON CONFLICT (meeting_id, participant, original_start, minutes_before)"                      \
    "   WHERE participant IS NOT NULL DO UPDATE SET"                                               \
    "   status = CASE WHEN r.fire_at <> excluded.fire_at THEN 'pending'"                          \
    "    WHEN r.status = 'cancelled' THEN CASE WHEN r.fired_at IS NULL THEN 'pending'"             \
    "    ELSE 'fired' END ELSE r.status END,"                                                      \
    "   fired_at = CASE WHEN r.fire_at <> excluded.fire_at THEN NULL ELSE r.fired_at END,"        \
    "   fire_at = excluded.fire_at, starts_at = excluded.starts_at, channels = excluded.channels"  \
    "  WHERE r.fire_at <> excluded.fire_at OR r.channels <> excluded.channels"                     \
    "   OR r.starts_at IS DISTINCT FROM excluded.starts_at OR r.status = 'cancelled'"             \
    "  RETURNING r.id, r.fire_at, r.status)"                                                       \
    " SELECT 'g', c.id, " DB_MS("c.fire_at") " FROM cur c WHERE c.status = 'pending'"             \
    "  AND (c.id IN (SELECT id FROM d)"                                                            \
    "   OR c.id IN (SELECT u.id FROM up u WHERE u.fire_at <> c.fire_at))"                          \
    " UNION ALL SELECT 'f', u.id, " DB_MS("u.fire_at") " FROM up u WHERE u.status = 'pending'"

#define OWN_MEETING_COLUMNS "SELECT m.id, m.tenant_id, m.starts_at, m.participant_ids FROM meetings m"
/* $1 tenant, $2 participant: along meetings_participant_ids. */
static const char plan_who_sql[] = OWN_PLAN_SQL(
    OWN_MEETING_COLUMNS " WHERE m.tenant_id = $1::bigint AND m.deleted_at IS NULL"
    " AND m.participant_ids @> ARRAY[$2::text]",
    " AND pp.participant = $2::text", " AND r.participant = $2::text");
/* $1 the meetings' ids. */
static const char plan_meetings_sql[] = OWN_PLAN_SQL(
    OWN_MEETING_COLUMNS " WHERE m.id = ANY ($1::uuid[]) AND m.deleted_at IS NULL", "", "");
/* clang-format on */

enum db_status
db_own_plan_participant(struct db *db, int64_t tenant_id, const char *participant,
                        struct db_series_keys *gone, struct db_series_keys *fresh)
{
    char t[DB_I64_BUF];
    const char *v[] = {db_i64(t, tenant_id), participant};
    PGresult *res;

    enum db_status st = db_exec(db, STMT_OWN_PLAN_WHO, plan_who_sql, 2, v, &res);
    return st != DB_ONE_RESULT ? st
                               : db_series_keys_take(db, res, gone, fresh, "own reminder keys");
}

enum db_status
db_own_plan_meetings(struct db *db, const char *const *ids, size_t n, struct db_series_keys *gone,
                     struct db_series_keys *fresh)
{
    PGresult *res;

    if (n == 0)
        return DB_ONE_RESULT;
    enum db_status st = db_exec_ids(db, STMT_OWN_PLAN_MEETINGS, plan_meetings_sql, ids, n,
                                    "planning own reminders", &res);
    return st != DB_ONE_RESULT ? st
                               : db_series_keys_take(db, res, gone, fresh, "own reminder keys");
}

enum db_status
db_own_plan_meeting(struct db *db, const char *id, struct db_series_keys *gone,
                    struct db_series_keys *fresh)
{
    return db_own_plan_meetings(db, &id, 1, gone, fresh);
}
