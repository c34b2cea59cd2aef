/* strbuf.c -- the growing text of strbuf.h. */
#include "strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for n more bytes and the NUL; false (and bad) when there cannot be. */
static bool
reserve(struct strbuf *b, size_t n)
{
    size_t need = b->len + n + 1, cap;
    char *p;

    if (b->bad || need < n || (b->max != 0 && need > b->max)) {
        b->bad = true;
        return false;
    }
    if (need <= b->cap)
        return true;
    for (cap = b->cap ? b->cap * 2 : STRBUF_INITIAL; cap < need; cap *= 2)
        ;
    if ((p = realloc(b->p, cap)) == NULL) {
        b->bad = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

void
strbuf_put(struct strbuf *b, const char *s, size_t n)
{
    if (!reserve(b, n))
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void
strbuf_puts(struct strbuf *b, const char *s)
{
    strbuf_put(b, s, strlen(s));
}

void
strbuf_printf(struct strbuf *b, const char *fmt, ...)
{
    va_list ap, again;
    int n;

    va_start(ap, fmt);
    va_copy(again, ap);
    n = vsnprintf(NULL, 0, fmt, ap);
    if (n < 0)
        b->bad = true;
    else if (reserve(b, (size_t)n)) {
        vsnprintf(b->p + b->len, (size_t)n + 1, fmt, again);
        b->len += (size_t)n;
    }
    va_end(again);
    va_end(ap);
}

void
strbuf_clear(struct strbuf *b)
{
    b->len = 0;
    b->bad = false;
    if (b->p != NULL)
        b->p[0] = '\0';
}

void
strbuf_fini(struct strbuf *b)
{
    size_t max = b->max;

    free(b->p);
    *b = (struct strbuf){.max = max};
}
