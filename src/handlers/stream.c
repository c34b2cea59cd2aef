/* stream.c -- GET /v1/stream: a participant's live reminders as Server-Sent Events (docs/design.md
 * section 7). The browser token (header, or ?access_token= for EventSource, which cannot send
 * headers) was checked before the handler runs (http_server.c, http_auth.c); here the resume cursor
 * is read (Last-Event-ID wins over ?last_event_id=) and the stream is handed to the hub. A cursor
 * that is not a sequence number is not an error: the stream opens and says reset, which every SSE
 * client can act on. */
#include <microhttpd.h>
#include <string.h>

#include "handler.h"
#include "http_routes.h"
#include "http_stream.h"
#include "sse.h"
#include "timefmt.h"

static enum MHD_Result
check_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    const char **bad = cls;

    (void)kind;
    (void)value;
    if (strcmp(key, "access_token") != 0 && strcmp(key, "last_event_id") != 0) {
        *bad = key;
        return MHD_NO;
    }
    return MHD_YES;
}

int
handle_stream(struct request *rq)
{
    const char *bad = NULL, *cursor = http_request_header(rq, "Last-Event-ID");
    const char *mtg[PRINCIPAL_MTG_MAX];
    struct hub_subscriber who = {.tenant_id = rq->tenant_id,
                                 .sub = rq->who.sub,
                                 .kid = rq->who.kid,
                                 .expires_ms = rq->who.expires_ms,
                                 .mtg = mtg,
                                 .n_mtg = rq->who.n_mtg};

    /* Within the clock leeway an expired token still passes, but a stream opened with it would
     * end at once, and EventSource would reconnect with it until the leeway ran out, never
     * hearing that it needs a new one. */
    if (rq->who.expires_ms <= timefmt_now_ms())
        return http_reply_problem(rq, API_E_INVALID_TOKEN,
                                  "the token has expired: a stream needs a token still valid");
    MHD_get_connection_values(rq->conn, MHD_GET_ARGUMENT_KIND, check_arg, &bad);
    if (bad != NULL)
        return http_reply_query(rq, bad,
                                "is not taken: the parameters are access_token and last_event_id");
    if (cursor == NULL)
        cursor = http_request_query(rq, "last_event_id");
    who.cursor_kind = cursor == NULL                               ? HUB_CURSOR_NONE
                      : sse_cursor_parse(cursor, &who.cursor) == 0 ? HUB_CURSOR_SET
                                                                   : HUB_CURSOR_BAD;
    for (size_t i = 0; i < rq->who.n_mtg; i++)
        mtg[i] = rq->who.mtg[i];
    return http_stream_start(rq, &who);
}
