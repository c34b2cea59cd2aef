/* unsubscribe.c -- one-click unsubscribe (docs/design.md section 13, RFC 8058), with no
 * credentials: the link's token (unsub.h), signed by this server, names the tenant and the
 * participant. GET /v1/unsubscribe?t= shows a page with one button and changes nothing (mail
 * scanners fetch links); POST /v1/unsubscribe?t= with the body List-Unsubscribe=One-Click (form
 * encoded or multipart, as mail programs send it, and as the button sends it) turns that
 * participant's email off in their preferences (db_prefs_email_off: later fires skip their email
 * as `preference`) and answers a page, however often it comes. A link that is cut, altered or
 * signed elsewhere is a 400 (a page to a GET, problem+json to a POST) and changes nothing. The
 * endpoint is off (404) while TOCSIN_UNSUBSCRIBE_SECRET is unset. */
#define _GNU_SOURCE /* memmem */
#include <microhttpd.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "db_prefs.h"
#include "handler.h"
#include "http_routes.h"
#include "log.h"
#include "panic.h"
#include "unsub.h"

#define PAGE_MAX (4096 + UNSUB_TOKEN_MAX) /* bytes of a page, the form's token included */
#define ONE_CLICK "List-Unsubscribe=One-Click"
#define FORM_TYPE "application/x-www-form-urlencoded"
#define MULTIPART_TYPE "multipart/form-data"

/* The page's frame: a title and heading, then its paragraphs. No script, no style, no resource:
 * the reply's Content-Security-Policy allows none (http_reply_page). */
static const char page_fmt[] =
    "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
    "<meta name=\"viewport\" content=\"width=device-width\">"
    "<meta name=\"robots\" content=\"noindex\"><title>%s</title></head>\n"
    "<body><main><h1>%s</h1>\n%s</main></body></html>\n";

/* The form posts back to this URL with the link's query (a reference of only "?t=..." keeps a
 * proxy's path prefix). The token's characters are base64url: nothing in it needs escaping. */
static const char confirm_fmt[] =
    "<p>Press the button to get no more reminder emails from this service. Reminders you see "
    "elsewhere (in the app, on your devices) keep coming.</p>\n"
    "<form method=\"post\" action=\"?t=%s\">"
    "<input type=\"hidden\" name=\"List-Unsubscribe\" value=\"One-Click\">"
    "<button type=\"submit\">Unsubscribe</button></form>\n";

static int
page(struct request *rq, unsigned status, const char *title, const char *body)
{
    char text[PAGE_MAX];
    int n = snprintf(text, sizeof text, page_fmt, title, title, body);

    if (n < 0 || (size_t)n >= sizeof text)
        return http_reply_problem(rq, API_E_INTERNAL, "the page does not fit its buffer");
    return http_reply_page(rq, status, text, (size_t)n);
}

/* A refusal in the form the request's sender reads: a page to a browser's GET, problem+json to
 * a POST (a mail program). */
static int
refuse(struct request *rq, bool html, enum api_error e, const char *detail)
{
    if (!html)
        return http_reply_problem(rq, e, detail);
    return page(rq, api_errors_status(e), api_errors_title(e),
                e == API_E_NOT_FOUND ? "<p>This service sends no unsubscribe links.</p>\n"
                                     : "<p>The link may have been cut or changed on its way. Use "
                                       "the one in your latest reminder email, whole.</p>\n");
}

/* What a link's query holds besides one t: another parameter, or t again. */
struct query_scan {
    const char *other; /* the first such name, or NULL */
    unsigned n_t;
};

static enum MHD_Result
scan_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    struct query_scan *q = cls;

    (void)kind;
    (void)value;
    if (strcmp(key, "t") == 0 && ++q->n_t == 1)
        return MHD_YES;
    if (q->other == NULL)
        q->other = key;
    return MHD_YES;
}

