/* itest_fire.c -- the statements that make "fired once" true, tested directly against a real
 * PostgreSQL: the fire statement (db_fire.c) never early, never twice (also when two connections
 * fire the same batch at once), missed past the grace, nothing for a stale fire time or a deleted
 * meeting, one outbox row per webhook and one stream event per occurrence with consecutive seqs in
 * commit order; and the outbox statements delivery lives on (db_outbox.c): lease with exclusions,
 * release with a delay, delivered, failed and retried, the backlog, a dead replica's rows taken
 * first, and owners: rows the fire statement gives a worker, read once without a write and kept
 * from the others while its lease lives, anyone's once it lapsed or its backend is gone, given
 * back when it leaves, and passed on to anyone once due when its circuits for their receivers are
 * open. */
#include <pthread.h>

#include "db.h"
#include "db_fire.h"
#include "db_outbox.h"
#include "db_stream.h"
#include "fixture.h"
#include "timefmt.h"

#define GRACE_MS 60000
#define RACE_ROUNDS 20
#define RACE_BATCH 40

static int64_t tenant;
static char hook[MEETING_ID_LEN + 1];

static struct db *
open_db(const char *url)
{
    char err[DB_ERR_MAX];
    struct db *db = db_open(url, err, sizeof err);

    CHECK(db != NULL, "connect: %s", err);
    return db;
}

/* A meeting starting start_ms with one reminder minutes_before; its key into *k. */
static void
meeting_due(struct db *db, struct meeting *m, int64_t start_ms, int minutes_before,
            struct reminder_key *k)
{
    fixture_meeting(m, "fire", start_ms, &minutes_before, 1);
    CHECK(db_meeting_insert(db, tenant, m, NULL) == DB_ONE_RESULT, "insert: %s", db_errmsg(db));
    k->reminder_id = m->reminders[0].id;
    k->fire_at_ms = m->reminders[0].fire_at_ms;
}

/* Every row delivered: a test that counts pending rows starts from none. */
static void
empty_backlog(void)
{
    CHECK(fixture_sql("UPDATE outbox SET status = 'delivered' WHERE status = 'pending'", NULL, NULL,
                      NULL) >= 0,
          "an empty backlog");
}

static long long
count(const char *sql, int64_t id)
{
    char buf[32];

    return fixture_sql(sql, fixture_i64(buf, id), NULL, NULL);
}

static void
test_fire_rules(struct db *db)
{
    struct meeting due, early, late, gone;
    struct reminder_key k[5];
    struct reminder_keys cancelled = {0};
    struct db_fire_result res = {0};
    int64_t now = timefmt_now_ms();

    meeting_due(db, &due, now + 5 * FIXTURE_MIN_MS, 5, &k[0]);           /* due now */
    meeting_due(db, &early, now + 60 * FIXTURE_MIN_MS, 5, &k[1]);        /* due in 55 min */
    meeting_due(db, &late, now - 2 * FIXTURE_MIN_MS, 5, &k[2]);          /* start + grace past */
    meeting_due(db, &gone, now + 5 * FIXTURE_MIN_MS - 1000, 5, &k[3]);   /* deleted below */
    k[4] = (struct reminder_key){k[0].reminder_id, k[0].fire_at_ms - 1}; /* stale fire time */
    CHECK(db_meeting_delete(db, tenant, gone.id, &cancelled) == DB_ONE_RESULT, "delete");
    CHECK(db_fire_batch(db, k, 5, GRACE_MS, false, NULL, 0, &res) == DB_ONE_RESULT, "fire: %s",
          db_errmsg(db));
    CHECK(res.n == 2, "changed %zu occurrences, want 2 (due + missed)", res.n);
    for (size_t i = 0; i < res.n; i++) {
        bool is_due = res.item[i].reminder_id == k[0].reminder_id;
        CHECK(res.item[i].status == (is_due ? REMINDER_FIRED : REMINDER_MISSED),
              "reminder %lld status %s", (long long)res.item[i].reminder_id,
              meeting_reminder_status_name(res.item[i].status));
        CHECK(res.item[i].fired_at_ms >= res.item[i].fire_at_ms, "fired before its time");
    }
    CHECK(res.n_outbox == 1, "outbox rows %zu, want 1 (the missed one gets none)", res.n_outbox);
    CHECK(res.n_streams == 1 && res.stream[0].tenant_id == tenant, "stream heads %zu",
          res.n_streams);
    CHECK(count("SELECT count(*) FROM reminders WHERE id = $1 AND status = 'pending'",
                k[1].reminder_id) == 1,
          "the early one must stay pending");
    CHECK(count("SELECT count(*) FROM reminders WHERE id = $1 AND status = 'cancelled'",
                k[3].reminder_id) == 1,
          "the deleted meeting's reminder must stay cancelled");
    CHECK(count("SELECT count(*) FROM stream_events WHERE reminder_id = $1", k[0].reminder_id) == 1,
          "one stream event for the fired one");
    db_fire_result_fini(&res);
    /* Firing the same occurrences again changes nothing. */
    CHECK(db_fire_batch(db, k, 5, GRACE_MS, false, NULL, 0, &res) == DB_ONE_RESULT && res.n == 0 &&
              res.n_outbox == 0 && res.n_streams == 0,
          "second fire changed %zu", res.n);
    db_fire_result_fini(&res);
    meeting_fini(&due);
    meeting_fini(&early);
    meeting_fini(&late);
    meeting_fini(&gone);
}

/* Each channel of a reminder gets its rows, and only those: email (on when SMTP is configured)
 * per participant with an address, push per subscription of a participant, webhook per hook,
 * stream an event and a delivered row. */
