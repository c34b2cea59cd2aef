/* browser_writes.h -- what a browser token may write into a meeting, beyond its scope: a token is
 * a signed-in user's page, which anyone can script, so what it writes must not make tocsin a
 * mailer for anyone's text (adversary N7: one POST mailed 250 messages to outside addresses).
 *   TOCSIN_BROWSER_EMAIL=0 (the default): no email comes of a token's write. It may not put the
 *     email channel on more reminders than the meeting had, nor, while a reminder has it, add an
 *     address that the meeting as it was would not mail. A meeting the tenant's server made with
 *     email stays editable by its organizer, who can keep or drop what the server chose.
 *   TOCSIN_BROWSER_PARTICIPANTS_MAX (50): a token's write leaves at most that many participants,
 *     or no more than the meeting already had.
 * API keys are the tenant's servers: none of this applies to them. */
#ifndef TOCSIN_BROWSER_WRITES_H
#define TOCSIN_BROWSER_WRITES_H

#include "api_errors.h"
#include "codec.h"
#include "config.h"
#include "meeting.h"

/* Checks next, the meeting as a browser token's create (cur NULL) or change (cur: as it is now)
 * would leave it. API_E_NONE; API_E_VALIDATION (field "participants") over the participant bound;
 * API_E_BROWSER_EMAIL_DISABLED with errs naming the field ("reminders", "participants[2].email")
 * and what to do; API_E_INTERNAL when out of memory. errs must be empty on entry. */
enum api_error browser_writes_check(const struct config *cfg, const struct meeting *cur,
                                    const struct meeting *next, struct codec_errors *errs);

#endif
