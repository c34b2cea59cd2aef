/* shard.h -- how replicas share the engine's work: every reminder belongs to one of SHARD_COUNT
 * shards (its id modulo SHARD_COUNT), and each shard to one live replica, chosen by rendezvous
 * hashing over the live replicas' instance ids: every replica computes the same owner from the
 * same member list, and when one joins or leaves only the shards it wins or held move. Pure. */
#ifndef TOCSIN_SHARD_H
#define TOCSIN_SHARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Fixed: the partial index reminders_pending_shard (migrations/006) is on (id % 256), and the
 * statements name it as SHARD_COUNT_SQL. Changing it means a new index and a new migration. */
#define SHARD_COUNT 256
#define SHARD_COUNT_SQL "256"
#define SHARD_SET_TEXT_MAX (SHARD_COUNT * 4 + 3) /* "{0,1,...,255}" */
#define SHARD_MEMBERS_MAX 1024                   /* replicas one assignment considers */

struct shard_set {
    uint64_t bits[SHARD_COUNT / 64];
};

static inline unsigned
shard_of(int64_t reminder_id)
{
    return (unsigned)((uint64_t)reminder_id % SHARD_COUNT);
}

void shard_set_clear(struct shard_set *s);
void shard_set_fill(struct shard_set *s);
void shard_set_add(struct shard_set *s, unsigned shard);
bool shard_set_has(const struct shard_set *s, unsigned shard);
size_t shard_set_count(const struct shard_set *s);
bool shard_set_equal(const struct shard_set *a, const struct shard_set *b);
/* The set as a PostgreSQL int[] literal into buf (SHARD_SET_TEXT_MAX bytes). */
const char *shard_set_text(const struct shard_set *s, char buf[SHARD_SET_TEXT_MAX]);
/* The shards self owns among members[0..n) (self included or not; an empty list means self
 * alone): each shard goes to the member with the highest hash of (member, shard). */
void shard_assign(const char *const *members, size_t n, const char *self, struct shard_set *out);

#endif