static void
test_channels(struct db *db)
{
    static const unsigned cases[] = {CHANNEL_EMAIL, CHANNEL_PUSH, CHANNEL_WEBHOOK | CHANNEL_STREAM,
                                     CHANNELS_ALL};
    struct db_fire_result res = {0};
    int64_t now = timefmt_now_ms();
    char t[32], id[MEETING_ID_LEN + 1];

    meeting_new_id(id);
    CHECK(fixture_sql("INSERT INTO push_subscriptions (id, tenant_id, participant_id, endpoint, "
                      "origin, p256dh, auth) VALUES ($1, $2, 'u1', 'https://push.example/x', "
                      "'https://push.example', repeat('A', 87), repeat('B', 22))",
                      id, fixture_i64(t, tenant), NULL) == 1,
          "push subscription");
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        struct meeting m;
        struct reminder_key k;
        int minutes = 5;
        fixture_meeting(&m, "channels", now + 5 * FIXTURE_MIN_MS - (int64_t)c, &minutes, 1);
        m.reminders[0].channels = cases[c];
        CHECK(db_meeting_insert(db, tenant, &m, NULL) == DB_ONE_RESULT, "insert");
        k = (struct reminder_key){m.reminders[0].id, m.reminders[0].fire_at_ms};
        CHECK(db_fire_batch(db, &k, 1, GRACE_MS, true, NULL, 0, &res) == DB_ONE_RESULT &&
                  res.n == 1,
              "fire channels %u", cases[c]);
        long long want[] = {(cases[c] & CHANNEL_WEBHOOK) != 0, (cases[c] & CHANNEL_STREAM) != 0,
                            (cases[c] & CHANNEL_PUSH) != 0, (cases[c] & CHANNEL_EMAIL) != 0};
        static const char *const names[] = {"webhook", "stream", "push", "email"};
        char rid[32];
        for (size_t i = 0; i < 4; i++)
            CHECK(fixture_sql("SELECT count(*) FROM outbox WHERE reminder_id = $1 AND channel = $2",
                              fixture_i64(rid, k.reminder_id), names[i], NULL) == want[i],
                  "channels %u: %s rows", cases[c], names[i]);
        CHECK(count("SELECT count(*) FROM stream_events WHERE reminder_id = $1", k.reminder_id) ==
                  want[1],
              "channels %u: stream events", cases[c]);
        CHECK(count("SELECT count(*) FROM outbox WHERE reminder_id = $1 AND channel = 'email' AND "
                    "address = 'ada@example.com' AND recipient = 'u1' AND receiver = 'smtp'",
                    k.reminder_id) == want[3],
              "channels %u: the email row's target", cases[c]);
        db_fire_result_fini(&res);
        meeting_fini(&m);
    }
}

/* ---- two connections firing the same batch at once ---- */

struct racer {
    struct db *db;
    const struct reminder_key *k;
    size_t n;
    pthread_barrier_t *start;
    size_t fired;
};

static void *
race(void *arg)
{
    struct racer *r = arg;
    struct db_fire_result res = {0};

    pthread_barrier_wait(r->start);
    if (db_fire_batch(r->db, r->k, r->n, GRACE_MS, false, NULL, 0, &res) == DB_ONE_RESULT)
        r->fired = res.n;
    db_fire_result_fini(&res);
    return NULL;
}

static void
test_concurrent_fire(struct db *a, struct db *b)
{
    struct reminder_key k[RACE_BATCH];
    struct meeting m[RACE_BATCH];
    pthread_barrier_t start;
    int64_t now = timefmt_now_ms();
    long long head_before =
        fixture_sql("SELECT coalesce(max(seq), 0) FROM stream_events", NULL, NULL, NULL);
    size_t total = 0;

    for (int round = 0; round < RACE_ROUNDS; round++) {
        for (size_t i = 0; i < RACE_BATCH; i++)
            meeting_due(a, &m[i], now + 5 * FIXTURE_MIN_MS - (int64_t)i, 5, &k[i]);
        struct racer r1 = {a, k, RACE_BATCH, &start, 0}, r2 = {b, k, RACE_BATCH, &start, 0};
        pthread_t t1, t2;
        pthread_barrier_init(&start, NULL, 2);
        pthread_create(&t1, NULL, race, &r1);
        pthread_create(&t2, NULL, race, &r2);
        pthread_join(t1, NULL);
        pthread_join(t2, NULL);
        pthread_barrier_destroy(&start);
        CHECK(r1.fired + r2.fired == RACE_BATCH, "round %d: fired %zu + %zu of %d", round, r1.fired,
              r2.fired, RACE_BATCH);
        total += r1.fired + r2.fired;
        for (size_t i = 0; i < RACE_BATCH; i++)
            meeting_fini(&m[i]);
    }
    char h[32];
    /* Every occurrence once in the outbox and the stream; seqs consecutive, none reused. */
    CHECK(fixture_sql("SELECT count(*) - count(DISTINCT (reminder_id, fire_at)) FROM outbox"
                      " WHERE channel = 'webhook'",
                      NULL, NULL, NULL) == 0,
          "an occurrence with two webhook rows");
    CHECK(fixture_sql("SELECT count(*) - count(DISTINCT (reminder_id, fire_at)) FROM outbox"
                      " WHERE channel = 'stream' AND status = 'delivered'",
                      NULL, NULL, NULL) == 0,
          "an occurrence with two stream rows");
    CHECK(fixture_sql("SELECT count(*) FROM stream_events WHERE seq > $1",
                      fixture_i64(h, head_before), NULL, NULL) == (long long)total,
          "stream events %lld, want %zu",
          fixture_sql("SELECT count(*) FROM stream_events WHERE seq > $1", h, NULL, NULL), total);
    CHECK(fixture_sql("SELECT max(seq) - min(seq) + 1 - count(*) FROM stream_events", NULL, NULL,
                      NULL) == 0,
          "a gap in the stream's seqs");
    CHECK(fixture_sql("SELECT seq FROM stream_heads WHERE tenant_id = $1", fixture_i64(h, tenant),
                      NULL,
                      NULL) == fixture_sql("SELECT max(seq) FROM stream_events", NULL, NULL, NULL),
          "the head is not the last seq");
}

