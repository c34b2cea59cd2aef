/* browser_writes.c -- the bounds of browser_writes.h on a browser token's meeting writes. Both
 * meetings' participants come as their stored JSON text, parsed here once per check. */
#include "browser_writes.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* The reminders of m with the email channel. */
static size_t
email_reminders(const struct meeting *m)
{
    size_t n = 0;

    for (size_t i = 0; m != NULL && i < m->n_reminders; i++)
        n += (m->reminders[i].channels & CHANNEL_EMAIL) != 0;
    return n;
}

/* Whether m has a reminder minutes_before with the email channel. */
static bool
emails_at(const struct meeting *m, int minutes_before)
{
    for (size_t i = 0; m != NULL && i < m->n_reminders; i++)
        if (m->reminders[i].minutes_before == minutes_before &&
            (m->reminders[i].channels & CHANNEL_EMAIL))
            return true;
    return false;
}

/* Whether a participant in list has the address addr. */
static bool
listed(const json_t *list, const char *addr)
{
    size_t i;
    json_t *p;

    json_array_foreach(list, i, p)
    {
        const char *a = json_string_value(json_object_get(p, "email"));
        if (a != NULL && strcmp(a, addr) == 0)
            return true;
    }
    return false;
}

/* The email channel on a reminder where cur had none: names the first such reminder of next. */
static enum api_error
refuse_channel(const struct meeting *cur, const struct meeting *next, struct codec_errors *errs)
{
    char msg[CODEC_MESSAGE_MAX];
    int minutes = next->reminders[0].minutes_before;

    for (size_t i = 0; i < next->n_reminders; i++)
        if ((next->reminders[i].channels & CHANNEL_EMAIL) &&
            !emails_at(cur, next->reminders[i].minutes_before)) {
            minutes = next->reminders[i].minutes_before;
            break;
        }
    snprintf(msg, sizeof msg,
             "the reminder %d minutes before: browser tokens cannot add the email channel "
             "(TOCSIN_BROWSER_EMAIL is off)",
             minutes);
    codec_add_error(errs, "reminders", "%s", msg);
    return API_E_BROWSER_EMAIL_DISABLED;
}

/* TOCSIN_BROWSER_EMAIL=0: no more email reminders than cur had, and while there is one, no
 * address that cur would not mail. was and now: cur's and next's participants. */
static enum api_error
check_email(const struct meeting *cur, const struct meeting *next, const json_t *was,
            const json_t *now, struct codec_errors *errs)
{
    char field[CODEC_FIELD_NAME_MAX];
    size_t had = email_reminders(cur), has = email_reminders(next), i;
    json_t *p;

    if (has > had)
        return refuse_channel(cur, next, errs);
    if (has == 0)
        return API_E_NONE;
    json_array_foreach(now, i, p)
    {
        const char *addr = json_string_value(json_object_get(p, "email"));
        if (addr == NULL || listed(was, addr))
            continue;
        snprintf(field, sizeof field, "participants[%zu].email", i);
        codec_add_error(errs, field,
                        "a reminder mails it: browser tokens cannot add an address to mail "
                        "(TOCSIN_BROWSER_EMAIL is off)");
        return API_E_BROWSER_EMAIL_DISABLED;
    }
    return API_E_NONE;
}

static json_t *
participants_of(const struct meeting *m)
{
    return json_loads(m != NULL && m->participants_json ? m->participants_json : "[]", 0, NULL);
}

enum api_error
browser_writes_check(const struct config *cfg, const struct meeting *cur,
                     const struct meeting *next, struct codec_errors *errs)
{
    json_t *was = participants_of(cur), *now = participants_of(next);
    enum api_error e = API_E_NONE;
    char msg[CODEC_MESSAGE_MAX];

    if (was == NULL || now == NULL) {
        e = API_E_INTERNAL;
    } else if (json_array_size(now) > (size_t)cfg->browser_participants_max &&
               json_array_size(now) > json_array_size(was)) {
        snprintf(msg, sizeof msg,
                 "at most %d in a meeting a browser token writes "
                 "(TOCSIN_BROWSER_PARTICIPANTS_MAX), or no more than it had",
                 cfg->browser_participants_max);
        codec_add_error(errs, "participants", "%s", msg);
        e = API_E_VALIDATION;
    } else if (!cfg->browser_email) {
        e = check_email(cur, next, was, now, errs);
    }
    json_decref(was);
    json_decref(now);
    return e;
}
