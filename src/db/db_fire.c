/* db_fire.c -- the fire statement of db_fire.h: one data-modifying CTE that flips a batch of
 * pending occurrences and writes their outbox rows. In READ COMMITTED a concurrent fire of the
 * same row waits for the row lock, then re-checks status = 'pending' on the new row version and
 * skips it: two replicas (or a replica and a late Redis event) can never both fire one
 * occurrence. */
#include "db_fire.h"

#include <stdlib.h>
#include <string.h>

#include "db_internal.h"
#include "db_meeting_sql.h"
#include "db_prefs_sql.h"

/* The pairs travel as two bigint[] in text form; unnest zips them row by row. The plan must not
 * depend on statistics, which lag behind a table that grew fast (a bulk import, a fresh
 * deployment): `id = ANY($1)` leads with the primary key (the pending test is a DB_FILTER, which
 * no partial index matches), and the meeting is joined once per row by its primary key, with
 * sequential and bitmap scans off (db_exec_in_order), so no plan hashes the whole table. The
 * meeting is read in SQL so that the missed decision sees the committed start (an occurrence of a
 * series carries its own start: migrations/008), and the audience and participants come from that
 * one read (a lookup per use, three per row, made the statement take 1.5-1.8 times as long here).
 * Deleting a meeting cancels its pending reminders (and a fire waiting on one's row lock then
 * skips it); the deleted_at test is the backstop for a pending reminder a deleted meeting still
 * has. Time is the database's (now(): the statement's start): a replica whose clock runs ahead
 * cannot fire early, and every replica's fires are stamped by one clock. A fired occurrence gets
 * an outbox row per target of each of its reminder's channels (migrations/007): each live webhook
 * of the tenant, each Web Push subscription of a participant or the organizer, each participant
 * with an email address when email is on ($4). Those rows are written owned by $5, a delivery
 * worker of the firing replica (NULL: by nobody, for any worker's lease statement), so a burst
 * needs no lease update per row (migrations/011). On the stream channel it becomes a stream event
 * when someone can see it (migrations/004): its tenant's head moves by the number of events (the
 * heads are locked in tenant order, so two batches never deadlock, and the lock held to commit
 * makes seq order commit order) and the events take the seqs below the new head; its outbox row is
 * recorded delivered at once (the event is durable). All the outbox rows are one INSERT: each
 * INSERT opens the outbox and its indexes afresh, and with one per channel a one-row fire took
 * about 0.05 ms longer (pgbench, 0.51 against 0.45 ms a transaction with its reset). The final
 * SELECT returns 'r' rows (changed reminders), 'o' rows (outbox rows to deliver) and 's' rows (per
 * tenant, the highest stream seq written).
 *
 * A participant's own reminder (a row with a participant, migrations/029) reaches that
 * participant alone, while the meeting still lists them: its audience (stream event, push) is
 * them, its email theirs, and it makes no webhook row (a webhook is the tenant's record of the
 * meeting's reminders, which an own reminder does not replace: it has no webhook channel). A
 * meeting's reminder leaves out (ex) everyone with own rows of the occurrence that are not
 * cancelled, on the stream, push and email; its webhooks are sent as before. Finding them is one
 * short range of reminders_own per fired row, and a meeting without own rows filters nothing. */

/* Batches of up to this many occurrences run the connection's generic plan of the statement
 * (db_exec_in_order: with sequential and bitmap scans off it is the same shape of probes by key):
 * planning it took 1.1 ms here, longer than running a batch of a few rows, and reminders due
 * one by one fire in batches of one to three. A larger batch is planned for its size: in a burst
 * of 50,000 (batches of 1,024) the generic plan ran 7.0 s against 5.3 s for custom ones planned
 * in 0.13 s. */
#define FIRE_GENERIC_MAX 64

/* clang-format off */
/* The push and email rows apply the participant's preferences (db_prefs_sql.h). The 'o' rows
 * (the worker's wake-up and its handover) are the rows pending and due now, or handed (a
 * webhook's, which no preference touches): a skipped or deferred row is neither woken for nor
 * handed. */
/* Who has own rows (not cancelled) of the fired row r's occurrence, when cond: a range of
 * reminders_own, led by the meeting and the occurrence (a single meeting's, NULL, in a branch of
 * its own: IS NOT DISTINCT FROM would not be an index condition). */
#define OWN_OF(cond)                                                                               \
    "SELECT q.participant FROM reminders q WHERE q.meeting_id = r.meeting_id AND " cond            \
    " AND q.participant IS NOT NULL AND q.status <> 'cancelled'"
