/* codec_page.c -- serialization into a strbuf for the streamed list pages, and meetings written
 * with their stored participants and metadata texts spliced in. */
#include "codec_page.h"

#include <string.h>

#include "codec.h"

/* The flags of codec_dump (codec.c): both give the same text. */
#define CODEC_DUMP_FLAGS (JSON_COMPACT | JSON_ENCODE_ANY)
/* Where a shell's representation leaves room for the texts. Neither can occur inside a string
 * value, where every quote is escaped, nor elsewhere in a shell: no member but the meeting's own
 * has those names. */
#define SHELL_PARTICIPANTS "\"participants\":[]"
#define SHELL_METADATA "\"metadata\":null"

static int
put(const char *buffer, size_t size, void *data)
{
    struct strbuf *b = data;

    strbuf_put(b, buffer, size);
    return b->bad ? -1 : 0;
}

int
codec_dump_append(const json_t *v, struct strbuf *b)
{
    if (v == NULL || json_dump_callback(v, put, b, CODEC_DUMP_FLAGS) != 0)
        b->bad = true;
    return b->bad ? -1 : 0;
}

struct meeting
codec_meeting_shell(const struct meeting *m)
{
    struct meeting view = *m;

    view.participants_json = (char *)"[]"; /* never written through */
    view.metadata_json = NULL;
    return view;
}

int
codec_meeting_shell_append(const json_t *v, const struct meeting *m, struct strbuf *b)
{
    struct strbuf shell = {0};
    const char *p, *md;
    int rc = -1;

    if (codec_dump_append(v, &shell) == 0 && (p = strstr(shell.p, SHELL_PARTICIPANTS)) != NULL &&
        (md = strstr(p, SHELL_METADATA)) != NULL) {
        size_t head = strlen(SHELL_PARTICIPANTS) - 2, mhead = strlen(SHELL_METADATA) - 4;

        strbuf_put(b, shell.p, (size_t)(p - shell.p) + head);
        strbuf_puts(b, m->participants_json != NULL ? m->participants_json : "[]");
        p += head + 2;
        strbuf_put(b, p, (size_t)(md - p) + mhead);
        strbuf_puts(b, m->metadata_json != NULL ? m->metadata_json : "null");
        strbuf_puts(b, md + mhead + 4);
        rc = b->bad ? -1 : 0;
    }
    strbuf_fini(&shell);
    return rc;
}

int
codec_meeting_append(const struct meeting *m, struct strbuf *b)
{
    struct meeting view = codec_meeting_shell(m);
    json_t *v = codec_meeting_encode(&view);
    int rc = v != NULL ? codec_meeting_shell_append(v, m, b) : -1;

    json_decref(v);
    return rc;
}
