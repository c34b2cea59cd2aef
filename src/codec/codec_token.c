/* codec_token.c -- the input of POST /v1/browser-tokens: the subject, the scope text (parsed by
 * the caller), a lifetime and the meeting ids a token may be limited to. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_internal.h"

#define CODEC_SCOPE_MAX 100 /* characters of a scope text (all four names need 47) */

static void
decode_mtg(const json_t *doc, struct codec_token_request *out, struct codec_errors *errs)
{
    const json_t *list = json_object_get(doc, "mtg"), *id;
    size_t i;

    if (list == NULL || json_is_null(list))
        return;
    if (!json_is_array(list) || json_array_size(list) == 0 ||
        json_array_size(list) > CODEC_TOKEN_MTG_MAX) {
        codec_add_error(errs, "mtg", "must be an array of 1 to %d meeting ids",
                        CODEC_TOKEN_MTG_MAX);
        return;
    }
    json_array_foreach(list, i, id)
    {
        char field[CODEC_FIELD_NAME_MAX];
        if (!json_is_string(id) || !meeting_id_valid(json_string_value(id))) {
            codec_add_error(errs, codec_item_path(field, "mtg", i, NULL), "must be a meeting id");
            continue;
        }
        snprintf(out->mtg[out->n_mtg++], MEETING_ID_LEN + 1, "%s", json_string_value(id));
    }
}

enum api_error
codec_token_request_decode(const json_t *doc, struct codec_token_request *out,
                           struct codec_errors *errs)
{
    static const char *const known[] = {"sub", "scope", "ttl_s", "mtg", NULL};
    const json_t *sub = json_object_get(doc, "sub"), *scope = json_object_get(doc, "scope");
    const json_t *ttl = json_object_get(doc, "ttl_s");

    memset(out, 0, sizeof *out);
    out->ttl_s = CODEC_TOKEN_TTL_DEFAULT_S;
    errs->n = 0;
    if (!json_is_object(doc)) {
        codec_add_error(errs, "", "the body must be a JSON object");
        return API_E_VALIDATION;
    }
    codec_unknown_fields(doc, known, "", errs);
    if (sub == NULL)
        codec_add_error(errs, "sub", "is required");
    else if (codec_text_ok(sub, "sub", 1, PARTICIPANT_ID_MAX, false, errs))
        out->sub = strdup(json_string_value(sub));
    if (scope == NULL)
        codec_add_error(errs, "scope", "is required");
    else if (codec_text_ok(scope, "scope", 0, CODEC_SCOPE_MAX, false, errs))
        out->scope = strdup(json_string_value(scope));
    if (ttl != NULL && (!json_is_integer(ttl) || json_integer_value(ttl) < 1 ||
                        json_integer_value(ttl) > CODEC_TOKEN_TTL_MAX_S))
        codec_add_error(errs, "ttl_s", "must be an integer from 1 to %d", CODEC_TOKEN_TTL_MAX_S);
    else if (ttl != NULL)
        out->ttl_s = json_integer_value(ttl);
    decode_mtg(doc, out, errs);
    return errs->n == 0 ? API_E_NONE : API_E_VALIDATION;
}

void
codec_token_request_fini(struct codec_token_request *r)
{
    free(r->sub);
    free(r->scope);
    r->sub = r->scope = NULL;
}
