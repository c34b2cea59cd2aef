/* stream_body.h -- the body of each stream event, for the stream hub and the inbox: a reminder's
 * built from its meeting as it is now, in the same shape as the webhook's
 * (codec_notification_encode), with who may read it: the event's audience as the meeting lists it
 * now; an inbox change's as it was stored. */
#ifndef TOCSIN_STREAM_BODY_H
#define TOCSIN_STREAM_BODY_H

#include <stddef.h>

#include "db.h"
#include "db_stream.h"

/* Fills bodies[0..n): malloc'ed JSON text per event, or NULL when its meeting was deleted since
 * it fired (nobody is reminded of a deleted meeting) or lists none of its audience any more. Each
 * ev[i].audience_json is narrowed to the ids the meeting lists now, organizer or participant,
 * read in the same statement as the body: the body, built from the meeting as it is now, goes
 * only to those it lists now, so a participant removed after the fire reads nothing written
 * since (not even in the moment between the fire and the read). The meetings come in one round
 * trip per DB_GET_MANY_MAX events. An inbox change (DB_STREAM_INBOX) gets the body it stored,
 * its audience (the one participant who made it) as it is. DB_ONE_RESULT, or an error status
 * with every bodies[i] NULL. */
enum db_status stream_bodies(struct db *db, struct db_stream_event *ev, size_t n, char **bodies);

#endif
