/* mirror_claim.h -- the cross-replica claim on a reminder occurrence: SET
 * "<prefix>:claim:<reminder_id>:<fire_at_ms>" <instance> NX PX <ttl>. The first replica to set it
 * fires; the claim is never deleted, only expires, so a late duplicate on any replica loses, and a
 * crashed winner blocks repair for at most the TTL. Implemented in mirror_claim.c. */
#ifndef TOCSIN_MIRROR_CLAIM_H
#define TOCSIN_MIRROR_CLAIM_H

#include <stddef.h>
#include <stdint.h>

#include "mirror.h"

#define MIRROR_CLAIM_PIPELINE_MAX 512 /* SETs sent before their replies are read */

/* Writes the claim key of one occurrence into buf; returns its length, or 0 if it does not fit. */
size_t mirror_claim_key(char *buf, size_t buflen, const char *prefix, int64_t reminder_id,
                        int64_t fire_at_ms);
/* Claims k[0..n) for instance_id for ttl_ms (pipelined). won[i] becomes 1 when this call set the
 * key, 0 when it existed. Returns 0 when every reply came back; -1 when Redis is down, timed out or
 * answered an error, in which case won[] is unreliable and the caller decides without claims. */
int mirror_claim(struct mirror *mi, const struct reminder_key *k, size_t n, const char *instance_id,
                 int64_t ttl_ms, unsigned char *won);

#endif
