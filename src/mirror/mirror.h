/* mirror.h -- the Redis mirror of pending reminders (hiredis lives only in mirror*.c,
 * redis_conn.c and expiry.c). One key per pending occurrence:
 * "<prefix>:rem:<reminder_id>:<fire_at_ms>", empty value, PXAT fire_at_ms. This is the only code
 * that writes reminder keys. A struct mirror belongs to one thread. Redis being down never blocks a
 * caller for long: connects and commands time out (after MIRROR_CONNECT_TIMEOUT_MS and
 * MIRROR_COMMAND_TIMEOUT_MS, or the one timeout of the options) and a failed connect is not retried
 * for MIRROR_RECONNECT_BACKOFF_MS. A connection that got a READONLY reply (its node is a replica
 * now), or that was made to a master Sentinel has since replaced (sentinel.h), is dropped before
 * the next command and made again to the current master. With Redis Cluster (n_seeds > 0) every
 * occurrence key carries its shard as a hash tag, "<prefix>:{s<shard>}:rem:<id>:<ms>", so a
 * reminder's key, its claim and its shard's other keys share a slot and a master; commands are
 * pipelined per master (cluster.h), and the checks that concern Redis as a whole (PING, the loss
 * marker, run_id) ask every master. */
#ifndef TOCSIN_MIRROR_H
#define TOCSIN_MIRROR_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "meeting.h"
#include "redis_url.h"

#define MIRROR_PREFIX_MAX 64
/* "<prefix>:{s<shard>}:claim:<id>:<ms>" with both numbers at 19 digits and the NUL */
#define MIRROR_KEY_MAX (MIRROR_PREFIX_MAX + 64)
#define MIRROR_CONNECT_TIMEOUT_MS 500
#define MIRROR_COMMAND_TIMEOUT_MS 1000
/* For the HTTP threads: a Redis that hangs (stopped, swapping, a dead link without RST) costs a
 * request at most this, once per MIRROR_RECONNECT_BACKOFF_MS on each thread (every thread has its
 * own connection); a healthy one answers in well under a millisecond. */
#define MIRROR_API_TIMEOUT_MS 200
#define MIRROR_RECONNECT_BACKOFF_MS 1000
#define MIRROR_RUN_ID_MAX 64

struct mirror_opts {
    const char *host;
    int port;
    int db;
    const char *password; /* NULL = no AUTH */
    const char *prefix;   /* at most MIRROR_PREFIX_MAX bytes */
    int64_t horizon_ms;   /* only occurrences due within now + horizon_ms are armed */
    const char *user;     /* NULL = AUTH with the password alone (Redis's default user) */
    int timeout_ms;       /* connect and command timeout; 0 = the MIRROR_*_TIMEOUT_MS defaults */
    int tls;              /* rediss://: TLS with the server's certificate and name verified */
    const char *tls_ca;   /* CA file; NULL = the system's CA directory */
    const char *tls_cert; /* client certificate chain; NULL = none */
    const char *tls_key;  /* its key; NULL = in tls_cert */
    /* redis-sentinel://: host and port are unused, the master's address is asked of these
     * Sentinels before every connect (sentinel.h) and ROLE must say master. n_sentinels 0 =
     * connect to host:port. */
    const struct redis_url_addr *sentinels;
    size_t n_sentinels;
    const char *master;            /* the master name */
    const char *sentinel_user;     /* NULL = the Sentinels' default user */
    const char *sentinel_password; /* NULL = no AUTH on the Sentinels */
    /* redis-cluster://: host and port are unused; the slot map is asked of these seeds and every
     * key is routed to its master (cluster.h). n_seeds 0 = no Cluster. */
    const struct redis_url_addr *seeds;
    size_t n_seeds;
};

/* The Redis settings of cfg (borrowed: cfg must outlive the options) with the given timeout
 * (0 = defaults). */
struct mirror_opts mirror_opts_of(const struct config *cfg, int timeout_ms);