/* The link's subject into *s: 0, or -1 with the refusal queued in *ret. */
static int
read_link(struct request *rq, bool html, struct unsub_subject *s, int *ret)
{
    const struct unsub_keys keys = {rq->cfg->unsub_secret, rq->cfg->unsub_secret_previous};
    const char *t = http_request_query(rq, "t");
    struct query_scan q = {NULL, 0};

    if (keys.current[0] == '\0') {
        *ret = refuse(rq, html, API_E_NOT_FOUND,
                      "one-click unsubscribe is off here (TOCSIN_UNSUBSCRIBE_SECRET)");
        return -1;
    }
    MHD_get_connection_values(rq->conn, MHD_GET_ARGUMENT_KIND, scan_arg, &q);
    if (q.other != NULL && !html) {
        *ret = http_reply_query(rq, q.other, "is not taken: a link has one parameter, t, once");
        return -1;
    }
    enum unsub_verdict v =
        q.other != NULL || t == NULL ? UNSUB_MALFORMED : unsub_token_parse(&keys, t, strlen(t), s);
    switch (v) {
    case UNSUB_OK:
        return 0;
    case UNSUB_MALFORMED:
        *ret = refuse(rq, html, API_E_UNSUBSCRIBE_LINK_INVALID, "the link's t is not a token");
        return -1;
    case UNSUB_FORGED:
        *ret = refuse(rq, html, API_E_UNSUBSCRIBE_LINK_INVALID, "the link's token is not ours");
        return -1;
    }
    TOCSIN_UNREACHABLE("an unsub_verdict without a case");
}

/* Whether a form-encoded body holds the pair List-Unsubscribe=One-Click. */
static bool
form_one_click(const char *body, size_t len)
{
    const char *end = body + len;

    for (const char *p = body; p < end;) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        size_t n = (size_t)((amp ? amp : end) - p);
        if (n == sizeof ONE_CLICK - 1 && memcmp(p, ONE_CLICK, n) == 0)
            return true;
        p += n + 1;
    }
    return false;
}

/* Whether a multipart/form-data body has a part named List-Unsubscribe whose value is
 * One-Click (RFC 7578; the part's headers end at the first empty line after its name). */
static bool
multipart_one_click(const char *body, size_t len)
{
    static const char name[] = "name=\"List-Unsubscribe\"", value[] = "\r\n\r\nOne-Click\r\n";
    const char *end = body + len, *at = memmem(body, len, name, sizeof name - 1);

    if (at == NULL)
        return false;
    at += sizeof name - 1;
    const char *gap = memmem(at, (size_t)(end - at), "\r\n\r\n", 4);
    return gap != NULL && (size_t)(end - gap) >= sizeof value - 1 &&
           memcmp(gap, value, sizeof value - 1) == 0;
}

/* The body RFC 8058 section 3.1 requires: 0, or -1 with the refusal queued in *ret. */
static int
read_one_click(struct request *rq, int *ret)
{
    const char *type = http_request_header(rq, MHD_HTTP_HEADER_CONTENT_TYPE);
    const char *body = rq->body != NULL ? rq->body : "";
    bool form = type != NULL && strncasecmp(type, FORM_TYPE, sizeof FORM_TYPE - 1) == 0;
    bool multi = type != NULL && strncasecmp(type, MULTIPART_TYPE, sizeof MULTIPART_TYPE - 1) == 0;

    if (!form && !multi) {
        *ret = http_reply_problem(rq, API_E_UNSUPPORTED_MEDIA_TYPE,
                                  "Content-Type must be " FORM_TYPE " (or " MULTIPART_TYPE ")");
        return -1;
    }
    if (form ? form_one_click(body, rq->body_len) : multipart_one_click(body, rq->body_len))
        return 0;
    *ret = http_reply_problem(rq, API_E_UNSUBSCRIBE_BODY_INVALID, NULL);
    return -1;
}

int
handle_unsubscribe_get(struct request *rq)
{
    struct unsub_subject s;
    char form[sizeof confirm_fmt + UNSUB_TOKEN_MAX];
    int ret;

    if (read_link(rq, true, &s, &ret) != 0)
        return ret;
    snprintf(form, sizeof form, confirm_fmt, http_request_query(rq, "t"));
    return page(rq, MHD_HTTP_OK, "Unsubscribe from reminder emails", form);
}

int
handle_unsubscribe_post(struct request *rq)
{
    struct unsub_subject s;
    struct db *db;
    int ret;

    if (read_link(rq, false, &s, &ret) != 0 || read_one_click(rq, &ret) != 0 ||
        (db = handler_db(rq, &ret)) == NULL)
        return ret;
    enum db_status st = db_prefs_email_off(db, s.tenant_id, s.participant);
    if (st != DB_ONE_RESULT)
        return handler_db_failure(rq, st, API_E_UNSUBSCRIBE_LINK_INVALID,
                                  "the link's tenant no longer exists");
    LOG_INFO("email turned off by an unsubscribe link: tenant=%lld", (long long)s.tenant_id);
    return page(rq, MHD_HTTP_OK, "You are unsubscribed",
                "<p>You will get no more reminder emails from this service. Reminders elsewhere "
                "(in the app, on your devices) keep coming.</p>\n");
}