/* A webhook row handed to its owner in memory (db_fire.h): there is an owner, the caller asked
 * for the handover ($6 > 0) and the webhook w is live and on. */
#define HANDED(w) "($5::text IS NOT NULL AND $6::bigint > 0 AND " w ".disabled_at IS NULL)"
#define NULLS_5 "NULL, NULL, NULL, NULL, NULL"
#define NULLS_16 NULLS_5 ", " NULLS_5 ", " NULLS_5 ", NULL"
_Static_assert(COL_ORIGINAL_START + 1 == 16, "the fire's rows start with a meeting's columns");
static const char fire_sql[] =
    "WITH want AS (SELECT * FROM unnest($1::bigint[], $2::bigint[]) AS w(id, fire_ms)),"
    " upd AS ("
    "  UPDATE reminders r SET status = CASE WHEN now() > coalesce(r.starts_at, m.starts_at)"
    "   + $3::bigint * interval '1 millisecond' THEN 'missed' ELSE 'fired' END, fired_at = now()"
    "  FROM want w, meetings m"
    "  WHERE r.id = ANY($1::bigint[]) AND r.id = w.id AND r.fire_at = " DB_TS("w.fire_ms")
    "   AND " DB_FILTER("r.status = 'pending' AND r.fire_at <= now()")
    "   AND m.id = r.meeting_id AND m.deleted_at IS NULL"
    "  RETURNING r.id, r.fire_at, r.tenant_id, r.meeting_id, r.status, r.fired_at, r.channels,"
    "   coalesce(r.starts_at, m.starts_at) AS starts_at, r.participant AS own,"
    "   CASE WHEN r.participant IS NOT NULL THEN CASE WHEN r.participant = ANY (m.participant_ids)"
    "    THEN ARRAY[r.participant] ELSE '{}'::text[] END"
    "    WHEN m.organizer_id IS NULL OR m.organizer_id = ANY (m.participant_ids)"
    "    THEN m.participant_ids ELSE m.participant_ids || m.organizer_id END AS audience,"
    "   CASE WHEN r.participant IS NULL THEN ARRAY(" OWN_OF("q.original_start = r.original_start")
    "    UNION ALL " OWN_OF("r.original_start IS NULL AND q.original_start IS NULL") ")"
    "   END AS ex, m.participants),"
    " aud AS (SELECT u.id, u.fire_at, u.tenant_id, u.meeting_id, u.channels, u.starts_at, u.own,"
    "  u.ex, u.participants, CASE WHEN cardinality(u.ex) > 0 THEN ARRAY(SELECT x FROM"
    "  unnest(u.audience) AS x WHERE x <> ALL (u.ex)) ELSE u.audience END AS audience"
    "  FROM upd u WHERE u.status = 'fired'),"
    " ev AS ("
    "  SELECT a.tenant_id, a.id, a.fire_at, a.meeting_id, a.audience,"
    "   row_number() OVER (PARTITION BY a.tenant_id ORDER BY a.id, a.fire_at) AS k,"
    "   count(*) OVER (PARTITION BY a.tenant_id) AS n"
    "  FROM aud a WHERE a.channels & 2 <> 0 AND cardinality(a.audience) > 0),"
    " head AS ("
    "  INSERT INTO stream_heads AS h (tenant_id, seq)"
    "  SELECT DISTINCT ON (ev.tenant_id) ev.tenant_id, ev.n FROM ev ORDER BY ev.tenant_id"
    "  ON CONFLICT (tenant_id) DO UPDATE SET seq = h.seq + excluded.seq"
    "  RETURNING h.tenant_id, h.seq),"
    " sev AS ("
    "  INSERT INTO stream_events (tenant_id, seq, reminder_id, fire_at, fired_at, meeting_id,"
    "                             audience)"
    "  SELECT ev.tenant_id, hd.seq - ev.n + ev.k, ev.id, ev.fire_at, now(),"
    "   ev.meeting_id, ev.audience"
    "  FROM ev JOIN head hd ON hd.tenant_id = ev.tenant_id"
    "  RETURNING tenant_id, seq, reminder_id, fire_at, meeting_id),"
    " ins AS ("
    "  INSERT INTO outbox (tenant_id, meeting_id, reminder_id, fire_at, channel, target, receiver,"
    "                      webhook_id, push_subscription_id, recipient, address, status, attempts,"
    "                      delivered_at, next_attempt_at, lease_owner, last_error)"
    "  SELECT a.tenant_id, a.meeting_id, a.id, a.fire_at, 'webhook', wh.id::text, wh.id::text,"
    "   wh.id, NULL::uuid, NULL::text, NULL::text, 'pending', 0, NULL::timestamptz,"
    "   now() + CASE WHEN " HANDED("wh") " THEN $6::bigint ELSE 0 END * interval '1 millisecond',"
    "   $5::text, NULL::text"
    "  FROM aud a JOIN webhooks wh ON wh.tenant_id = a.tenant_id AND wh.deleted_at IS NULL"
    "  WHERE a.channels & 1 <> 0 AND a.own IS NULL"
    "  UNION ALL"
    "  SELECT a.tenant_id, a.meeting_id, a.id, a.fire_at, 'push', ps.id::text, ps.origin, NULL,"
    "   ps.id, ps.participant_id, NULL, " PREF_COLUMNS("now()", "$5::text")
    "  FROM aud a JOIN push_subscriptions ps ON ps.tenant_id = a.tenant_id"
    "   AND ps.participant_id = ANY (a.audience)" PREF_JOIN("ps.participant_id", "push", "now()")
    "  WHERE a.channels & 4 <> 0 AND (ps.expires_at IS NULL OR ps.expires_at > now())"
    "  UNION ALL"
    "  SELECT a.tenant_id, a.meeting_id, a.id, a.fire_at, 'email', p ->> 'id', 'smtp', NULL, NULL,"
    "   p ->> 'id', p ->> 'email', " PREF_COLUMNS("now()", "$5::text")
    "  FROM aud a CROSS JOIN json_array_elements(a.participants) AS p"
    PREF_JOIN("p ->> 'id'", "email", "now()")
    "  WHERE a.channels & 8 <> 0 AND $4::bool AND p ->> 'email' IS NOT NULL"
    "   AND (a.own IS NULL OR p ->> 'id' = a.own)"
    "   AND (coalesce(cardinality(a.ex), 0) = 0 OR p ->> 'id' <> ALL (a.ex))"
    "  UNION ALL"
    "  SELECT s.tenant_id, s.meeting_id, s.reminder_id, s.fire_at, 'stream', 'stream', 'stream',"
    "   NULL, NULL, NULL, NULL, 'delivered', 1, now(), now(), NULL, NULL FROM sev s"
    "  ON CONFLICT (reminder_id, fire_at, channel, target) DO NOTHING"
    "  RETURNING id, channel, tenant_id, meeting_id, reminder_id, fire_at, webhook_id,"
    "   status, next_attempt_at)"
    " SELECT " MEETING_FOR_COLUMNS ", 'r', u.id, " DB_MS("u.fire_at") ", u.status,"
    "  " DB_MS("u.fired_at") ", " NULLS_5 ", NULL, NULL"
    " FROM upd u" MEETING_FOR_JOINS("LEFT JOIN LATERAL", "u.meeting_id", "u.id",
    "u.status = 'fired' AND EXISTS (SELECT 1 FROM ins i JOIN webhooks wh ON wh.id = i.webhook_id"
    "  WHERE i.reminder_id = u.id AND i.fire_at = u.fire_at AND " HANDED("wh") ")", " ON true")
    " UNION ALL SELECT " NULLS_16 ", 'o', i.id, " DB_MS("i.fire_at") ", NULL, NULL, i.tenant_id,"
    "  i.meeting_id, i.reminder_id, wh.url, wh.secret,"
    "  CASE WHEN wh.previous_until > now() THEN wh.previous_secret END, i.webhook_id"
    " FROM ins i LEFT JOIN webhooks wh ON i.channel = 'webhook' AND wh.id = i.webhook_id"
    "  AND " HANDED("wh") " WHERE i.channel <> 'stream' AND i.status = 'pending'"
    "  AND (i.next_attempt_at <= now() OR wh.id IS NOT NULL)"
    " UNION ALL SELECT " NULLS_16 ", 's', s.tenant_id, max(s.seq), NULL, NULL, " NULLS_5 ","
    "  NULL, NULL FROM sev s GROUP BY s.tenant_id";
