/* http_page.c -- the streamed list page of http_page.h: a content reader that hands libmicrohttpd
 * the head, then each item that fits, then the members after the items, one piece at a time. */
#include "http_page.h"

#include <microhttpd.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "codec_page.h"
#include "http_reply.h"
#include "log.h"

/* The buffer MHD allocates with the response and fills from the reader when it cannot frame the
 * body in chunks (HTTP/1.0); chunked, it fills its connection's own buffer instead. */
#define PAGE_BLOCK_SIZE 16384
#define PAGE_HEAD "{\"items\":["

/* Page bytes sent since memory was last given back, past which the end of the last page in flight
 * gives it back (page_trim). */
#define PAGE_TRIM_BYTES (8 * 1024 * 1024)

enum page_part { PART_HEAD, PART_ITEMS, PART_TAIL, PART_END };

static atomic_long pages_in_flight;
static atomic_size_t bytes_untrimmed;

struct page {
    struct http_page_source src;
    size_t bytes_max;
    size_t next;    /* the next item to encode */
    size_t sent;    /* items in the body */
    size_t written; /* bytes of the body so far, text included */
    enum page_part part;
    struct strbuf text; /* the piece being handed out, from off; reused, so one item's size */
    size_t off;
    bool failed; /* out of memory: the connection is closed after what went out */
};

/* The members after the items: "]" and the tail object's members, "]}" for an empty one. */
static int
put_tail(struct page *p)
{
    json_t *t = p->src.tail(p->src.arg, p->sent);
    size_t at = p->text.len + 1;

    strbuf_put(&p->text, "]", 1);
    int rc = t != NULL ? codec_dump_append(t, &p->text) : -1;
    json_decref(t);
    if (rc != 0)
        return -1;
    if (p->text.len == at + 2) { /* "{}" */
        p->text.len = at;
        strbuf_put(&p->text, "}", 1);
    } else {
        p->text.p[at] = ',';
    }
    if (p->text.len > HTTP_PAGE_TAIL_MAX)
        LOG_ERROR("http: a page's tail took %zu bytes, over HTTP_PAGE_TAIL_MAX", p->text.len);
    return p->text.bad ? -1 : 0;
}

/* The next item that fits into text (with its comma); false when the items are over: none left,
 * or the next would take the body past the bound (the first always goes). */
static bool
put_item(struct page *p)
{
    if (p->next >= p->src.n)
        return false;
    if (p->sent > 0)
        strbuf_put(&p->text, ",", 1);
    if (p->src.item(p->src.arg, p->next++, &p->text) != 0 || p->text.bad) {
        p->failed = true;
        return false;
    }
    if (p->sent == 0 || p->written + p->text.len + HTTP_PAGE_TAIL_MAX <= p->bytes_max) {
        p->sent++;
        return true;
    }
    strbuf_clear(&p->text);
    return false;
}

/* Fills text with the next piece of the body; false at its end (or after a failure). */
static bool
next_piece(struct page *p)
{
    strbuf_clear(&p->text);
    p->off = 0;
    switch (p->part) {
    case PART_HEAD:
        strbuf_puts(&p->text, PAGE_HEAD);
        p->part = PART_ITEMS;
        break;
    case PART_ITEMS:
        if (put_item(p))
            break;
        if (p->failed)
            return false;
        p->part = PART_TAIL;
        /* fall through */
    case PART_TAIL:
        p->part = PART_END;
        if (put_tail(p) != 0) {
            p->failed = true;
            return false;
        }
        break;
    case PART_END:
        return false;
    }
    if (p->text.bad) {
        p->failed = true;
        return false;
    }
    p->written += p->text.len;
    return true;
}

static ssize_t
page_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct page *p = cls;
    size_t out = 0;

    (void)pos;
    while (out < max && (p->off < p->text.len || next_piece(p))) {
        size_t k = p->text.len - p->off < max - out ? p->text.len - p->off : max - out;
        memcpy(buf + out, p->text.p + p->off, k);
        p->off += k;
        out += k;
    }
    if (out > 0)
        return (ssize_t)out;
    if (p->failed) {
        LOG_ERROR("http: out of memory encoding a page: its connection is closed mid-body");
        return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    return MHD_CONTENT_READER_END_OF_STREAM;
}

/* A burst of big pages leaves glibc's arenas (one per HTTP thread that allocated, up to eight per
 * core) holding the memory of their rows, scattered between chunks still in use, so that no arena
 * can shrink from its top: with 40 slow readers of 2 MiB pages, bench/pages.sh measured 22 MB
 * idle, 113 MB with them and still 50 MB 10 s after they closed (malloc_stats: 7 arenas of 5-9
 * MB each, 0.2 MB of it in use). So when the last page in flight ends after PAGE_TRIM_BYTES of
 * pages, malloc_trim gives the free pages of every arena back (20 MB 10 s after): at most once
 * per PAGE_TRIM_BYTES sent, on the thread of the page that ended, after its request. */
static void
page_trim(size_t bytes)
{
    size_t untrimmed = atomic_fetch_add(&bytes_untrimmed, bytes) + bytes;

    if (atomic_fetch_sub(&pages_in_flight, 1) != 1 || untrimmed < PAGE_TRIM_BYTES)
        return;
    atomic_store(&bytes_untrimmed, 0);
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

static void
page_free(void *cls)
{
    struct page *p = cls;
    size_t bytes = p->written;

    p->src.free(p->src.arg);
    strbuf_fini(&p->text);
    free(p);
    page_trim(bytes);
}

int
http_page_reply(struct request *rq, const struct http_page_source *src)
{
    struct page *p = calloc(1, sizeof *p);
    struct MHD_Response *resp = NULL;

    if (p == NULL) {
        src->free(src->arg);
        return http_reply_problem(rq, API_E_INTERNAL, NULL);
    }
    p->src = *src;
    p->bytes_max = (size_t)rq->cfg->page_bytes_max;
    atomic_fetch_add(&pages_in_flight, 1);
    resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, PAGE_BLOCK_SIZE, page_read, p,
                                             page_free);
    if (resp == NULL) {
        page_free(p);
        return http_reply_problem(rq, API_E_INTERNAL, NULL);
    }
    MHD_add_response_header(resp, "Content-Type", "application/json");
    return http_reply_response(rq, MHD_HTTP_OK, resp);
}
