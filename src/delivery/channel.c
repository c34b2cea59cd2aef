/* channel.c -- the channels of channel.h. */
#include "channel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "config.h"
#include "mail.h"
#include "timefmt.h"
#include "unsub.h"
#include "webhook_sign.h"

/* The occurrence id is the webhook-id that webhook_sign signs. */
_Static_assert(OCCURRENCE_ID_MAX <= WEBHOOK_ID_MAX, "an occurrence id fits a webhook-id");

_Static_assert(CONFIG_PUBLIC_URL_MAX + sizeof CHANNEL_UNSUBSCRIBE_PATH - 1 + UNSUB_TOKEN_MAX <=
                   MAIL_UNSUBSCRIBE_URL_MAX,
               "a link of the longest TOCSIN_PUBLIC_URL and token fits an email");

/* The row's participant's unsubscribe link into url, made now (the payload is kept, so a retry
 * sends the same one). NULL when links are off or the participant cannot be named in one. */
static const char *
unsubscribe_url(const struct channel_opts *o, const struct db_outbox_item *it, int64_t now_ms,
                char url[MAIL_UNSUBSCRIBE_URL_MAX + 1])
{
    struct unsub_subject s = {it->tenant_id, now_ms / 1000, ""};
    char token[UNSUB_TOKEN_MAX + 1];

    if (o->public_url == NULL || o->public_url[0] == '\0' || o->unsub_secret == NULL ||
        strlen(it->recipient) > UNSUB_PARTICIPANT_MAX)
        return NULL;
    strcpy(s.participant, it->recipient);
    if (unsub_token_make(o->unsub_secret, &s, token) == 0)
        return NULL;
    int n = snprintf(url, MAIL_UNSUBSCRIBE_URL_MAX + 1, "%s%s%s", o->public_url,
                     CHANNEL_UNSUBSCRIBE_PATH, token);
    return n > 0 && n <= MAIL_UNSUBSCRIBE_URL_MAX ? url : NULL;
}

static char *
email_payload(const struct channel_opts *o, const struct db_outbox_item *it,
              const struct meeting *m, const struct codec_people *people, int64_t now_ms,
              const char **why)
{
    const char *name = NULL;
    char url[MAIL_UNSUBSCRIBE_URL_MAX + 1];

    if (it->recipient == NULL || it->address == NULL ||
        !codec_people_participant(people, it->recipient, &name)) {
        *why = "the participant is no longer in the meeting";
        return NULL;
    }
    struct mail_input in = {m,
                            {it->reminder_id, it->fire_at_ms, 0},
                            it->recipient,
                            name,
                            it->address,
                            o->smtp_from,
                            now_ms,
                            unsubscribe_url(o, it, now_ms, url)};
    return mail_message(&in, why);
}

char *
channel_payload(const struct channel_opts *o, const struct db_outbox_item *it,
                const struct meeting *m, const struct codec_people *people, int64_t now_ms,
                const char **why)
{
    struct occurrence occ = {it->reminder_id, it->fire_at_ms, 0};
    char *text = NULL;

    *why = "out of memory building the payload";
    switch (it->channel) {
    case CHANNEL_WEBHOOK:
        text = codec_notification_encode(m, &occ, now_ms);
        break;
    case CHANNEL_PUSH:
        if (people == NULL)
            return NULL;
        if (!codec_people_has(people, it->recipient ? it->recipient : "")) {
            *why = "the participant is no longer in the meeting";
            return NULL;
        }
        text = codec_push_payload(m, &occ);
        break;
    case CHANNEL_EMAIL:
        if (people == NULL)
            return NULL;
        text = email_payload(o, it, m, people, now_ms, why);
        break;
    default:
        *why = "a channel this version does not deliver";
        break;
    }
    return text;
}

/* Signs the row's payload (with the previous secret too while a rotation's overlap lasts) and
 * lays out its request in req and r. NULL, or why it cannot be sent (no retry would help). */
static const char *
webhook_prepare(const struct channel_opts *o, const struct db_outbox_item *it,
                struct channel_req *req, struct outbound_request *r)
{
    int64_t ts = timefmt_now_ms() / 1000;
    struct webhook_message m = {it->url,  req->msg_id, ts,
                                req->sig, it->payload, strlen(it->payload)};