/* ---- the outbox statements ---- */

/* A lease that may find dead owners' rows. */
static enum db_status
claim_rows(struct db *db, const char *owner, const char *const *exclude, size_t n_exclude,
           const int64_t *held, size_t n_held, struct db_outbox_item *out, size_t max, size_t *n)
{
    struct db_outbox_claim_args a = {.owner = owner,
                                     .orphans = true,
                                     .exclude = exclude,
                                     .n_exclude = n_exclude,
                                     .held = held,
                                     .n_held = n_held};

    return db_outbox_claim(db, &a, out, max, n);
}

static void
items_fini(struct db_outbox_item *it, size_t n)
{
    for (size_t i = 0; i < n; i++)
        db_outbox_item_fini(&it[i]);
}

static void
test_outbox(struct db *db)
{
    struct db_outbox_item it[DB_OUTBOX_CLAIM_MAX];
    const char *exclude[] = {hook, "https://push.example", "smtp"};
    int64_t backlog = 0, ids[DB_OUTBOX_CLAIM_MAX];
    size_t n = 0, failed = 0;
    int status[DB_OUTBOX_CLAIM_MAX];

    CHECK(db_outbox_backlog(db, &backlog) == DB_ONE_RESULT && backlog > 0, "backlog %lld",
          (long long)backlog);
    CHECK(db_outbox_owner_register(db, "w/0", 60000) == DB_ONE_RESULT &&
              db_outbox_owner_register(db, "w/1", 60000) == DB_ONE_RESULT,
          "owners");
    /* Excluding every receiver leases nothing; excluding the others leases the webhook's. */
    CHECK(claim_rows(db, "w/0", exclude, 3, NULL, 0, it, 10, &n) == DB_ONE_RESULT && n == 0,
          "claimed %zu with every receiver excluded", n);
    CHECK(claim_rows(db, "w/0", exclude + 1, 2, NULL, 0, it, 3, &n) == DB_ONE_RESULT && n == 3,
          "claimed %zu of 3", n);
    for (size_t i = 0; i < n; i++) {
        ids[i] = it[i].id;
        CHECK(strcmp(it[i].receiver, hook) == 0 && it[i].channel == CHANNEL_WEBHOOK &&
                  it[i].payload == NULL && it[i].attempts == 0 && !it[i].given &&
                  strcmp(it[i].url, "http://127.0.0.1:9/") == 0,
              "row %zu as leased", i);
    }
    size_t again = 0;
    struct db_outbox_item more[DB_OUTBOX_CLAIM_MAX];
    CHECK(claim_rows(db, "w/1", NULL, 0, NULL, 0, more, DB_OUTBOX_CLAIM_MAX, &again) ==
              DB_ONE_RESULT,
          "second claim");
    for (size_t i = 0; i < again; i++) {
        for (size_t j = 0; j < n; j++)
            CHECK(more[i].id != ids[j], "row %lld leased twice", (long long)ids[j]);
        db_outbox_item_fini(&more[i]);
    }
    /* The second worker's rows go back at once: due again. */
    CHECK(db_outbox_owner_renew(db, "w/0", 60000) == DB_ONE_RESULT, "renew");
    CHECK(db_outbox_release(db, "w/0", &ids[2], 1, 3600000) == DB_ONE_RESULT, "release later");
    char b[32];
    CHECK(fixture_sql("SELECT count(*) FROM outbox WHERE id = $1 AND lease_owner IS NULL AND "
                      "next_attempt_at > now() + interval '50 minutes'",
                      fixture_i64(b, ids[2]), NULL, NULL) == 1,
          "a release with a delay is due after it, unleased, without an attempt");
    status[0] = 204;
    bool recorded[1];
    int64_t took[1] = {12};
    CHECK(db_outbox_delivered(db, ids, status, took, 1, "replica-a", recorded) == DB_ONE_RESULT &&
              recorded[0],
          "delivered");
    CHECK(count("SELECT count(*) FROM delivery_attempts WHERE outbox_id = $1 AND n = 1 AND "
                "outcome = 'delivered' AND http_status = 204 AND duration_ms = 12 AND "
                "error IS NULL AND instance = 'replica-a'",
                ids[0]) == 1,
          "the delivery's attempt written with its record");
    CHECK(count("SELECT count(*) FROM outbox WHERE id = $1 AND status = 'delivered' AND "
                "attempts = 1 AND last_status = 204 AND lease_owner IS NULL AND payload IS NULL",
                ids[0]) == 1,
          "delivered row (no body kept: nothing will send it again)");
    /* A second worker's answer for the same row (it took the row over while the first one's
     * request was out): the first record stands. */
    int second[1] = {200};
    CHECK(db_outbox_delivered(db, ids, second, took, 1, "replica-b", recorded) == DB_ONE_RESULT &&
              !recorded[0] &&
              count("SELECT count(*) FROM outbox WHERE id = $1 AND attempts = 1"
                    " AND last_status = 204",
                    ids[0]) == 1 &&
              count("SELECT count(*) FROM delivery_attempts WHERE outbox_id = $1", ids[0]) == 1,
          "a delivered row is recorded once, with one attempt");
    /* The released row is taken over by w/1 while w/0 still has a request out for it: w/0's
     * failure for it is not recorded (it would free the row under w/1's request). */
    CHECK(count("UPDATE outbox SET lease_owner = 'w/1' WHERE id = $1 AND lease_owner IS NULL",
                ids[2]) == 1,
          "w/1 takes the released row");
    struct db_outbox_failure f[2] = {{ids[1], 503, 1000, false, true, 40},
                                     {ids[2], 0, 0, true, true, 0}};
    CHECK(db_outbox_failed(db, "w/0", "replica-a", f, 2, "[\"HTTP 503\",\"webhook deleted\"]",
                           "[\"{}\",null]", 15, &failed) == DB_ONE_RESULT &&
              failed == 0 && f[0].recorded && !f[1].recorded,
          "w/0's failures: %zu for good, recorded %d %d", failed, f[0].recorded, f[1].recorded);
    CHECK(count("SELECT count(*) FROM delivery_attempts WHERE outbox_id = $1 AND n = 1 AND "
                "outcome = 'failed' AND http_status = 503 AND duration_ms = 40 AND "
                "error = 'HTTP 503' AND instance = 'replica-a'",
                ids[1]) == 1,
          "a failed attempt written with its record");
    CHECK(count("SELECT count(*) FROM delivery_attempts WHERE outbox_id = $1", ids[2]) == 0,
          "a failure not recorded writes no attempt");
    CHECK(count("SELECT count(*) FROM outbox WHERE id = $1 AND status = 'pending' AND attempts = "
                "1 AND last_status = 503 AND payload = '{}' AND lease_owner IS NULL",
                ids[1]) == 1,
          "retried row");
    CHECK(count("SELECT count(*) FROM outbox WHERE id = $1 AND status = 'pending' AND attempts = 0"
                " AND last_error IS NULL AND lease_owner = 'w/1'",
                ids[2]) == 1,
          "a failure from a worker that no longer holds the row changes nothing");
    struct db_outbox_failure gone[1] = {{ids[2], 0, 0, true, false, 0}};
    CHECK(db_outbox_failed(db, "w/1", "replica-b", gone, 1, "[\"webhook deleted\"]", "[null]", 15,
                           &failed) == DB_ONE_RESULT &&
              failed == 1 && gone[0].recorded,
          "w/1's failure: %zu for good", failed);
    status[0] = 200;
    CHECK(db_outbox_delivered(db, &ids[1], status, took, 1, "replica-a", recorded) ==
                  DB_ONE_RESULT &&
              recorded[0] &&
              count("SELECT count(*) FROM outbox WHERE id = $1 AND status = 'delivered' AND "
                    "attempts = 2 AND last_status = 200 AND payload = '{}'",
                    ids[1]) == 1,
          "a retry delivered keeps the body its first attempt stored");
    CHECK(count("SELECT count(*) FROM outbox WHERE id = $1 AND status = 'failed' AND "
                "last_error = 'webhook deleted' AND payload IS NULL",
                ids[2]) == 1,
          "given-up row");
    /* A row tried again and again keeps its DB_OUTBOX_ATTEMPTS_KEPT newest attempts. */
    for (int i = 0; i < DB_OUTBOX_ATTEMPTS_KEPT + 2; i++) {
        struct db_outbox_failure again1[1] = {{ids[2], 500, 0, false, false, 1}};
        CHECK(count("UPDATE outbox SET status = 'pending', lease_owner = 'w/1' WHERE id = $1",
                    ids[2]) == 1 &&
                  db_outbox_failed(db, "w/1", "replica-b", again1, 1, "[\"HTTP 500\"]", "[null]",
                                   100, &failed) == DB_ONE_RESULT &&
                  again1[0].recorded,
              "failure %d recorded", i);
    }
    CHECK(count("SELECT count(*) FROM delivery_attempts a JOIN outbox o ON o.id = a.outbox_id"
                " WHERE o.id = $1 AND a.n > o.attempts - " DB_OUTBOX_ATTEMPTS_KEPT_TEXT,
                ids[2]) == DB_OUTBOX_ATTEMPTS_KEPT &&
              count("SELECT count(*) FROM delivery_attempts WHERE outbox_id = $1", ids[2]) ==
                  DB_OUTBOX_ATTEMPTS_KEPT,
          "the newest attempts kept, the oldest deleted");
    items_fini(it, n);
}

