/* db_prefs.h -- participants' preferences (migrations/028), read and replaced per (tenant,
 * participant). The fire statement (db_fire.c) reads them itself; a put re-plans the
 * participant's own reminders (db_own.h). Implemented in db_prefs.c. */
#ifndef TOCSIN_DB_PREFS_H
#define TOCSIN_DB_PREFS_H

#include <stdbool.h>
#include <stdint.h>

#include "db.h"
#include "db_series.h"
#include "prefs.h"

/* What a put found wrong (nothing is written then). */
enum db_prefs_refusal {
    DB_PREFS_OK,
    DB_PREFS_UNKNOWN_PARTICIPANT, /* must_exist and not known to the tenant */
    DB_PREFS_UNKNOWN_ZONE         /* the database has no such zone */
};

/* The participant's preferences into *out (their defaults when they set none). With must_exist,
 * a participant the tenant does not know (no preferences and in no live meeting of the tenant)
 * is NO_RESULTS. ONE_RESULT or the error. */
enum db_status db_prefs_get(struct db *db, int64_t tenant_id, const char *participant,
                            bool must_exist, struct prefs *out);
/* Replaces the participant's preferences with *p, unless *refused says why not (must_exist as
 * for db_prefs_get), and re-plans their own reminders in the same transaction (db_own.h: the
 * keys to disarm into gone, to arm into fresh, both reset first). ONE_RESULT (*refused set) or
 * the error. */
enum db_status db_prefs_put(struct db *db, int64_t tenant_id, const char *participant,
                            bool must_exist, const struct prefs *p, enum db_prefs_refusal *refused,
                            struct db_series_keys *gone, struct db_series_keys *fresh);
/* Turns the participant's email off and keeps the rest of their preferences (a one-click
 * unsubscribe: handlers/unsubscribe.c); idempotent. The participant need not be known: the
 * signed link names whom tocsin wrote to. NO_RESULTS when the tenant no longer exists;
 * ONE_RESULT or the error. */
enum db_status db_prefs_email_off(struct db *db, int64_t tenant_id, const char *participant);

#endif
