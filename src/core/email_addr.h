/* email_addr.h -- whether a text is an email address tocsin can write into a message header. One
 * check for every address that reaches a message: a participant's email as the API takes it
 * (codec), TOCSIN_SMTP_FROM (config) and each message's From and To (mail). Pure. */
#ifndef TOCSIN_EMAIL_ADDR_H
#define TOCSIN_EMAIL_ADDR_H

#include <stdbool.h>

#define EMAIL_ADDR_MAX 254      /* bytes of a whole address */
#define EMAIL_ADDR_LABEL_MAX 63 /* bytes of one label of its domain (RFC 1035) */

/* Whether s can go into a header as an address, and so whether the API takes it:
 * 1..EMAIL_ADDR_MAX bytes, an RFC 5322 dot-atom of ASCII atext (no leading, trailing or doubled
 * dot), one '@', a host name (labels of letters, digits and inner hyphens, 1..EMAIL_ADDR_LABEL_MAX
 * bytes each). NULL is not an address. */
bool email_addr_ok(const char *s);

#endif
