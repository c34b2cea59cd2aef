/* db_array.c -- PostgreSQL array literals for text parameters ($1::bigint[], $1::uuid[] and the
 * like), so that a batch of rows or keys is one parameter of one statement. Only elements that
 * need no quoting go in through db_array and db_array_add: numbers, t and f, meeting ids (hex
 * digits and dashes); db_array_text quotes any text. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_internal.h"
#include "panic.h"
#include "strbuf.h"

char *
db_array(size_t n, db_array_elem_fn fn, const void *arg)
{
    char *s = malloc(n * DB_I64_BUF + 3), buf[DB_I64_BUF];
    size_t len = 0;

    if (s == NULL)
        return NULL;
    s[len++] = '{';
    for (size_t i = 0; i < n; i++) {
        const char *text = fn(arg, i, buf);
        size_t l = strlen(text);

        TOCSIN_ASSERT(l < DB_I64_BUF); /* the room counted per element above */
        if (i > 0)
            s[len++] = ',';
        memcpy(s + len, text, l);
        len += l;
    }
    s[len++] = '}';
    s[len] = '\0';
    return s;
}

static const char *
i64_elem(const void *arg, size_t i, char buf[DB_I64_BUF])
{
    return db_i64(buf, ((const int64_t *)arg)[i]);
}

char *
db_array_i64(const int64_t *v, size_t n)
{
    return db_array(n, i64_elem, v);
}

void
db_array_add(struct strbuf *b, const char *fmt, ...)
{
    char item[MEETING_ID_LEN + DB_I64_BUF];
    va_list ap;

    va_start(ap, fmt);
    int n = vsnprintf(item, sizeof item, fmt, ap);
    va_end(ap);
    if (b->len == 0)
        strbuf_put(b, "{", 1);
    else
        strbuf_put(b, ",", 1);
    strbuf_put(b, item, (size_t)n);
}

const char *
db_array_end(struct strbuf *b)
{
    if (b->len == 0)
        strbuf_put(b, "{", 1);
    strbuf_put(b, "}", 1);
    return b->bad ? NULL : b->p;
}

const char *
db_array_ids(struct strbuf *b, const char *const *ids, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (meeting_id_valid(ids[i]))
            db_array_add(b, "%s", ids[i]);
    return db_array_end(b);
}

void
db_array_text(struct strbuf *b, const char *s)
{
    strbuf_put(b, b->len == 0 ? "{" : ",", 1);
    if (s == NULL) {
        strbuf_put(b, "NULL", 4);
        return;
    }
    strbuf_put(b, "\"", 1);
    for (const char *p = s; *p != '\0';) {
        size_t run = strcspn(p, "\"\\");
        strbuf_put(b, p, run);
        p += run;
        if (*p != '\0') {
            strbuf_put(b, "\\", 1);
            strbuf_put(b, p++, 1);
        }
    }
    strbuf_put(b, "\"", 1);
}
