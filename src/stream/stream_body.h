/* stream_body.h -- the body of each stream event, built from its meeting as it is now, in the
 * same shape as the webhook's (codec_notification_encode), for the stream hub and the inbox. */
#ifndef TOCSIN_STREAM_BODY_H
#define TOCSIN_STREAM_BODY_H

#include <stddef.h>

#include "db.h"
#include "db_stream.h"

/* Fills bodies[0..n): malloc'ed JSON text per event, or NULL when its meeting was deleted since
 * it fired (nobody is reminded of a deleted meeting). The meetings come in one round trip per
 * DB_GET_MANY_MAX events. DB_ONE_RESULT, or an error status with every bodies[i] NULL. */
enum db_status stream_bodies(struct db *db, const struct db_stream_event *ev, size_t n,
                             char **bodies);

#endif
