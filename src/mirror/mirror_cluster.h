/* mirror_cluster.h -- mirror_arm_count, mirror_disarm and mirror_claim for a struct mirror on
 * Redis Cluster (mirror.c and mirror_claim.c call these when it is one). Same contracts as
 * theirs; a command that got no reply (its master down, too many redirects) fails the call. */
#ifndef TOCSIN_MIRROR_CLUSTER_H
#define TOCSIN_MIRROR_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mirror.h"

int mirror_cluster_arm(struct mirror *mi, const struct reminder_key *keys, size_t n, int64_t now_ms,
                       int64_t horizon_ms, int only_missing, size_t *n_set);
int mirror_cluster_disarm(struct mirror *mi, const struct reminder_key *keys, size_t n);
int mirror_cluster_claim(struct mirror *mi, const struct reminder_key *keys, size_t n,
                         const char *instance_id, int64_t ttl_ms, unsigned char *won);

#endif
