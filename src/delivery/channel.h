/* channel.h -- what each delivery channel sends and how its answers are read, for deliver.c:
 * a webhook is a Standard Webhooks POST, an email an SMTP message (mail.h), a push an encrypted
 * POST to the subscription's push service (webpush.h). The payload is built once, at the first
 * attempt, and kept in the outbox so every retry sends the same content. */
#ifndef TOCSIN_CHANNEL_H
#define TOCSIN_CHANNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db_outbox.h"
#include "meeting.h"
#include "netguard.h"
#include "outbound.h"
#include "push_keys.h"
#include "webhook.h"
#include "webpush.h"

#define CHANNEL_PUSH_TTL_MAX_S 2419200 /* 28 days: what push services keep at most */

/* The settings the channels need (borrowed from the configuration). */
struct channel_opts {
    int64_t timeout_ms;
    const struct netguard_allow *webhook_allow; /* private webhook targets allowed (netguard.h) */
    const char *smtp_url, *smtp_from, *smtp_username, *smtp_password;
    bool smtp_require_tls;
    const char *vapid_subject;
    bool push_allow_private; /* push endpoints may be private addresses (tests) */
    int64_t missed_grace_ms; /* a push is kept until the meeting's start plus this */
    /* One-click unsubscribe: each email's link is public_url + CHANNEL_UNSUBSCRIBE_PATH + a token
     * signed with unsub_secret (unsub.h). Either NULL or "": emails carry no link. */
    const char *public_url, *unsub_secret;
};

/* The endpoint of the links (handlers/unsubscribe.c), the token its one query parameter. */
#define CHANNEL_UNSUBSCRIBE_PATH "/v1/unsubscribe?t="

/* Per-request storage a started request borrows until its answer. */
struct channel_req {
    char msg_id[OCCURRENCE_ID_MAX];       /* the webhook-id: the same for every retry */
    char sig[WEBHOOK_SIGNATURES_LEN + 1]; /* one signature, or two during a rotation */
    struct webhook_request_buf hdr;
    /* push: the caller writes the Authorization header line (push_keys.h) before starting */
    char authorization[PUSH_AUTHORIZATION_HEADER_MAX + 1];
    char ttl[32];
    char topic[sizeof "Topic: " + WEBPUSH_TOPIC_LEN];
    uint8_t body[WEBPUSH_BODY_MAX];
};

/* What an answer means for its row. */
enum channel_verdict {
    CHANNEL_DELIVERED,
    CHANNEL_RETRY,   /* a failed attempt: retried with backoff until the last attempt */
    CHANNEL_GIVE_UP, /* failed for good now: the request itself can never succeed */
    CHANNEL_GONE,    /* the target is gone (a push subscription the service expired): failed
                        for good, and the target is removed */
};

/* The row's payload, built from its meeting as it is now: the webhook body, the push message or
 * the email. people is m's (codec_people_parse), asked whether the row's participant is still in
 * the meeting; a webhook row does not look (NULL will do). Malloc'ed text, or NULL with a reason
 * in *why (static text) when the row must give up (its participant left the meeting, an address
 * unusable in a header) or out of memory. */
struct codec_people;
char *channel_payload(const struct channel_opts *o, const struct db_outbox_item *it,
                      const struct meeting *m, const struct codec_people *people, int64_t now_ms,
                      const char **why);
/* Starts the row's request on out, tagged tag. 0, or -1 with the reason in err (the attempt
 * failed; *give_up tells whether it can never work). */
int channel_start(const struct channel_opts *o, struct outbound *out,
                  const struct db_outbox_item *it, struct channel_req *req, void *tag,
                  char err[OUTBOUND_ERR_MAX], bool *give_up);
/* The origin of a push row's endpoint into out (the VAPID JWT's audience): 0, or -1. */
int channel_push_audience(const struct db_outbox_item *it, char out[WEBPUSH_ORIGIN_MAX + 1]);
/* What the answer d to a request of the channel means. */
enum channel_verdict channel_verdict(unsigned channel, const struct outbound_done *d);
/* Rewrites d->err, the reason a failed answer is recorded with, where its bare status would
 * leave the reader guessing: a push service's redirect (3xx) is recorded as push_redirected. */
void channel_explain(unsigned channel, struct outbound_done *d);
/* Whether a failed answer says the receiver itself is in trouble, which counts toward its
 * circuit (deliver.c): no answer at all; over HTTP a 429 or a 5xx; over SMTP a 4xx reply (RFC
 * 5321's transient ones: 421 closing, 451 local error) or an authentication refusal (53x). Any
 * other answer, a refusal of one request included, shows a receiver that works. */
bool channel_receiver_trouble(unsigned channel, const struct outbound_done *d);

#endif
