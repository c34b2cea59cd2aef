/* api_errors.h -- enum api_error generated from api_errors.def, plus lookups.
 * Pure data: codec and the HTTP layers return these codes, http_reply turns them into
 * problem+json. */
#ifndef TOCSIN_API_ERRORS_H
#define TOCSIN_API_ERRORS_H

enum api_error {
#define X(name, status, title) API_E_##name,
#include "api_errors.def"
#undef X
    API_E__COUNT
};

/* HTTP status of an error. */
unsigned api_errors_status(enum api_error e);
/* Human title of an error (static string). */
const char *api_errors_title(enum api_error e);
/* Machine code of an error, lower snake case, e.g. "meeting_not_found" (static string). */
const char *api_errors_code(enum api_error e);

#endif
