/* codec_webhook.c -- the input of POST /v1/webhooks: its shape, lengths and characters (what the
 * URL may name, scheme, host and addresses, is webhook.c's to check); and the body of a
 * webhook's recover. */
#include <stdlib.h>
#include <string.h>

#include "codec_internal.h"
#include "timefmt.h"

enum api_error
codec_webhook_decode(const json_t *doc, char **url, char **description, struct codec_errors *errs)
{
    static const char *const known[] = {"url", "description", NULL};
    const json_t *u = json_object_get(doc, "url");

    *url = *description = NULL;
    if (!json_is_object(doc)) {
        codec_add_error(errs, "", "must be a JSON object");
        return API_E_VALIDATION;
    }
    codec_unknown_fields(doc, known, "", errs);
    if (u == NULL)
        codec_add_error(errs, "url", "is required");
    else if (codec_text_ok(u, "url", 1, CODEC_URL_MAX, false, errs))
        *url = strdup(json_string_value(u));
    codec_opt_text(doc, "description", CODEC_WEBHOOK_DESCRIPTION_MAX, false, description, errs);
    return errs->n == 0 ? API_E_NONE : API_E_VALIDATION;
}

enum api_error
codec_webhook_patch_decode(const json_t *doc, char **url, char **description, bool *set_description,
                           int *disabled, struct codec_errors *errs)
{
    static const char *const known[] = {"url", "description", "disabled", NULL};
    const json_t *u = json_object_get(doc, "url"), *off = json_object_get(doc, "disabled");

    *url = *description = NULL;
    *set_description = false;
    *disabled = -1;
    if (!json_is_object(doc)) {
        codec_add_error(errs, "", "must be a JSON object");
        return API_E_VALIDATION;
    }
    codec_unknown_fields(doc, known, "", errs);
    if (u != NULL && codec_text_ok(u, "url", 1, CODEC_URL_MAX, false, errs))
        *url = strdup(json_string_value(u));
    if (json_object_get(doc, "description") != NULL) {
        *set_description = true;
        codec_opt_text(doc, "description", CODEC_WEBHOOK_DESCRIPTION_MAX, false, description, errs);
    }
    if (off != NULL && !json_is_boolean(off))
        codec_add_error(errs, "disabled", "must be true or false");
    else if (off != NULL)
        *disabled = json_is_true(off) ? 1 : 0;
    return errs->n == 0 ? API_E_NONE : API_E_VALIDATION;
}

enum api_error
codec_webhook_recover_decode(const json_t *doc, int64_t now_ms, int64_t *since_ms,
                             struct codec_errors *errs)
{
    static const char *const known[] = {"since", NULL};
    const json_t *v = json_object_get(doc, "since");
    const char *text = json_string_value(v);

    if (!json_is_object(doc)) {
        codec_add_error(errs, "", "must be a JSON object");
        return API_E_VALIDATION;
    }
    codec_unknown_fields(doc, known, "", errs);
    if (v == NULL)
        codec_add_error(errs, "since", "is required");
    else if (text == NULL || timefmt_parse(text, json_string_length(v), since_ms) != 0)
        codec_add_error(errs, "since",
                        "must be an RFC 3339 date-time with an offset, e.g. 2030-01-14T09:00:00Z");
    else if (*since_ms > now_ms)
        codec_add_error(errs, "since", "must not be in the future");
    return errs->n == 0 ? API_E_NONE : API_E_VALIDATION;
}