/* clang-format on */

/* The two columns of the keys, for db_array. */
static const char *
key_id(const void *arg, size_t i, char buf[DB_I64_BUF])
{
    return db_i64(buf, ((const struct reminder_key *)arg)[i].reminder_id);
}

static const char *
key_fire_at(const void *arg, size_t i, char buf[DB_I64_BUF])
{
    return db_i64(buf, ((const struct reminder_key *)arg)[i].fire_at_ms);
}

/* The columns of the fire statement's rows after the meeting's (MEETING_FOR_COLUMNS). */
enum fire_col {
    F_KIND = COL_ORIGINAL_START + 1,
    F_ID,
    F_MS,
    F_STATUS,
    F_FIRED,
    F_TENANT,
    F_MEETING,
    F_REMINDER,
    F_URL,
    F_SECRET,
    F_SECRET_OLD,
    F_WEBHOOK
};

void
db_fire_handover_free(struct db_fire_handover *h)
{
    if (h == NULL)
        return;
    for (size_t i = 0; i < h->n; i++)
        db_outbox_item_fini(&h->items[i]);
    for (size_t i = 0; i < h->n_meetings; i++)
        meeting_fini(&h->meetings[i]);
    free(h->items);
    free(h->meeting_of);
    free(h->meetings);
    free(h);
}