/* A row whose lease ran out (its replica died) is taken before a backlog due long before it. */
static void
test_orphans(struct db *db)
{
    struct db_outbox_item it[1], next[1];
    size_t n = 0, m = 0;
    char b[32];
    long long orphan =
        fixture_sql("SELECT id FROM outbox WHERE status = 'pending' ORDER BY id DESC LIMIT 1", NULL,
                    NULL, NULL);

    CHECK(orphan > 0, "a pending row");
    CHECK(fixture_sql("UPDATE outbox SET lease_owner = NULL, next_attempt_at = now() - interval "
                      "'1 hour' WHERE status = 'pending'",
                      NULL, NULL, NULL) >= 2,
          "a backlog due an hour ago");
    CHECK(fixture_sql("UPDATE outbox SET lease_owner = 'dead/0', next_attempt_at = now() - "
                      "interval '1 millisecond' WHERE id = $1",
                      fixture_i64(b, orphan), NULL, NULL) == 1,
          "a lease that just ran out");
    CHECK(db_outbox_owner_register(db, "w/2", 60000) == DB_ONE_RESULT, "owner");
    CHECK(claim_rows(db, "w/2", NULL, 0, NULL, 0, it, 1, &n) == DB_ONE_RESULT && n == 1 &&
              it[0].id == orphan,
          "the orphan first: got %lld, want %lld", n ? (long long)it[0].id : -1LL, orphan);
    CHECK(claim_rows(db, "w/2", NULL, 0, &it[0].id, 1, next, 1, &m) == DB_ONE_RESULT && m == 1 &&
              next[0].id != orphan,
          "then the backlog");
    CHECK(fixture_sql("SELECT count(*) FROM outbox WHERE id = $1 AND lease_owner = 'w/2'",
                      fixture_i64(b, orphan), NULL, NULL) == 1,
          "the orphan is leased to its new owner");
    items_fini(it, n);
    items_fini(next, m);
}