    meeting_occurrence_id(it->reminder_id, it->fire_at_ms, req->msg_id);
    if (webhook_sign(it->secret, req->msg_id, ts, m.body, m.body_len, req->sig) != 0)
        return "webhook secret unusable";
    if (it->secret_old != NULL && it->secret_old[0] != '\0') {
        char old[WEBHOOK_SIGNATURE_LEN + 1];
        if (webhook_sign(it->secret_old, req->msg_id, ts, m.body, m.body_len, old) != 0)
            return "webhook secret unusable";
        req->sig[WEBHOOK_SIGNATURE_LEN] = ' ';
        memcpy(req->sig + WEBHOOK_SIGNATURE_LEN + 1, old, WEBHOOK_SIGNATURE_LEN + 1);
    }
    /* Not expected: an occurrence id is shorter than WEBHOOK_ID_MAX (above), and the header
     * lines fit any such id (webhook.c). */
    if (webhook_request(&m, &req->hdr, r, o->timeout_ms) != 0)
        return "webhook request headers do not fit";
    return NULL;
}

static int
start_webhook(const struct channel_opts *o, struct outbound *out, const struct db_outbox_item *it,
              struct channel_req *req, void *tag, char err[OUTBOUND_ERR_MAX], bool *give_up)
{
    struct outbound_request r;
    const char *why = webhook_prepare(o, it, req, &r);

    if (why != NULL) {
        snprintf(err, OUTBOUND_ERR_MAX, "%s", why);
        *give_up = true;
        return -1;
    }
    char host[WEBHOOK_URL_MAX];
    r.tag = tag;
    /* A host named in the allow-list may be private whatever it resolves to; otherwise the
     * networks are judged on each connection (outbound.c), with the address pinned. */
    r.allow_private = o->webhook_allow != NULL &&
                      (o->webhook_allow->all || (webhook_host(it->url, host, sizeof host) == 0 &&
                                                 netguard_allow_host(o->webhook_allow, host)));
    r.allow = o->webhook_allow;
    r.refused_hint = "TOCSIN_WEBHOOK_ALLOW_NETS";
    return outbound_start(out, &r, err);
}

/* Seconds the push service keeps the message for a browser that is offline: until the meeting's
 * start plus the missed grace, as the payload tells it (0 once past: now or never). */
static int64_t
push_ttl_s(const struct channel_opts *o, const char *payload, int64_t now_ms)
{
    int64_t start_ms, ttl;

    if (codec_push_starts_at(payload, &start_ms) != 0)
        return 0;
    ttl = (start_ms + o->missed_grace_ms - now_ms) / 1000;
    return ttl < 0 ? 0 : ttl > CHANNEL_PUSH_TTL_MAX_S ? CHANNEL_PUSH_TTL_MAX_S : ttl;
}

static int
start_push(const struct channel_opts *o, struct outbound *out, const struct db_outbox_item *it,
           struct channel_req *req, void *tag, char err[OUTBOUND_ERR_MAX], bool *give_up)
{
    struct webpush_subscriber to;
    char topic_key[32], topic[WEBPUSH_TOPIC_LEN + 1];
    size_t body_len = 0;
    int64_t now = timefmt_now_ms();
    enum webpush_error e =
        webpush_subscriber_decode(it->p256dh ? it->p256dh : "", it->p256dh ? strlen(it->p256dh) : 0,
                                  it->auth ? it->auth : "", it->auth ? strlen(it->auth) : 0, &to);

    if (it->expires_at_ms != 0 && it->expires_at_ms <= now) {
        snprintf(err, OUTBOUND_ERR_MAX, "push subscription expired");
        *give_up = true;
        return -1;
    }
    if (e == WEBPUSH_OK)
        e = webpush_encrypt(&to, it->payload, strlen(it->payload), req->body, &body_len);
    if (e != WEBPUSH_OK) {
        snprintf(err, OUTBOUND_ERR_MAX, "%s", webpush_error_text(e));
        *give_up = e != WEBPUSH_E_INTERNAL;
        return -1;
    }
    /* The reminder's id, not the occurrence's: a reminder moved before it was shown replaces the
     * undelivered message of its old time at the push service. */
    snprintf(topic_key, sizeof topic_key, "rem_%lld", (long long)it->reminder_id);
    webpush_topic(topic_key, topic);
    snprintf(req->topic, sizeof req->topic, "Topic: %s", topic);
    snprintf(req->ttl, sizeof req->ttl, "TTL: %lld", (long long)push_ttl_s(o, it->payload, now));
    struct outbound_request r = {.url = it->url,
                                 .headers = {"Content-Type: application/octet-stream",
                                             "Content-Encoding: aes128gcm", req->authorization,
                                             req->ttl, "Urgency: high", req->topic, NULL},
                                 .body = (const char *)req->body,
                                 .body_len = body_len,
                                 .timeout_ms = o->timeout_ms,
                                 .allow_private = o->push_allow_private,
                                 .tag = tag};
    return outbound_start(out, &r, err);
}

