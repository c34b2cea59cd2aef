/* codec_string.c -- JSON arrays of strings as the database stores them: a stream event's audience
 * read back for many lookups (sorted, for bsearch), and the texts of a batch (the failures a
 * delivery worker records) written as one statement parameter. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int
codec_string_list_parse(const char *json, char ***out, size_t *n)
{
    json_t *a = json_loads(json, 0, NULL), *v;
    size_t i, len = json_array_size(a);
    char **list = calloc(len ? len : 1, sizeof *list);

    *out = NULL;
    *n = 0;
    if (!json_is_array(a) || list == NULL)
        goto fail;
    json_array_foreach(a, i, v)
    {
        if (!json_is_string(v) || (list[i] = strdup(json_string_value(v))) == NULL)
            goto fail;
    }
    qsort(list, len, sizeof *list, cmp_str);
    json_decref(a);
    *out = list;
    *n = len;
    return 0;
fail:
    codec_string_list_free(list, len);
    json_decref(a);
    return -1;
}

void
codec_string_list_free(char **v, size_t n)
{
    for (size_t i = 0; v != NULL && i < n; i++)
        free(v[i]);
    free(v);
}

char *
codec_string_array(const char *const *v, size_t n)
{
    json_t *a = json_array();
    char *text = NULL;
    bool bad = a == NULL;

    for (size_t i = 0; i < n && !bad; i++)
        bad = json_array_append_new(a, v[i] != NULL ? json_string(v[i]) : json_null()) != 0;
    if (!bad)
        text = codec_dump(a);
    json_decref(a);
    return text;
}