/* A handover with room for rows of each kind, or NULL when out of memory. */
static struct db_fire_handover *
handover_new(size_t rows)
{
    struct db_fire_handover *h = calloc(1, sizeof *h);

    if (h == NULL)
        return NULL;
    h->items = calloc(rows, sizeof *h->items);
    h->meeting_of = calloc(rows, sizeof *h->meeting_of);
    h->meetings = calloc(rows, sizeof *h->meetings);
    if (h->items == NULL || h->meeting_of == NULL || h->meetings == NULL) {
        db_fire_handover_free(h);
        return NULL;
    }
    return h;
}

/* A handed row ('o' with its webhook's URL) as a lease would bring it: 0, or -1 when out of
 * memory. Its meeting is found later (meeting_of). */
static int
handed_item(const PGresult *res, int row, struct db_outbox_item *it)
{
    *it = (struct db_outbox_item){.id = db_get_i64(res, row, F_ID),
                                  .tenant_id = db_get_i64(res, row, F_TENANT),
                                  .reminder_id = db_get_i64(res, row, F_REMINDER),
                                  .fire_at_ms = db_get_i64(res, row, F_MS),
                                  .channel = CHANNEL_WEBHOOK,
                                  .given = true};
    snprintf(it->meeting_id, sizeof it->meeting_id, "%s", PQgetvalue(res, row, F_MEETING));
    if (db_get_opt_str(res, row, F_URL, &it->url) != 0 ||
        db_get_opt_str(res, row, F_SECRET, &it->secret) != 0 ||
        db_get_opt_str(res, row, F_SECRET_OLD, &it->secret_old) != 0 ||
        db_get_opt_str(res, row, F_WEBHOOK, &it->receiver) != 0 ||
        db_get_opt_str(res, row, F_WEBHOOK, &it->target) != 0)
        return -1;
    return it->url != NULL && it->secret != NULL && it->receiver != NULL ? 0 : -1;
}

/* The meeting of each handed row (by its reminder: a fire statement fires an occurrence of a
 * reminder once), and each meeting's reminders as this statement left them: its rows were read
 * in the statement's snapshot, before its own update. Rows whose meeting did not come back are
 * left out (leased once due). */
static void
handover_link(struct db_fire_result *out, const int64_t *meeting_rid)
{
    struct db_fire_handover *h = out->handover;
    size_t kept = 0;

    for (size_t i = 0; i < h->n; i++) {
        size_t m = 0;
        while (m < h->n_meetings && meeting_rid[m] != h->items[i].reminder_id)
            m++;
        if (m == h->n_meetings) {
            db_outbox_item_fini(&h->items[i]);
            continue;
        }
        h->items[kept] = h->items[i];
        h->meeting_of[kept++] = m;
    }
    h->n = kept;
    for (size_t m = 0; m < h->n_meetings; m++)
        for (size_t r = 0; r < h->meetings[m].n_reminders; r++) {
            struct reminder *rem = &h->meetings[m].reminders[r];
            for (size_t k = 0; k < out->n; k++)
                if (out->item[k].reminder_id == rem->id) {
                    rem->status = out->item[k].status;
                    rem->fired_at_ms = out->item[k].fired_at_ms;
                }
        }
}

/* One 'r' row (a changed occurrence, with the meeting of its handed rows when it has some) into
 * out; meeting_rid[n] is that meeting's reminder. 0, or -1 when malformed or out of memory. */
static int
collect_fired(const PGresult *res, int row, struct db_fire_result *out, int64_t *meeting_rid)
{
    if (out->n == DB_FIRE_BATCH_MAX)
        return -1;
    struct db_fire_item *it = &out->item[out->n++];
    it->reminder_id = db_get_i64(res, row, F_ID);
    it->fire_at_ms = db_get_i64(res, row, F_MS);
    it->fired_at_ms = db_get_i64(res, row, F_FIRED);
    it->lateness_ms = it->fired_at_ms - it->fire_at_ms;
    if (meeting_reminder_status_parse(PQgetvalue(res, row, F_STATUS), &it->status) != 0)
        return -1;
    struct db_fire_handover *h = out->handover;
    if (h == NULL || meeting_rid == NULL || PQgetisnull(res, row, COL_ID))
        return 0;
    struct meeting *m = &h->meetings[h->n_meetings];
    meeting_init(m);
    if (db_meeting_fill(res, row, m) != 0) {
        meeting_fini(m);
        return -1;
    }
    meeting_rid[h->n_meetings++] = it->reminder_id;
    return 0;
}

