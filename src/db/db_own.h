/* db_own.h -- a participant's own reminders (DESIGN section 13, migrations/029): the reminder
 * rows with a participant, planned from their preferences' offsets for each occurrence the
 * meeting reminds of, re-planned when the offsets, the meeting's participants or its times
 * change. Implemented in db_own.c; the fire statement (db_fire.c) fires them to that participant
 * alone. */
#ifndef TOCSIN_DB_OWN_H
#define TOCSIN_DB_OWN_H

#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "db_series.h"

/* Re-plans the own reminders of one participant in every live meeting of the tenant that lists
 * them, from the offsets their preferences hold now (none: their pending own rows go). Appends
 * to gone the keys of pending rows deleted or moved, to fresh those of rows pending now (to arm
 * after the commit). ONE_RESULT or the error. */
enum db_status db_own_plan_participant(struct db *db, int64_t tenant_id, const char *participant,
                                       struct db_series_keys *gone, struct db_series_keys *fresh);
/* The same for every participant of the n live meetings ids (participants removed from one lose
 * their own rows of it), after a write of their times, participants or occurrences. */
enum db_status db_own_plan_meetings(struct db *db, const char *const *ids, size_t n,
                                    struct db_series_keys *gone, struct db_series_keys *fresh);
/* db_own_plan_meetings of the one meeting id. */
enum db_status db_own_plan_meeting(struct db *db, const char *id, struct db_series_keys *gone,
                                   struct db_series_keys *fresh);

#endif