int
channel_push_audience(const struct db_outbox_item *it, char out[WEBPUSH_ORIGIN_MAX + 1])
{
    return it->url != NULL && webpush_origin(it->url, out) == WEBPUSH_OK ? 0 : -1;
}

static int
start_email(const struct channel_opts *o, struct outbound *out, const struct db_outbox_item *it,
            void *tag, char err[OUTBOUND_ERR_MAX])
{
    struct outbound_mail m = {
        o->smtp_url, o->smtp_username, o->smtp_password,    o->smtp_require_tls, o->smtp_from,
        it->address, it->payload,      strlen(it->payload), o->timeout_ms,       tag};

    if (o->smtp_url == NULL || o->smtp_url[0] == '\0') {
        snprintf(err, OUTBOUND_ERR_MAX, "email is off (TOCSIN_SMTP_URL is not set)");
        return -1;
    }
    return outbound_start_mail(out, &m, err);
}

int
channel_start(const struct channel_opts *o, struct outbound *out, const struct db_outbox_item *it,
              struct channel_req *req, void *tag, char err[OUTBOUND_ERR_MAX], bool *give_up)
{
    *give_up = false;
    switch (it->channel) {
    case CHANNEL_WEBHOOK:
        return start_webhook(o, out, it, req, tag, err, give_up);
    case CHANNEL_PUSH:
        return start_push(o, out, it, req, tag, err, give_up);
    case CHANNEL_EMAIL:
        return start_email(o, out, it, tag, err);
    default:
        break;
    }
    snprintf(err, OUTBOUND_ERR_MAX, "a channel this version does not deliver");
    *give_up = true;
    return -1;
}

/* An SMTP reply that refuses this message for good (RFC 5321 section 4.2.1: 5yz, e.g. 550 no
 * such mailbox, 552 too large, 554 rejected): retrying the same message cannot help. 53x are
 * the server refusing our credentials (TOCSIN_SMTP_USERNAME/PASSWORD): an operator fixes
 * those, so they are retried like an unreachable server. */
static bool
smtp_permanent(long status)
{
    return status >= 500 && status <= 599 && status / 10 != 53;
}

enum channel_verdict
channel_verdict(unsigned channel, const struct outbound_done *d)
{
    if (d->ok)
        return CHANNEL_DELIVERED;
    if (channel == CHANNEL_EMAIL)
        return smtp_permanent(d->status) ? CHANNEL_GIVE_UP : CHANNEL_RETRY;
    if (channel != CHANNEL_PUSH)
        return CHANNEL_RETRY;
    /* 404 and 410 say the subscription is gone (RFC 8030); 400, 401, 403 (RFC 8292: the VAPID
     * token) and 413 (too large) that this request can never succeed, and so does a redirect: a
     * push service never redirects (RFC 8030 has none), so the endpoint is not one, and
     * redirects are never followed (outbound.h). 429, 5xx and anything else are worth retrying. */
    if (d->status >= 300 && d->status <= 399)
        return CHANNEL_GIVE_UP; /* channel_explain says why */
    switch (d->status) {
    case 404:
    case 410:
        return CHANNEL_GONE;
    case 400:
    case 401:
    case 403:
    case 413:
        return CHANNEL_GIVE_UP;
    default:
        return CHANNEL_RETRY;
    }
}

bool
channel_receiver_trouble(unsigned channel, const struct outbound_done *d)
{
    if (d->ok)
        return false;
    if (channel == CHANNEL_EMAIL)
        return d->status == 0 || (d->status >= 400 && d->status <= 499) || d->status / 10 == 53;
    return d->status == 0 || d->status == 429 || d->status >= 500;
}

void
channel_explain(unsigned channel, struct outbound_done *d)
{
    if (channel == CHANNEL_PUSH && !d->ok && d->status >= 300 && d->status <= 399)
        snprintf(d->err, sizeof d->err,
                 "push_redirected: HTTP %ld from the push service, which never redirects: the "
                 "subscription's endpoint is not a push service's (not followed)",
                 d->status);
}
