/* mirror_stream.h -- the live stream's wake-up between replicas over Redis pub/sub: after a fire
 * statement commits, the firing replica publishes "<tenant_id>:<seq>" per tenant on the channel
 * "<prefix>:stream"; every replica's expiry listener is subscribed to it and wakes its stream hub.
 * A lost message costs at most the hub's catch-up poll, never an event: the events themselves are
 * in PostgreSQL. */
#ifndef TOCSIN_MIRROR_STREAM_H
#define TOCSIN_MIRROR_STREAM_H

#include <stddef.h>

#include "meeting.h"
#include "mirror.h"

#define MIRROR_STREAM_CHANNEL_MAX (MIRROR_PREFIX_MAX + 8)
#define MIRROR_STREAM_MESSAGE_MAX 48 /* two decimal int64, a ':' and a NUL */

/* "<prefix>:stream" into buf; returns its length, or 0 when it does not fit. */
size_t mirror_stream_channel(char *buf, size_t buflen, const char *prefix);
/* Parses a wake-up message "<tenant_id>:<seq>" (decimal, both >= 0, nothing else). 0 or -1. */
int mirror_stream_parse(const char *msg, size_t len, struct stream_head *out);
/* PUBLISHes one wake-up per head (pipelined) on mi's connection. 0, or -1 when Redis is away
 * (the hubs' catch-up poll covers it). */
int mirror_stream_publish(struct mirror *mi, const struct stream_head *h, size_t n);

#endif