struct mirror;

/* Creates a mirror; connects lazily (a Redis that is down now is not an error here). The opts
 * strings are copied. Free with mirror_free. */
struct mirror *mirror_new(const struct mirror_opts *opts);
void mirror_free(struct mirror *mi);

/* Writes the key name of one occurrence into buf (MIRROR_KEY_MAX bytes); returns its length, or 0
 * when it does not fit in buflen. */
size_t mirror_key_format(char *buf, size_t buflen, const char *prefix, int64_t reminder_id,
                         int64_t fire_at_ms);
/* Parses a key name back, with or without the Cluster form's shard tag (which must then be the
 * reminder's shard); 0 on success, -1 if it is not one of ours (other prefix, bad digits). */
int mirror_key_parse(const char *key, size_t len, const char *prefix, int64_t *reminder_id,
                     int64_t *fire_at_ms);

/* SET key "" PXAT fire_at (pipelined) for each key with now_ms < fire_at <= now_ms + horizon.
 * With only_missing, uses NX so an existing key is left alone (the repair path). Returns 0 when
 * every command succeeded, -1 otherwise (Redis down, timeout). */
int mirror_arm(struct mirror *mi, const struct reminder_key *keys, size_t n, int64_t now_ms,
               int only_missing);
/* mirror_arm that also adds to *n_set the number of keys it actually wrote (with only_missing,
 * those that were missing). recon.c uses it to report how much Redis had lost. */
int mirror_arm_count(struct mirror *mi, const struct reminder_key *keys, size_t n, int64_t now_ms,
                     int only_missing, size_t *n_set);
/* DEL of each key (pipelined), every chunk sent even after an error reply in an earlier one.
 * Returns 0 when every command succeeded, -1 otherwise (Redis down, an error reply). */
int mirror_disarm(struct mirror *mi, const struct reminder_key *keys, size_t n);
/* The same DELs, sent without waiting for their replies: those are read, and whatever they say
 * ignored, before the connection's next command. 0 when all were sent, -1 when Redis is down.
 * For a caller whose next command can wait for them (dispatch's next claim) but who should not
 * wait now. */
int mirror_disarm_nowait(struct mirror *mi, const struct reminder_key *keys, size_t n);

/* PING. 0 when Redis answers. */
int mirror_ping(struct mirror *mi);
/* Makes sure notify-keyspace-events contains E and x, adding them with CONFIG SET when missing.
 * 0 when the setting is right afterwards; -1 with the reason in err (names the setting). */
int mirror_ensure_notify(struct mirror *mi, char *err, size_t errlen);
/* The end-to-end notify check of expiry.c: SET key "" PX ttl_ms, then EXISTS key, which makes
 * Redis expire a key past its TTL at once (and publish its expired event) instead of when its
 * sampler gets to it. 0 or -1 each. */
int mirror_probe_set(struct mirror *mi, const char *key, int64_t ttl_ms);
int mirror_probe_touch(struct mirror *mi, const char *key);
/* Sets owner's marker key "<prefix>:recon:marker:<owner>" with MIRROR_MARKER_TTL_MS to live, in
 * one command that says whether it existed (SET ... GET). Returns 1 when it was missing (Redis lost
 * data since the last call, or this is its first use), 0 when it was there, -1 on error. Used by
 * recon.c to notice FLUSHALL and restarts without persistence: a marker per replica, since the
 * first replica to recreate a shared one would hide the loss from the others. The TTL takes a
 * stopped replica's marker away (a live one refreshes it every check; one that could not for a day
 * repairs once). */
#define MIRROR_MARKER_TTL_MS 86400000
int mirror_marker_ensure(struct mirror *mi, const char *owner);
/* Redis INFO server run_id into out (MIRROR_RUN_ID_MAX + 1 bytes). 0 or -1. */
int mirror_run_id(struct mirror *mi, char out[MIRROR_RUN_ID_MAX + 1]);

#endif
