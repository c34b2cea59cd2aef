/* http_accept.h -- Accept header negotiation (RFC 9110, section 12.5.1), pure and in one pass: it
 * runs before authentication, so its cost must stay linear in the header's length whatever a
 * client sends. */
#ifndef TOCSIN_HTTP_ACCEPT_H
#define TOCSIN_HTTP_ACCEPT_H

#include <stdbool.h>

/* Whether a client sending this Accept value takes application/json (the routes that ask answer
 * JSON or problem+json; those with other bodies are ROUTE_ANY_ACCEPT). NULL (no header) accepts
 * anything; a range with q=0 is a refusal. One pass over accept: O(strlen(accept)). */
bool http_accept_json(const char *accept);

#endif
