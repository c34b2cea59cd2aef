/* db_snooze.h -- a snooze of an inbox item (DESIGN section 13): the same reminder again, to the
 * reader alone, minutes from now, as a new occurrence. Implemented in db_snooze.c. */
#ifndef TOCSIN_DB_SNOOZE_H
#define TOCSIN_DB_SNOOZE_H

#include <stdbool.h>
#include <stdint.h>

#include "db.h"
#include "db_stream.h"

struct db_snooze {
    bool started;   /* refused: the meeting starts at or before the snooze would end */
    int64_t due_ms; /* when it comes again: the new occurrence's fire time */
    int64_t reminder_id;
    int64_t deliveries; /* push and email rows written (skipped ones included) */
};

/* Writes the reader's push and email rows of item seq's reminder (its channels, the reader's
 * preferences applied at the due time; email only when `email`), due `minutes` from now, unless
 * the meeting starts by then (out->started, nothing written). ONE_RESULT; NO_RESULTS when the
 * reader has no such item (or its reminder or meeting is gone); or the error. */
enum db_status db_snooze(struct db *db, int64_t tenant_id, const struct db_stream_reader *who,
                         int64_t seq, int minutes, bool email, struct db_snooze *out);

#endif
