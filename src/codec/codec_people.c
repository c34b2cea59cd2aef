/* codec_people.c -- a meeting's participants parsed once for lookup (codec.h's "people"): a
 * delivery worker asks, for each of a reminder's rows, whether its recipient is still in the
 * meeting and by what name. Parsing the participants' JSON for every row made a burst to the 500
 * participants of one meeting quadratic: half of a worker's time went to json_loads. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"

struct person {
    const char *id, *name; /* borrowed from list; name NULL when the participant has none */
};

struct codec_people {
    json_t *list;      /* the parsed participants, which own the strings */
    const char *owner; /* the organizer's id (borrowed from the meeting), or NULL */
    size_t n;
    struct person p[]; /* sorted by id */
};

static int
by_id(const void *a, const void *b)
{
    return strcmp(((const struct person *)a)->id, ((const struct person *)b)->id);
}

struct codec_people *
codec_people_parse(const struct meeting *m)
{
    json_t *list = json_loads(m->participants_json ? m->participants_json : "[]", 0, NULL), *v;
    size_t cap = json_is_array(list) ? json_array_size(list) : 0, i;
    struct codec_people *ps = list != NULL ? malloc(sizeof *ps + cap * sizeof ps->p[0]) : NULL;

    if (ps == NULL) {
        json_decref(list);
        return NULL;
    }
    ps->list = list;
    ps->owner = m->organizer_id;
    ps->n = 0;
    json_array_foreach(list, i, v)
    {
        const char *id = json_string_value(json_object_get(v, "id"));
        if (id != NULL)
            ps->p[ps->n++] = (struct person){id, json_string_value(json_object_get(v, "name"))};
    }
    qsort(ps->p, ps->n, sizeof ps->p[0], by_id);
    return ps;
}

void
codec_people_free(struct codec_people *ps)
{
    if (ps == NULL)
        return;
    json_decref(ps->list);
    free(ps);
}

bool
codec_people_participant(const struct codec_people *ps, const char *person_id, const char **name)
{
    struct person key = {person_id, NULL};
    const struct person *p = bsearch(&key, ps->p, ps->n, sizeof ps->p[0], by_id);

    if (name != NULL)
        *name = p != NULL ? p->name : NULL;
    return p != NULL;
}

bool
codec_people_has(const struct codec_people *ps, const char *person_id)
{
    return (ps->owner != NULL && strcmp(ps->owner, person_id) == 0) ||
           codec_people_participant(ps, person_id, NULL);
}

bool
codec_people_in_meeting(const struct meeting *m, const char *person_id)
{
    if (m->organizer_id != NULL && strcmp(m->organizer_id, person_id) == 0)
        return true; /* no need to parse */
    struct codec_people *ps = codec_people_parse(m);
    bool has = ps != NULL && codec_people_has(ps, person_id);

    codec_people_free(ps);
    return has;
}
