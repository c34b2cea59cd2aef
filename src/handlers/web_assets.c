/* web_assets.c -- the browser files: GET /v1/client.js (the ES module web apps import; from
 * another origin only one TOCSIN_CORS_ORIGINS allows, as module scripts use CORS), GET /v1/sw.js
 * (the service worker part of Web Push, for a web app's own worker to importScripts(), or
 * registered as it is), with TOCSIN_DEMO=1 GET /demo (a participant's page built on them), and
 * the operator console, GET /console and its files GET /console/{file} (web/console/). Served
 * from the binary with a strong ETag and Cache-Control: no-cache; If-None-Match gives 304. */
#include <microhttpd.h>
#include <stdio.h>
#include <string.h>

#include "assets.h"
#include "handler.h"
#include "http_routes.h"

static int
serve(struct request *rq, const char *name, const char *sw_allowed)
{
    const struct asset *a = assets_find(name);
    const char *inm = http_request_header(rq, MHD_HTTP_HEADER_IF_NONE_MATCH);
    /* Revalidated on every use: a page gets the current module after an upgrade, and a 304
     * while it is unchanged (no-store would make the ETag useless to a browser). */
    struct http_reply_meta meta = {a ? a->etag : NULL, NULL, sw_allowed, "no-cache"};
    int ret;

    if (a == NULL)
        return http_reply_problem(rq, API_E_NOT_FOUND, NULL);
    if (handler_no_query(rq, &ret) != 0)
        return ret;
    if (inm != NULL && http_reply_etag_matches(inm, a->etag, 1))
        return http_reply_not_modified(rq, &meta);
    return http_reply_raw(rq, MHD_HTTP_OK, a->body, a->len, a->content_type, &meta);
}

int
handle_client_js(struct request *rq)
{
    return serve(rq, "client.js", NULL);
}

int
handle_demo(struct request *rq)
{
    if (!rq->cfg->demo)
        return http_reply_problem(rq, API_E_NOT_FOUND, "the demo page is off (TOCSIN_DEMO=1)");
    return serve(rq, "demo.html", NULL);
}

/* The console runs only its own files: no inline script or style, nothing from elsewhere, its
 * API calls to this origin, never framed (it holds an API key). */
#define CONSOLE_POLICY                                                                             \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "              \
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
#define CONSOLE_DIR "console/"
#define CONSOLE_NAME_MAX 64 /* bytes of a file name under web/console/ */

int
handle_console(struct request *rq)
{
    rq->page_policy = CONSOLE_POLICY;
    return serve(rq, CONSOLE_DIR "index.html", NULL);
}

int
handle_console_file(struct request *rq)
{
    char name[sizeof CONSOLE_DIR + CONSOLE_NAME_MAX];
    const char *file = rq->match.args[0];

    rq->page_policy = CONSOLE_POLICY;
    if (strlen(file) > CONSOLE_NAME_MAX)
        return http_reply_problem(rq, API_E_NOT_FOUND, NULL);
    snprintf(name, sizeof name, CONSOLE_DIR "%s", file);
    return serve(rq, name, NULL);
}

int
handle_sw_js(struct request *rq)
{
    /* Registered as it is, the worker may control the whole origin (the demo page is /demo). */
    return serve(rq, "sw.js", "/");
}