/* The rows of id list ids[0..n) that claim returned in it[0..got), flagged given or not. */
static size_t
claimed_of(const struct db_outbox_item *it, size_t got, const int64_t *ids, size_t n, bool given)
{
    size_t found = 0;

    for (size_t i = 0; i < got; i++)
        for (size_t j = 0; j < n; j++)
            found += it[i].id == ids[j] && it[i].given == given;
    return found;
}

/* Rows written owned by a worker: its own on the next claim without a write, nobody else's while
 * its lease lives, anyone's once it lapsed; leaving gives back what it still holds. */
static void
test_owners(struct db *db)
{
    struct meeting m[3];
    struct reminder_key k[3];
    struct db_fire_result res = {0};
    struct db_outbox_item it[DB_OUTBOX_CLAIM_MAX];
    size_t n = 0;
    int64_t now = timefmt_now_ms(), given[8];

    empty_backlog();
    CHECK(db_outbox_owner_register(db, "r/0/1", 60000) == DB_ONE_RESULT &&
              db_outbox_owner_register(db, "r/1/1", 60000) == DB_ONE_RESULT,
          "owners");
    for (int i = 0; i < 3; i++)
        meeting_due(db, &m[i], now + 5 * FIXTURE_MIN_MS - i, 5, &k[i]);
    /* One row per webhook of the tenant (the tests above added more than one). */
    CHECK(db_fire_batch(db, k, 3, GRACE_MS, false, "r/0/1", 0, &res) == DB_ONE_RESULT &&
              res.n_outbox >= 3 && res.n_outbox <= 8 && res.handover == NULL,
          "fired with an owner: %zu outbox rows", res.n_outbox);
    for (size_t i = 0; i < res.n_outbox && i < 8; i++)
        given[i] = res.outbox_ids[i];
    size_t n_given = res.n_outbox < 8 ? res.n_outbox : 8;
    db_fire_result_fini(&res);
    CHECK(fixture_sql("SELECT count(*) FROM outbox WHERE status = 'pending' AND lease_owner = "
                      "'r/0/1'",
                      NULL, NULL, NULL) == (long long)n_given,
          "the fire statement wrote them owned");
    CHECK(claim_rows(db, "r/1/1", NULL, 0, NULL, 0, it, 10, &n) == DB_ONE_RESULT && n == 0,
          "another live owner takes none: %zu", n);
    /* Its own: read without a write; one it holds already is not read again. */
    CHECK(claim_rows(db, "r/0/1", NULL, 0, given, 1, it, 10, &n) == DB_ONE_RESULT &&
              n == n_given - 1 && claimed_of(it, n, given + 1, n_given - 1, true) == n,
          "its own not held: %zu", n);
    items_fini(it, n);
    /* Lapsed: renewing says so, and the rows are anyone's. */
    CHECK(fixture_sql("UPDATE delivery_owners SET lease_until = now() - interval '1 second' "
                      "WHERE owner = 'r/0/1'",
                      NULL, NULL, NULL) == 1,
          "lapse");
    CHECK(db_outbox_owner_renew(db, "r/0/1", 60000) == DB_NO_RESULTS,
          "a lapsed lease is not renewed");
    CHECK(claim_rows(db, "r/1/1", NULL, 0, NULL, 0, it, 2, &n) == DB_ONE_RESULT && n == 2 &&
              claimed_of(it, n, given, n_given, false) == 2,
          "a lapsed owner's rows are taken over: %zu", n);
    items_fini(it, n);
    CHECK(fixture_sql("SELECT count(*) FROM outbox WHERE status = 'pending' AND lease_owner = "
                      "'r/1/1'",
                      NULL, NULL, NULL) == 2,
          "now the taker's");
    /* Leaving gives back what it holds: due for anyone, no attempt spent. */
    CHECK(db_outbox_owner_leave(db, "r/1/1") == DB_ONE_RESULT, "leave");
    CHECK(fixture_sql("SELECT count(*) FROM outbox WHERE status = 'pending' AND lease_owner IS NULL"
                      " AND attempts = 0",
                      NULL, NULL, NULL) == 2,
          "given back");
    CHECK(fixture_sql("SELECT count(*) FROM delivery_owners WHERE owner = 'r/1/1'", NULL, NULL,
                      NULL) == 0,
          "its lease is gone");
    for (int i = 0; i < 3; i++)
        meeting_fini(&m[i]);
}

/* The reminder of m whose id is id, or NULL when it has none. */
static const struct reminder *
reminder_of(const struct meeting *m, int64_t id)
{
    for (size_t i = 0; i < m->n_reminders; i++)
        if (m->reminders[i].id == id)
            return &m->reminders[i];
    return NULL;
}

