/* strbuf.h -- a growing NUL-terminated text, for the few places that write text of unknown length
 * (the email, the statements' array literals). Errors are sticky: after running out of memory or
 * past its bound a strbuf is bad, further writes do nothing, and the caller checks once at the
 * end. Pure. */
#ifndef TOCSIN_STRBUF_H
#define TOCSIN_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

#define STRBUF_INITIAL 256 /* bytes of the first allocation; each growth doubles */

/* Zero-initialise ({0}) for an unbounded text, or set max. */
struct strbuf {
    char *p; /* malloc'ed, NUL-terminated; NULL until something is written */
    size_t len, cap;
    size_t max; /* bytes it may hold, the NUL included; 0 = no bound */
    bool bad;   /* out of memory or past max: the text is unusable */
};

void strbuf_put(struct strbuf *b, const char *s, size_t n);
void strbuf_puts(struct strbuf *b, const char *s);
void strbuf_printf(struct strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Empties b and makes it usable again (bad cleared), keeping its memory for the next text. */
void strbuf_clear(struct strbuf *b);
/* Frees the text and leaves b as {0} with its bound. */
void strbuf_fini(struct strbuf *b);

#endif
