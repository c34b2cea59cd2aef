/* mail.h -- the reminder email (docs/design.md section 8): one RFC 5322 message per participant, a
 * multipart/mixed of a plain-text body and an .ics attachment (RFC 5545, METHOD:PUBLISH, one
 * VEVENT). Every byte that comes from input travels base64-encoded (the body, the attachment) or
 * as an RFC 2047 encoded-word (the subject and the display name), so no input can add a header
 * or break the MIME structure; the address itself must be plain atext@domain (email_addr.h).
 * With an unsubscribe link the message carries List-Unsubscribe and List-Unsubscribe-Post (RFC
 * 2369, RFC 8058) and the body says where the link leads. Pure. */
#ifndef TOCSIN_MAIL_H
#define TOCSIN_MAIL_H

#include <stddef.h>
#include <stdint.h>

#include "meeting.h"

#define MAIL_MESSAGE_MAX (256 * 1024) /* bytes of one message, attachment included */

struct mail_input {
    const struct meeting *m;
    struct occurrence o;        /* which reminder, and when it fired */
    const char *participant_id; /* whom it is for: names the Message-ID */
    const char *name;           /* the participant's name, or NULL */
    const char *address;        /* the participant's address */
    const char *from;           /* TOCSIN_SMTP_FROM */
    int64_t now_ms;             /* Date and DTSTAMP */
    /* The participant's one-click unsubscribe link (RFC 8058), printable ASCII without blanks or
     * angle brackets, at most MAIL_UNSUBSCRIBE_URL_MAX bytes; NULL: no List-Unsubscribe. */
    const char *unsubscribe_url;
};

/* Bytes of an unsubscribe link: TOCSIN_PUBLIC_URL, the path and a token (unsub.h). */
#define MAIL_UNSUBSCRIBE_URL_MAX 2048

/* The message for in, with CRLF line ends, as a malloc'ed NUL-terminated string (free() it); its
 * Message-ID is stable for (occurrence, participant), so a retry is recognisably the same
 * message. NULL with a reason in why (static text) when an address is not usable, the zone is
 * unknown, the message would be too large, or out of memory. */
char *mail_message(const struct mail_input *in, const char **why);
/* The Message-ID's local part for (occurrence, participant) into out (MAIL_ID_MAX bytes). */
#define MAIL_ID_MAX 96
void mail_message_id(const struct occurrence *o, const char *participant_id, char out[MAIL_ID_MAX]);

#endif