/* Copies the result rows into out, the handover too when want (it is dropped, not failed, when
 * out of memory: its rows are leased once due). Returns 0, or -1 when out of memory or a row is
 * malformed. */
static int
collect(PGresult *res, bool want, struct db_fire_result *out)
{
    int rows = PQntuples(res);
    int64_t *meeting_rid = want ? calloc((size_t)rows + 1, sizeof *meeting_rid) : NULL;

    out->handover = meeting_rid != NULL ? handover_new((size_t)rows + 1) : NULL;
    out->outbox_ids = malloc(((size_t)rows + 1) * sizeof *out->outbox_ids);
    int rc = out->outbox_ids != NULL ? 0 : -1;
    for (int row = 0; row < rows && rc == 0; row++) {
        const char *kind = PQgetvalue(res, row, F_KIND);
        struct db_fire_handover *h = out->handover;

        if (kind[0] == 'o') {
            out->outbox_ids[out->n_outbox++] = db_get_i64(res, row, F_ID);
            if (h != NULL && !PQgetisnull(res, row, F_URL) &&
                handed_item(res, row, &h->items[h->n++]) != 0)
                rc = -1;
        } else if (kind[0] == 's') {
            if (out->n_streams == DB_FIRE_BATCH_MAX)
                rc = -1;
            else
                out->stream[out->n_streams++] =
                    (struct stream_head){db_get_i64(res, row, F_ID), db_get_i64(res, row, F_MS)};
        } else {
            rc = collect_fired(res, row, out, meeting_rid);
        }
    }
    if (rc == 0 && out->handover != NULL && meeting_rid != NULL)
        handover_link(out, meeting_rid);
    if (out->handover != NULL && out->handover->n == 0) {
        db_fire_handover_free(out->handover);
        out->handover = NULL;
    }
    free(meeting_rid);
    return rc;
}

enum db_status
db_fire_batch(struct db *db, const struct reminder_key *k, size_t n, int64_t missed_grace_ms,
              bool email, const char *owner, int64_t handover_ms, struct db_fire_result *out)
{
    char grace[DB_I64_BUF], hand[DB_I64_BUF];
    PGresult *res = NULL;
    enum db_status st = DB_HARD_ERROR;

    out->n = out->n_outbox = out->n_streams = 0;
    out->outbox_ids = NULL;
    out->handover = NULL;
    if (handover_ms > DB_FIRE_HANDOVER_GRACE_MS)
        handover_ms = DB_FIRE_HANDOVER_GRACE_MS;
    if (n == 0 || n > DB_FIRE_BATCH_MAX) {
        db_set_err(db, "fire batch of %zu (allowed 1..%d)", n, DB_FIRE_BATCH_MAX);
        return DB_HARD_ERROR;
    }
    char *ids = db_array(n, key_id, k), *fires = db_array(n, key_fire_at, k);
    const char *params[] = {ids,
                            fires,
                            db_i64(grace, missed_grace_ms),
                            email ? "true" : "false",
                            owner,
                            db_i64(hand, owner != NULL ? handover_ms : 0)};
    if (ids == NULL || fires == NULL) {
        db_set_err(db, "out of memory");
        goto done;
    }
    st = db_exec_in_order(db, STMT_REMINDER_FIRE_BATCH, fire_sql, 6, params,
                          n <= FIRE_GENERIC_MAX ? DB_PLAN_GENERIC : DB_PLAN_CUSTOM, &res);
    if (st == DB_ONE_RESULT && collect(res, owner != NULL && handover_ms > 0, out) != 0) {
        /* Committed already: the rows are fired; delivery's poller finds their outbox rows. */
        db_set_err(db, "fire result unreadable (out of memory or unexpected row)");
        st = DB_HARD_ERROR;
    }
    PQclear(res);
done:
    free(ids);
    free(fires);
    return st;
}

void
db_fire_result_fini(struct db_fire_result *out)
{
    free(out->outbox_ids);
    out->outbox_ids = NULL;
    db_fire_handover_free(out->handover);
    out->handover = NULL;
    out->n = out->n_outbox = out->n_streams = 0;
}
