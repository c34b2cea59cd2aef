/* prefs.c -- a participant's preferences (DESIGN section 13): GET|PUT /v1/me/preferences with a
 * browser token of the notifications scope (one's own), GET|PUT
 * /v1/participants/{id}/preferences with an API key (any participant the tenant knows: one with
 * preferences or in a live meeting; another is 404, so another tenant's participants are never
 * within reach). A PUT replaces them whole and answers what is kept; a body with any problem
 * changes nothing. They take effect at each later fire (db_fire.c); own reminders are planned in
 * the same transaction (db_own.c) and their Redis keys armed after it. */
#include <microhttpd.h>
#include <string.h>

#include "codec.h"
#include "db_prefs.h"
#include "handler.h"
#include "http_routes.h"

static int
reply_prefs(struct request *rq, const struct prefs *p)
{
    return http_reply_json(rq, MHD_HTTP_OK, codec_prefs_encode(p), NULL);
}

static int
get(struct request *rq, const char *participant, bool must_exist)
{
    struct prefs p;
    struct db *db;
    int ret;

    if ((db = handler_db_no_query(rq, &ret)) == NULL)
        return ret;
    enum db_status st = db_prefs_get(db, rq->tenant_id, participant, must_exist, &p);
    if (st != DB_ONE_RESULT)
        return handler_db_failure(rq, st, API_E_PARTICIPANT_NOT_FOUND, NULL);
    return reply_prefs(rq, &p);
}

/* The write and its reply; the own reminders' keys (re-planned with it) are armed after the
 * commit. */
static int
put_decoded(struct request *rq, struct db *db, const char *participant, bool must_exist,
            const struct prefs *p)
{
    struct db_series_keys gone = {0}, fresh = {0};
    struct codec_errors errs = {0};
    enum db_prefs_refusal refused;
    int ret;

    enum db_status st =
        db_prefs_put(db, rq->tenant_id, participant, must_exist, p, &refused, &gone, &fresh);
    if (st != DB_ONE_RESULT)
        ret = handler_db_failure(rq, st, API_E_PARTICIPANT_NOT_FOUND, NULL);
    else if (refused == DB_PREFS_UNKNOWN_PARTICIPANT)
        ret = http_reply_problem(rq, API_E_PARTICIPANT_NOT_FOUND, NULL);
    else if (refused == DB_PREFS_UNKNOWN_ZONE) {
        codec_add_error(&errs, "quiet_hours.time_zone",
                        "must be a known IANA time zone name, e.g. Europe/Berlin");
        ret = http_reply_validation(rq, &errs);
    } else {
        handler_series_keys(rq, &gone, &fresh);
        ret = reply_prefs(rq, p);
    }
    db_series_keys_fini(&gone);
    db_series_keys_fini(&fresh);
    return ret;
}

static int
put(struct request *rq, const char *participant, bool must_exist)
{
    struct codec_errors errs = {0};
    struct prefs p;
    struct db *db;
    json_t *doc;
    int ret;

    if ((doc = handler_json_body(rq, &ret)) == NULL)
        return ret;
    enum api_error e = codec_prefs_decode(doc, &p, &errs);
    json_decref(doc);
    if (e != API_E_NONE)
        return http_reply_validation(rq, &errs);
    if ((db = handler_db(rq, &ret)) == NULL)
        return ret;
    return put_decoded(rq, db, participant, must_exist, &p);
}

/* The {id} of /v1/participants/{id}/preferences: a participant id (1..PARTICIPANT_ID_MAX
 * characters; the route bounds its bytes), or NULL when it cannot be one. */
static const char *
participant_arg(const struct request *rq)
{
    const char *id = rq->match.args[0];

    return id[0] != '\0' ? id : NULL;
}

int
handle_me_prefs_get(struct request *rq)
{
    return get(rq, rq->who.sub, false);
}

int
handle_me_prefs_put(struct request *rq)
{
    return put(rq, rq->who.sub, false);
}

int
handle_participant_prefs_get(struct request *rq)
{
    const char *id = participant_arg(rq);

    return id != NULL ? get(rq, id, true)
                      : http_reply_problem(rq, API_E_PARTICIPANT_NOT_FOUND, NULL);
}

int
handle_participant_prefs_put(struct request *rq)
{
    const char *id = participant_arg(rq);

    return id != NULL ? put(rq, id, true)
                      : http_reply_problem(rq, API_E_PARTICIPANT_NOT_FOUND, NULL);
}
