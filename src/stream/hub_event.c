/* hub_event.c -- one stream event as the hub keeps it (hub_internal.h): built once from a read
 * (its audience parsed, its SSE frame made for every stream that gets it) and matched to each
 * stream's participant and meeting filter. Pure: no lock, no I/O. */
#include "hub_internal.h"

#include <stdlib.h>
#include <string.h>

#include "codec.h"

void
hub_event_clear(struct hub_event *e)
{
    codec_string_list_free(e->audience, e->n_audience);
    free(e->frame);
    memset(e, 0, sizeof *e);
}

int
hub_event_fill(struct hub_event *e, const struct db_stream_event *ev, char *body_steal)
{
    memset(e, 0, sizeof *e);
    e->seq = ev->seq;
    memcpy(e->meeting_id, ev->meeting_id, sizeof e->meeting_id);
    if (codec_string_list_parse(ev->audience_json, &e->audience, &e->n_audience) != 0) {
        free(body_steal);
        return -1;
    }
    if (body_steal != NULL) {
        const char *name = ev->kind == DB_STREAM_INBOX ? "inbox" : "reminder";

        e->frame = sse_frame_event(ev->seq, name, body_steal, strlen(body_steal), &e->frame_len);
        free(body_steal);
        if (e->frame == NULL)
            return -1;
    }
    return 0;
}

static int
cmp_sub(const void *key, const void *elem)
{
    return strcmp(key, *(char *const *)elem);
}

bool
hub_event_matches(const struct hub_event *e, const char *sub, char (*mtg)[MEETING_ID_LEN + 1],
                  size_t n_mtg)
{
    if (e->frame == NULL ||
        bsearch(sub, e->audience, e->n_audience, sizeof *e->audience, cmp_sub) == NULL)
        return false;
    if (n_mtg == 0)
        return true;
    for (size_t i = 0; i < n_mtg; i++)
        if (strcmp(mtg[i], e->meeting_id) == 0)
            return true;
    return false;
}
