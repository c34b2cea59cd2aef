/* hub_db.c -- the hub thread's database connection (hub_internal.h): connected lazily, held off
 * for DB_RECONNECT_WAIT_MS after a failure, an outage logged once when it starts and once when it
 * ends; and the three reads the hub makes (a tenant's events with their bodies, its purge mark, the
 * heads of tenants). Only the hub thread calls these, without h->mu: a read may take seconds,
 * and no other thread waits for it. */
#include "hub_internal.h"

#include <stdlib.h>

#include "db.h"
#include "log.h"
#include "panic.h"
#include "stream_body.h"
#include "timefmt.h"

/* Notes whether the last database call worked: one line when an outage starts (with why), one
 * when it ends, nothing in between. A failure also holds off the next call for DB_RECONNECT_WAIT_MS
 * (connection): a connect, or a statement on a connection that broke, may block for seconds. */
static void
note(struct hub *h, bool ok, const char *why)
{
    if (!ok && !h->db_down)
        LOG_WARN("stream hub: database unavailable, retrying: %s", why);
    else if (ok && h->db_down)
        LOG_INFO("stream hub: database available again");
    h->db_down = !ok;
    if (!ok)
        h->db_retry_ms = timefmt_mono_ms() + DB_RECONNECT_WAIT_MS;
}

/* The thread's connection, or NULL (nothing tried) while a failure holds calls off. */
static struct db *
connection(struct hub *h)
{
    char err[DB_ERR_MAX];

    TOCSIN_ASSERT(h->hub_thread_self == hub_lock_self()); /* the connection is the hub thread's */
    if (timefmt_mono_ms() < h->db_retry_ms)
        return NULL;
    if (h->db != NULL)
        return h->db;
    if ((h->db = db_open(h->database_url, err, sizeof err)) == NULL)
        note(h, false, err);
    return h->db;
}

int64_t
hub_db_purged(struct hub *h, int64_t tenant_id)
{
    struct db_stream_head hd;
    struct db *db = connection(h);

    if (db == NULL)
        return -1;
    bool ok = db_stream_heads(db, &tenant_id, 1, &hd) == DB_ONE_RESULT;
    note(h, ok, db_errmsg(db)); /* a failure holds off the next call, as every other's */
    return ok ? hd.purged_through : -1;
}

/* Moves ev[0..n) and their bodies (stolen) into out; the count, or -1 (out of memory) with
 * nothing left in out. */
static long
fill(struct hub_event *out, const struct db_stream_event *ev, char **bodies, size_t n)
{
    long got = 0;

    for (size_t i = 0; i < n; i++) {
        if (got >= 0 && hub_event_fill(&out[got], &ev[i], bodies[i]) == 0)
            got++;
        else if (got >= 0) {
            for (long j = 0; j < got; j++)
                hub_event_clear(&out[j]);
            got = -1;
        } else {
            free(bodies[i]);
        }
    }
    return got;
}

long
hub_db_events(struct hub *h, int64_t tenant_id, int64_t after, int64_t until,
              const struct db_stream_reader *who, size_t max, struct hub_event *out)
{
    struct db_stream_event ev[DB_STREAM_EVENTS_MAX];
    char *bodies[DB_STREAM_EVENTS_MAX];
    struct db *db = connection(h);
    size_t n = 0;
    long got = -1;

    if (db == NULL)
        return -1;
    enum db_status st = db_stream_events(db, tenant_id, after, until, who, max, ev, &n);
    bool cut = st == DB_ONE_RESULT && who != NULL && n == max;
    if (st == DB_ONE_RESULT && !cut)
        st = stream_bodies(db, ev, n, bodies);
    if (st == DB_ONE_RESULT)
        got = cut ? (long)max : fill(out, ev, bodies, n);
    for (size_t i = 0; i < n; i++)
        db_stream_event_fini(&ev[i]);
    note(h, got >= 0, st == DB_ONE_RESULT ? "out of memory" : db_errmsg(db));
    return got;
}

bool
hub_db_heads(struct hub *h, const int64_t *ids, size_t n, struct db_stream_head *hd)
{
    struct db *db = connection(h);
    enum db_status st = db ? db_stream_heads(db, ids, n, hd) : DB_SOFT_ERROR;

    if (db != NULL)
        note(h, st == DB_ONE_RESULT, db_errmsg(db));
    return st == DB_ONE_RESULT;
}

void
hub_db_close(struct hub *h)
{
    db_close(h->db);
    h->db = NULL;
}

bool
hub_db_keys_live(struct hub *h, struct hub_kid *kids, size_t n)
{
    const char *ids[HUB_REVOKE_BATCH];
    bool live[HUB_REVOKE_BATCH];
    struct db *db = connection(h);

    TOCSIN_ASSERT(n <= HUB_REVOKE_BATCH);
    if (db == NULL)
        return false;
    for (size_t i = 0; i < n; i++)
        ids[i] = kids[i].id;
    enum db_status st = db_signing_key_live(db, ids, n, live);
    note(h, st == DB_ONE_RESULT, db_errmsg(db));
    for (size_t i = 0; i < n && st == DB_ONE_RESULT; i++)
        kids[i].live = live[i];
    return st == DB_ONE_RESULT;
}