/* A fire that hands its webhook rows over brings each with its webhook's URL and secret and the
 * meeting as committed (the fired reminder fired, the other still pending), writes them due after
 * the grace so the owner's lease does not bring them too, and leases them once due. */
static void
test_handover(struct db *db)
{
    struct meeting m;
    int minutes[2] = {5, 1}; /* the first due now, the second in four minutes */
    struct reminder_key k;
    struct db_fire_result res = {0};
    struct db_outbox_item it[8];
    size_t n = 0;

    empty_backlog();
    CHECK(db_outbox_owner_register(db, "h/0/1", 60000) == DB_ONE_RESULT, "owner");
    fixture_meeting(&m, "handed", timefmt_now_ms() + 5 * FIXTURE_MIN_MS, minutes, 2);
    CHECK(db_meeting_insert(db, tenant, &m, NULL) == DB_ONE_RESULT, "insert: %s", db_errmsg(db));
    k = (struct reminder_key){m.reminders[0].id, m.reminders[0].fire_at_ms};
    char t[32];
    long long hooks = fixture_sql("SELECT count(*) FROM webhooks WHERE tenant_id = $1 AND "
                                  "deleted_at IS NULL AND disabled_at IS NULL",
                                  fixture_i64(t, tenant), NULL, NULL);
    CHECK(db_fire_batch(db, &k, 1, GRACE_MS, false, "h/0/1", DB_FIRE_HANDOVER_GRACE_MS, &res) ==
                  DB_ONE_RESULT &&
              res.n == 1 && res.handover != NULL && hooks > 0 && res.handover->n == (size_t)hooks &&
              res.n_outbox >= (size_t)hooks,
          "handed %zu of %zu rows (%lld webhooks on)", res.handover ? res.handover->n : 0,
          res.n_outbox, hooks);
    /* The others (an earlier test's webhook turned off, push subscriptions) are due at once. */
    long long rows = (long long)res.n_outbox, off = rows - hooks;
    for (size_t i = 0; res.handover != NULL && i < res.handover->n; i++) {
        const struct db_outbox_item *h = &res.handover->items[i];
        const struct meeting *hm = &res.handover->meetings[res.handover->meeting_of[i]];
        const struct reminder *fired = reminder_of(hm, k.reminder_id);
        const struct reminder *later = reminder_of(hm, m.reminders[1].id);
        CHECK(h->given && h->channel == CHANNEL_WEBHOOK && h->url != NULL &&
                  strncmp(h->secret, "whsec_", 6) == 0 && strcmp(h->receiver, h->target) == 0 &&
                  h->reminder_id == k.reminder_id && h->fire_at_ms == k.fire_at_ms &&
                  strcmp(h->meeting_id, m.id) == 0 && h->payload == NULL,
              "handed row %zu as a lease brings it", i);
        CHECK(strcmp(hm->id, m.id) == 0 && strcmp(hm->title, "handed") == 0 && fired != NULL &&
                  later != NULL && fired->status == REMINDER_FIRED &&
                  fired->fired_at_ms == res.item[0].fired_at_ms &&
                  later->status == REMINDER_PENDING,
              "its meeting as committed");
    }
    db_fire_result_fini(&res);
    CHECK(fixture_sql("SELECT count(*) FROM outbox WHERE status = 'pending' AND lease_owner = "
                      "'h/0/1' AND next_attempt_at > now() + interval '1 second'",
                      NULL, NULL, NULL) == hooks,
          "written due after the grace");
    CHECK(claim_rows(db, "h/0/1", NULL, 0, NULL, 0, it, 8, &n) == DB_ONE_RESULT && n == (size_t)off,
          "its lease brings none of them before, only the row not handed: %zu", n);
    items_fini(it, n);
    CHECK(fixture_sql("UPDATE outbox SET next_attempt_at = now() WHERE lease_owner = 'h/0/1'", NULL,
                      NULL, NULL) == rows,
          "the grace over");
    CHECK(claim_rows(db, "h/0/1", NULL, 0, NULL, 0, it, 8, &n) == DB_ONE_RESULT &&
              n == (size_t)rows && it[0].given,
          "then its lease brings them: %zu", n);
    items_fini(it, n);
    CHECK(db_outbox_owner_leave(db, "h/0/1") == DB_ONE_RESULT, "leave");
    meeting_fini(&m);
}

/* The handed webhook rows of a fire, passed on for their receivers (a worker whose circuits for
 * them are open): none before they are due (a handover may still be taken), never the one the
 * owner holds, the rest due for anyone, no attempt spent; another worker's lease takes them. */
