/* codec_webhook.c -- the input of POST /v1/webhooks: its shape, lengths and characters. What the
 * URL may name (scheme, host, addresses) is webhook.c's to check. */
#include <stdlib.h>
#include <string.h>

#include "codec_internal.h"

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
