/* http_page.h -- the 200 of a list page, {"items":[...], <members after them>}, encoded item by
 * item as libmicrohttpd asks for bytes (a content reader), not built whole before the first byte:
 * a page in flight holds the rows it is made from and one item's text, and a client that reads
 * slowly holds no HTTP thread (MHD's sockets are non-blocking: a connection whose socket is full
 * waits in epoll until it drains, while the thread serves the others).
 *
 * The body stays within TOCSIN_PAGE_BYTES_MAX: the page stops before the item that would take it
 * past the bound, but always holds its first item (so that a client moves on, whatever an item's
 * size), and the members after the items are told how many went out (the next cursor names the
 * last of them). The source's rows are read before http_page_reply: a database failure is the
 * handler's 503, never a 200 cut short. Past that, only running out of memory can end a page
 * early: the connection is then closed mid-body, which a client sees as an error, not as a page.
 *
 * Responses of unknown length go out chunked to HTTP/1.1 clients; to HTTP/1.0 ones MHD sends the
 * body unframed and closes the connection after it. When the last page in flight ends after a
 * burst of them, the memory their rows took goes back to the system (malloc_trim). */
#ifndef TOCSIN_HTTP_PAGE_H
#define TOCSIN_HTTP_PAGE_H

#include <jansson.h>
#include <stddef.h>

#include "http_request.h"
#include "strbuf.h"

/* Room kept in every page for what follows the items (a next_cursor, a head): the members a
 * source's tail returns must fit in it. */
#define HTTP_PAGE_TAIL_MAX 512

struct http_page_source {
    void *arg;
    size_t n; /* the items on offer, in order: the page sends the first of them that fit */
    /* Appends the JSON text of item i to out; called once per item, in order (for the item that
     * does not fit too). 0, or -1 when out of memory. */
    int (*item)(void *arg, size_t i, struct strbuf *out);
    /* The members after "items" once sent items went out (sent < n: the page was cut there), as
     * an object (a new reference; NULL when out of memory). */
    json_t *(*tail)(void *arg, size_t sent);
    /* Frees arg: once, when the response is done with, or at once when it could not be made. */
    void (*free)(void *arg);
};

/* Queues the 200 of src's page. Takes src->arg in every case. Returns the MHD result. */
int http_page_reply(struct request *rq, const struct http_page_source *src);

#endif