static void
test_pass_on(struct db *db)
{
    struct meeting m;
    int minutes = 5;
    struct reminder_key k;
    struct db_fire_result res = {0};
    struct db_outbox_item it[8];
    char rcv[8][MEETING_ID_LEN + 1], other[MEETING_ID_LEN + 1], t[32]; /* webhook ids */
    const char *receivers[8];
    int64_t held = 0, passed = -1;
    size_t n = 0, handed = 0;

    empty_backlog();
    meeting_new_id(other); /* a second webhook at least: one row held, the others passed on */
    CHECK(fixture_sql("INSERT INTO webhooks (id, tenant_id, url, secret) VALUES ($1, $2, "
                      "'http://127.0.0.1:9/', 'whsec_dGVzdA==')",
                      other, fixture_i64(t, tenant), NULL) == 1,
          "webhook");
    CHECK(db_outbox_owner_register(db, "p/0/1", 60000) == DB_ONE_RESULT &&
              db_outbox_owner_register(db, "p/1/1", 60000) == DB_ONE_RESULT,
          "owners");
    fixture_meeting(&m, "passed", timefmt_now_ms() + 5 * FIXTURE_MIN_MS, &minutes, 1);
    CHECK(db_meeting_insert(db, tenant, &m, NULL) == DB_ONE_RESULT, "insert: %s", db_errmsg(db));
    k = (struct reminder_key){m.reminders[0].id, m.reminders[0].fire_at_ms};
    CHECK(db_fire_batch(db, &k, 1, GRACE_MS, false, "p/0/1", DB_FIRE_HANDOVER_GRACE_MS, &res) ==
                  DB_ONE_RESULT &&
              res.handover != NULL && res.handover->n >= 2,
          "handed %zu rows", res.handover ? res.handover->n : 0);
    for (size_t i = 0; res.handover != NULL && i < res.handover->n && i < 8; i++) {
        snprintf(rcv[i], sizeof rcv[i], "%s", res.handover->items[i].receiver);
        receivers[i] = rcv[i];
        handed++;
    }
    if (handed > 0)
        held = res.handover->items[0].id;
    db_fire_result_fini(&res);
    CHECK(db_outbox_pass_on(db, "p/0/1", receivers, handed, &held, 1, &passed) == DB_ONE_RESULT &&
              passed == 0,
          "none passed on before due: %lld", (long long)passed);
    CHECK(fixture_sql("UPDATE outbox SET next_attempt_at = now() WHERE lease_owner = 'p/0/1'", NULL,
                      NULL, NULL) >= (long long)handed,
          "the grace over");
    CHECK(db_outbox_pass_on(db, "p/1/1", receivers, handed, NULL, 0, &passed) == DB_ONE_RESULT &&
              passed == 0,
          "another owner passes on none of them: %lld", (long long)passed);
    CHECK(db_outbox_pass_on(db, "p/0/1", receivers, handed, &held, 1, &passed) == DB_ONE_RESULT &&
              passed == (int64_t)handed - 1,
          "passed on %lld of %zu, all but the held one", (long long)passed, handed);
    CHECK(count("SELECT count(*) FROM outbox WHERE id = $1 AND lease_owner = 'p/0/1'", held) == 1,
          "the held row stays its owner's");
    CHECK(claim_rows(db, "p/1/1", NULL, 0, NULL, 0, it, 8, &n) == DB_ONE_RESULT &&
              n == handed - 1 && n > 0 && !it[0].given && it[0].attempts == 0,
          "another worker's lease takes them: %zu", n);
    items_fini(it, n);
    CHECK(db_outbox_owner_leave(db, "p/0/1") == DB_ONE_RESULT &&
              db_outbox_owner_leave(db, "p/1/1") == DB_ONE_RESULT,
          "leave");
    meeting_fini(&m);
}

/* On a direct connection a lease names its backend (migrations/015): only that connection
 * renews it, and once it is closed the owner's rows are orphans, long before the lease would
 * lapse: a killed replica's rows wait for the next look, not for the lease. */
static void
test_owner_backend(const char *url, struct db *db)
{
    struct meeting m[2];
    struct reminder_key k[2];
    struct db_fire_result res = {0};
    struct db_outbox_item it[8];
    size_t n = 0;

    empty_backlog();
    struct db *other = open_db(url);
    CHECK(other != NULL && db_outbox_owner_register(other, "k/0/1", 60000) == DB_ONE_RESULT &&
              db_outbox_owner_register(db, "k/1/1", 60000) == DB_ONE_RESULT,
          "owners on two connections");
    CHECK(db_outbox_owner_renew(db, "k/0/1", 60000) == DB_NO_RESULTS,
          "a lease is renewed only by the connection that took it");
    CHECK(db_outbox_owner_renew(other, "k/0/1", 60000) == DB_ONE_RESULT, "its own connection");
    for (int i = 0; i < 2; i++)
        meeting_due(db, &m[i], timefmt_now_ms() + 5 * FIXTURE_MIN_MS - i, 5, &k[i]);
    CHECK(db_fire_batch(db, k, 2, GRACE_MS, false, "k/0/1", 0, &res) == DB_ONE_RESULT &&
              res.n_outbox >= 2,
          "fired for k/0/1: %zu outbox rows", res.n_outbox);
    size_t fired = res.n_outbox;
    db_fire_result_fini(&res);
    CHECK(claim_rows(db, "k/1/1", NULL, 0, NULL, 0, it, 8, &n) == DB_ONE_RESULT && n == 0,
          "a live owner's rows stay its own: %zu taken", n);
    CHECK(fixture_sql("SELECT count(*) FROM delivery_owners WHERE owner = 'k/0/1'"
                      " AND backend_pid IS NOT NULL AND backend_start IS NOT NULL",
                      NULL, NULL, NULL) == 1,
          "the lease names its backend");
    db_close(other);
    CHECK(fixture_sql_reaches_zero("SELECT count(*) FROM pg_stat_activity a JOIN delivery_owners d"
                                   " ON a.pid = d.backend_pid WHERE d.owner = $1",
                                   "k/0/1"),
          "the closed connection's backend did not exit");
    CHECK(fixture_sql("SELECT count(*) FROM delivery_owners WHERE owner = 'k/0/1'"
                      " AND lease_until > now() + interval '30 seconds'",
                      NULL, NULL, NULL) == 1,
          "its lease has most of a minute to run");
    CHECK(claim_rows(db, "k/1/1", NULL, 0, NULL, 0, it, 8, &n) == DB_ONE_RESULT &&
              n == (fired < 8 ? fired : 8),
          "its rows are orphans once its backend is gone: %zu of %zu taken", n, fired);
    items_fini(it, n);
    for (int i = 0; i < 2; i++)
        meeting_fini(&m[i]);
}

