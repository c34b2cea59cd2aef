/* channel.c -- the channels of channel.h. */
#include "channel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "mail.h"
#include "timefmt.h"
#include "webhook_sign.h"

static char *
email_payload(const struct channel_opts *o, const struct db_outbox_item *it,
              const struct meeting *m, int64_t now_ms, const char **why)
{
    char *name = NULL;

    if (it->recipient == NULL || it->address == NULL ||
        codec_participant_name(m, it->recipient, &name) != 0) {
        *why = "the participant is no longer in the meeting";
        return NULL;
    }
    struct mail_input in = {
        m,     {it->reminder_id, it->fire_at_ms, 0}, it->recipient, name, it->address, o->smtp_from,
        now_ms};
    char *text = mail_message(&in, why);
    free(name);
    return text;
}

char *
channel_payload(const struct channel_opts *o, const struct db_outbox_item *it,
                const struct meeting *m, int64_t now_ms, const char **why)
{
    struct occurrence occ = {it->reminder_id, it->fire_at_ms, 0};
    char *text = NULL;

    *why = "out of memory building the payload";
    switch (it->channel) {
    case CHANNEL_WEBHOOK:
        text = codec_notification_encode(m, &occ, now_ms);
        break;
    case CHANNEL_PUSH:
        if (!codec_meeting_has_person(m, it->recipient ? it->recipient : "")) {
            *why = "the participant is no longer in the meeting";
            return NULL;
        }
        text = codec_push_payload(m, &occ);
        break;
    case CHANNEL_EMAIL:
        text = email_payload(o, it, m, now_ms, why);
        break;
    default:
        *why = "a channel this version does not deliver";
        break;
    }
    return text;
}

static int
start_webhook(const struct channel_opts *o, struct outbound *out, const struct db_outbox_item *it,
              struct channel_req *req, void *tag, char err[OUTBOUND_ERR_MAX], bool *give_up)
{
    struct outbound_request r;
    int64_t ts = timefmt_now_ms() / 1000;
    struct webhook_message m = {it->url,  req->msg_id, ts,
                                req->sig, it->payload, strlen(it->payload)};

    webhook_message_id(it->reminder_id, it->fire_at_ms, req->msg_id);
    if (webhook_sign(it->secret, req->msg_id, ts, m.body, m.body_len, req->sig) != 0 ||
        webhook_request(&m, &req->hdr, &r, o->timeout_ms) != 0) {
        snprintf(err, OUTBOUND_ERR_MAX, "webhook secret unusable");
        *give_up = true;
        return -1;
    }
    r.tag = tag;
    r.allow_private = o->webhook_allow_private;
    return outbound_start(out, &r, err);
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
    case CHANNEL_EMAIL:
        return start_email(o, out, it, tag, err);
    default:
        break;
    }
    snprintf(err, OUTBOUND_ERR_MAX, "a channel this version does not deliver");
    *give_up = true;
    return -1;
}

enum channel_verdict
channel_verdict(unsigned channel, const struct outbound_done *d)
{
    if (d->ok)
        return CHANNEL_DELIVERED;
    if (channel != CHANNEL_PUSH)
        return CHANNEL_RETRY;
    /* RFC 8030: 404 and 410 say the subscription is gone; 400, 401, 403 and 413 that this request
     * (its VAPID token, its size) can never succeed; 429 and 5xx are worth retrying. */
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
