/* codec_page.h -- what the streamed list pages (http_page.h) need of the codec: a value's compact
 * text appended to a growing buffer, in the form codec_dump gives, and a meeting's representation
 * written with its participants and metadata copied as stored instead of parsed and written again
 * (they are most of a big meeting's bytes, and the database keeps the compact text the codec
 * wrote, which is what parsing and writing it again gives: the same bytes, at a tenth of the
 * CPU). */
#ifndef TOCSIN_CODEC_PAGE_H
#define TOCSIN_CODEC_PAGE_H

#include <jansson.h>

#include "meeting.h"
#include "strbuf.h"

/* Appends v's compact, deterministic serialization (codec_dump's) to b. 0, or -1 when out of
 * memory (b is then bad). */
int codec_dump_append(const json_t *v, struct strbuf *b);

/* m as a shell: a copy that borrows every pointer of m but shows no participants ("[]") and no
 * metadata (NULL), for codec_meeting_encode; never meeting_fini it. */
struct meeting codec_meeting_shell(const struct meeting *m);
/* Appends v, the representation of codec_meeting_shell(m) (possibly with members changed or added
 * after "metadata"), with m's participants and metadata texts in the shell's place: the bytes
 * codec_dump gives for the representation of m itself. 0, or -1 when out of memory. */
int codec_meeting_shell_append(const json_t *v, const struct meeting *m, struct strbuf *b);
/* codec_meeting_encode(m) appended as codec_dump writes it, by way of the shell. 0 or -1. */
int codec_meeting_append(const struct meeting *m, struct strbuf *b);

#endif