/* A webhook row whose webhook row is missing (no foreign key since migration 012) comes back gone:
 * recorded failed, never sent to a URL it does not have. */
static void
test_missing_webhook(struct db *db)
{
    struct db_outbox_item it[2];
    size_t n = 0;

    empty_backlog();
    CHECK(fixture_sql("INSERT INTO outbox (tenant_id, meeting_id, reminder_id, fire_at, channel,"
                      " target, receiver, webhook_id) SELECT tenant_id, meeting_id, reminder_id,"
                      " fire_at + interval '1 millisecond', 'webhook', 'x', 'x', gen_random_uuid()"
                      " FROM outbox LIMIT 1",
                      NULL, NULL, NULL) == 1,
          "a row of a missing webhook");
    CHECK(db_outbox_owner_register(db, "m/0/1", 60000) == DB_ONE_RESULT, "owner");
    CHECK(claim_rows(db, "m/0/1", NULL, 0, NULL, 0, it, 2, &n) == DB_ONE_RESULT && n == 1 &&
              it[0].target_gone,
          "taken as gone: %zu", n);
    items_fini(it, n);
}

/* A meeting due now with one reminder, fired: its outbox rows are pending. */
static void
meeting_fired(struct db *db, struct meeting *m, struct reminder_key *k)
{
    struct db_fire_result res = {0};

    meeting_due(db, m, timefmt_now_ms() + 5 * FIXTURE_MIN_MS, 5, k);
    CHECK(db_fire_batch(db, k, 1, GRACE_MS, false, NULL, 0, &res) == DB_ONE_RESULT &&
              res.n_outbox >= 1,
          "fire: %zu outbox rows", res.n_outbox);
    db_fire_result_fini(&res);
}

/* A reminder removed from its meeting takes its outbox rows along (migrations/013: no key
 * cascades it any more). */
static void
test_removed_reminder(struct db *db)
{
    struct meeting m;
    struct reminder_key k;
    struct reminder_keys gone = {0};

    meeting_fired(db, &m, &k);
    m.n_reminders = 0;
    CHECK(db_meeting_update(db, tenant, &m, &gone) == DB_ONE_RESULT, "update: %s", db_errmsg(db));
    CHECK(count("SELECT count(*) FROM outbox WHERE reminder_id = $1", k.reminder_id) == 0,
          "the removed reminder's outbox rows must go with it");
    meeting_fini(&m);
}

/* A deleted meeting's reminders that fired and wait for a delivery (a retry) are recorded
 * failed: none is sent later. */
static void
test_renew_margin(struct db *db)
{
    /* A lease with less than the margin left is as good as lapsed: the renewal says so. */
    CHECK(db_outbox_owner_register(db, "margin/0", DB_OUTBOX_RENEW_MARGIN_MS / 2) ==
                  DB_ONE_RESULT &&
              db_outbox_owner_renew(db, "margin/0", 60000) == DB_NO_RESULTS,
          "a lease about to lapse was renewed");
    CHECK(db_outbox_owner_register(db, "margin/1", 60000) == DB_ONE_RESULT &&
              db_outbox_owner_renew(db, "margin/1", 60000) == DB_ONE_RESULT,
          "a live lease was not renewed: %s", db_errmsg(db));
}

static void
test_deleted_meeting(struct db *db)
{
    struct meeting m;
    struct reminder_key k;
    struct reminder_keys gone = {0};

    meeting_fired(db, &m, &k);
    CHECK(count("UPDATE outbox SET attempts = 1, payload = '{}', lease_owner = NULL,"
                " next_attempt_at = now() + interval '1 minute'"
                " WHERE reminder_id = $1 AND status = 'pending'",
                k.reminder_id) >= 1,
          "a retry waiting");
    CHECK(db_meeting_delete(db, tenant, m.id, &gone) == DB_ONE_RESULT, "delete: %s", db_errmsg(db));
    CHECK(count("SELECT count(*) FROM outbox WHERE reminder_id = $1 AND status = 'pending'",
                k.reminder_id) == 0 &&
              count("SELECT count(*) FROM outbox WHERE reminder_id = $1 AND status = 'failed'"
                    " AND last_error = 'the meeting was deleted'",
                    k.reminder_id) >= 1,
          "the waiting delivery must be recorded failed");
    meeting_fini(&m);
}

static void
run(const char *url)
{
    char err[DB_ERR_MAX];
    struct db *a = open_db(url), *b = open_db(url);

    if (a == NULL || b == NULL || db_migrate(a, err, sizeof err) != 0) {
        CHECK(0, "set-up: %s", a ? err : "no connection");
        goto out;
    }
    CHECK(db_tenant_ensure(a, "fire", &tenant) == DB_ONE_RESULT, "tenant");
    char t[32];
    meeting_new_id(hook);
    CHECK(fixture_sql("INSERT INTO webhooks (id, tenant_id, url, secret) VALUES ($1, $2, "
                      "'http://127.0.0.1:9/', 'whsec_dGVzdA==')",
                      hook, fixture_i64(t, tenant), NULL) == 1,
          "webhook");
    test_fire_rules(a);
    test_channels(a);
    test_concurrent_fire(a, b);
    test_outbox(a);
    test_orphans(a);
    test_owners(a);
    test_owner_backend(url, a);
    test_handover(a);
    test_pass_on(a);
    test_missing_webhook(a);
    test_removed_reminder(a);
    test_deleted_meeting(a);
    test_renew_margin(a);
out:
    db_close(a);
    db_close(b);
}

int
main(void)
{
    return fixture_main("itest_fire", run);
}
