/* inbox_marks.c -- a participant's marks on their inbox (DESIGN section 13), with a browser token
 * of the notifications scope: PATCH /v1/me/notifications/{seq} {"read", "archived"} and POST
 * /v1/me/notifications/read {"up_to"}. A change that changed something is told to the
 * participant's other tabs and devices as an `inbox` event on their streams: this replica's hub
 * hears of it at once, the others through the Redis wake-up channel (or their catch-up poll when
 * that PUBLISH is lost, as for a fire). POST /v1/me/notifications/{seq}/snooze {"minutes"}
 * brings the item's reminder again to the participant alone (db_snooze.c), on push and email. */
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "db_inbox.h"
#include "db_snooze.h"
#include "handler.h"
#include "http_routes.h"
#include "hub.h"
#include "mirror_stream.h"

#define SEQ_DIGITS_MAX 19

/* The {seq} path argument: 0 or -1 (not a sequence number). */
static int
seq_arg(const char *s, int64_t *out)
{
    size_t n = strlen(s);
    int64_t v = 0;

    if (n == 0 || n > SEQ_DIGITS_MAX)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9' || v > (INT64_MAX - (s[i] - '0')) / 10)
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return v >= 1 ? 0 : -1;
}

static struct db_stream_reader
reader_of(const struct request *rq)
{
    return (struct db_stream_reader){rq->who.sub, rq->who.mtg,  rq->who.n_mtg,
                                     true,        DB_INBOX_ANY, DB_INBOX_ANY};
}

/* Hands the change's event to the hubs, this replica's first. */
static void
tell_streams(struct request *rq, const struct db_inbox_change *c)
{
    struct stream_head head = {rq->tenant_id, c->event_seq};

    if (c->event_seq == 0)
        return;
    if (rq->w->hub != NULL)
        hub_notify(rq->w->hub, &head, 1);
    if (rq->w->mi != NULL)
        (void)mirror_stream_publish(rq->w->mi, &head, 1);
}

static json_t *
marks_doc(int64_t seq, const struct db_inbox_change *c)
{
    return codec_inbox_marks(json_pack("{s:I, s:I}", "seq", (json_int_t)seq, "unread_count",
                                       (json_int_t)c->unread_count),
                             c->read_at_ms, c->archived_at_ms);
}

int
handle_inbox_patch(struct request *rq)
{
    struct codec_errors errs = {0};
    struct db_stream_reader who = reader_of(rq);
    struct db_inbox_change c;
    int64_t seq = 0;
    int read, archived, ret;
    json_t *doc;
    struct db *db;

    if (seq_arg(rq->match.args[0], &seq) != 0)
        return http_reply_problem(rq, API_E_NOTIFICATION_NOT_FOUND, NULL);
    if (handler_no_query(rq, &ret) != 0 ||
        handler_require_type(rq, "application/merge-patch+json", &ret) != 0 ||
        (doc = handler_parse_body(rq, &ret)) == NULL)
        return ret;
    enum api_error e = codec_inbox_patch_decode(doc, &read, &archived, &errs);
    json_decref(doc);
    if (e != API_E_NONE)
        return http_reply_validation(rq, &errs);
    if ((db = handler_db(rq, &ret)) == NULL)
        return ret;
    enum db_status st = db_inbox_mark(db, rq->tenant_id, &who, seq, read, archived, &c);
    if (st != DB_ONE_RESULT)
        return handler_db_failure(rq, st, API_E_NOTIFICATION_NOT_FOUND, NULL);
    tell_streams(rq, &c);
    return http_reply_json(rq, MHD_HTTP_OK, marks_doc(seq, &c), NULL);
}

int
handle_inbox_read(struct request *rq)
{
    struct codec_errors errs = {0};
    struct db_stream_reader who = reader_of(rq);
    struct db_inbox_change c;
    int64_t up_to = 0;
    int ret;
    json_t *doc;
    struct db *db;

    if ((doc = handler_json_body(rq, &ret)) == NULL)
        return ret;
    enum api_error e = codec_inbox_read_decode(doc, &up_to, &errs);
    json_decref(doc);
    if (e != API_E_NONE)
        return http_reply_validation(rq, &errs);
    if ((db = handler_db(rq, &ret)) == NULL)
        return ret;
    enum db_status st = db_inbox_read_up_to(db, rq->tenant_id, &who, up_to, &c);
    if (st != DB_ONE_RESULT)
        return handler_db_failure(rq, st, API_E_NOTIFICATION_NOT_FOUND, NULL);
    tell_streams(rq, &c);
    return http_reply_json(rq, MHD_HTTP_OK,
                           json_pack("{s:I, s:I, s:I}", "up_to", (json_int_t)up_to, "marked",
                                     (json_int_t)c.marked, "unread_count",
                                     (json_int_t)c.unread_count),
                           NULL);
}

int
handle_inbox_snooze(struct request *rq)
{
    struct codec_errors errs = {0};
    struct db_stream_reader who = reader_of(rq);
    struct db_snooze out;
    char occ[OCCURRENCE_ID_MAX];
    int64_t seq = 0;
    int minutes = 0, ret;
    json_t *doc;
    struct db *db;

    if (seq_arg(rq->match.args[0], &seq) != 0)
        return http_reply_problem(rq, API_E_NOTIFICATION_NOT_FOUND, NULL);
    if ((doc = handler_json_body(rq, &ret)) == NULL)
        return ret;
    enum api_error e = codec_snooze_decode(doc, &minutes, &errs);
    json_decref(doc);
    if (e == API_E_SNOOZE_OUT_OF_RANGE)
        return http_reply_problem(rq, e, NULL);
    if (e != API_E_NONE)
        return http_reply_validation(rq, &errs);
    if ((db = handler_db(rq, &ret)) == NULL)
        return ret;
    enum db_status st =
        db_snooze(db, rq->tenant_id, &who, seq, minutes, rq->cfg->smtp_url[0] != '\0', &out);
    if (st != DB_ONE_RESULT)
        return handler_db_failure(rq, st, API_E_NOTIFICATION_NOT_FOUND, NULL);
    if (out.started)
        return http_reply_problem(rq, API_E_MEETING_STARTED, NULL);
    meeting_occurrence_id(out.reminder_id, out.due_ms, occ);
    return http_reply_json(rq, MHD_HTTP_ACCEPTED,
                           json_pack("{s:s, s:o, s:I}", "occurrence_id", occ, "due_at",
                                     codec_time(out.due_ms), "deliveries",
                                     (json_int_t)out.deliveries),
                           NULL);
}
