/* db_meeting_batch.c -- the batch insert of POST /v1/meetings/batch and tocsin import: up to
 * DB_MEETING_BATCH_MAX single meetings and their reminders in one statement, each column a
 * PostgreSQL array (db_array.c) that unnest() turns back into rows. The meetings travel with
 * their ordinal, which the result rows carry back so each reminder id finds its meeting without
 * a search. Series are written one by one through series_sync.c by the caller. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_internal.h"
#include "panic.h"
#include "strbuf.h"

/* clang-format off */
static const char batch_sql[] =
    "WITH s AS (SELECT * FROM unnest($2::uuid[], $3::text[], $4::text[], $5::bigint[],"
    "                                $6::bigint[], $7::text[], $8::text[], $9::text[], $10::text[],"
    "                                $11::bigint[], $12::text[])"
    "           WITH ORDINALITY AS s(id, ti, de, sa, ea, tz, lo, pa, md, ca, og, ord)),"
    " m AS (INSERT INTO meetings (id, tenant_id, title, description, starts_at, ends_at, time_zone,"
    "                             location, participants, metadata, version, created_at,"
    "                             updated_at, organizer_id)"
    "       SELECT id, $1::bigint, ti, de, " DB_TS("sa") ", " DB_TS("ea") ", tz, lo, pa::json,"
    "              md::json, 1, " DB_TS("ca") ", " DB_TS("ca") ", og FROM s ORDER BY ord"
    "       RETURNING id),"
    " r AS (INSERT INTO reminders (meeting_id, tenant_id, minutes_before, fire_at, status,"
    "                              fired_at, channels)"
    "       SELECT s.id, $1::bigint, r.mb, " DB_TS("r.fa") ", r.st, " DB_TS("nullif(r.fd, 0)") ","
    "              r.ch"
    "       FROM unnest($13::bigint[], $14::int[], $15::bigint[], $16::text[], $17::bigint[],"
    "                   $18::smallint[]) AS r(o, mb, fa, st, fd, ch) JOIN s ON s.ord = r.o"
    "       RETURNING id, meeting_id, minutes_before)"
    " SELECT r.id, s.ord, r.minutes_before FROM r JOIN s ON s.id = r.meeting_id";
/* clang-format on */

enum {
    A_ID,
    A_TITLE,
    A_DESC,
    A_STARTS,
    A_ENDS,
    A_TZ,
    A_LOC,
    A_PART,
    A_META,
    A_CREATED,
    A_ORG,
    R_ORD,
    R_MINUTES,
    R_FIRE,
    R_STATUS,
    R_FIRED,
    R_CHANNELS,
    A_COUNT
};

static void
add_i64(struct strbuf *b, int64_t v)
{
    db_array_add(b, "%lld", (long long)v);
}

static void
add_meeting(struct strbuf *a, size_t ord, const struct meeting *m)
{
    db_array_add(&a[A_ID], "%s", m->id);
    db_array_text(&a[A_TITLE], m->title);
    db_array_text(&a[A_DESC], m->description);
    add_i64(&a[A_STARTS], m->starts_at_ms);
    if (m->has_ends_at)
        add_i64(&a[A_ENDS], m->ends_at_ms);
    else
        db_array_text(&a[A_ENDS], NULL);
    db_array_text(&a[A_TZ], m->time_zone);
    db_array_text(&a[A_LOC], m->location);
    db_array_text(&a[A_PART], m->participants_json ? m->participants_json : "[]");
    db_array_text(&a[A_META], m->metadata_json);
    add_i64(&a[A_CREATED], m->created_at_ms);
    db_array_text(&a[A_ORG], m->organizer_id);
    for (size_t i = 0; i < m->n_reminders; i++) {
        const struct reminder *r = &m->reminders[i];
        add_i64(&a[R_ORD], (int64_t)ord);
        add_i64(&a[R_MINUTES], r->minutes_before);
        add_i64(&a[R_FIRE], r->fire_at_ms);
        db_array_text(&a[R_STATUS], meeting_reminder_status_name(r->status));
        add_i64(&a[R_FIRED], r->fired_at_ms);
        add_i64(&a[R_CHANNELS], r->channels != 0 ? r->channels : CHANNELS_DEFAULT);
    }
}

static void
set_reminder_id(struct meeting *m, int minutes_before, int64_t id)
{
    for (size_t i = 0; i < m->n_reminders; i++)
        if (m->reminders[i].minutes_before == minutes_before)
            m->reminders[i].id = id;
}

enum db_status
db_meeting_insert_batch(struct db *db, int64_t tenant_id, struct meeting *const *ms, size_t n)
{
    struct strbuf a[A_COUNT] = {0};
    const char *v[A_COUNT + 1];
    char tenant[DB_I64_BUF];
    enum db_status st = DB_HARD_ERROR;
    PGresult *res = NULL;

    TOCSIN_ASSERT(n <= DB_MEETING_BATCH_MAX);
    for (size_t i = 0; i < n; i++) {
        TOCSIN_ASSERT(ms[i]->recurrence == NULL); /* a series is series_sync.c's */
        ms[i]->version = 1;
        add_meeting(a, i + 1, ms[i]);
    }
    v[0] = db_i64(tenant, tenant_id);
    for (int i = 0; i < A_COUNT; i++)
        if ((v[i + 1] = db_array_end(&a[i])) == NULL) {
            st = db_oom(db, "a batch of meetings");
            goto done;
        }
    if ((st = db_exec(db, STMT_MEETING_INSERT_BATCH, batch_sql, A_COUNT + 1, v, &res)) !=
        DB_ONE_RESULT)
        goto done;
    for (int row = 0; row < PQntuples(res); row++) {
        int64_t ord = db_get_i64(res, row, 1);
        if (ord >= 1 && (size_t)ord <= n)
            set_reminder_id(ms[ord - 1], (int)db_get_i64(res, row, 2), db_get_i64(res, row, 0));
    }
    PQclear(res);
done:
    for (int i = 0; i < A_COUNT; i++)
        strbuf_fini(&a[i]);
    return st;
}
