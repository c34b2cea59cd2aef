/* mail.c -- the message of mail.h, written into a growing buffer. The local start time comes from
 * tz.c; encodings from b64.c; the Message-ID's participant part is a digest (crypto.c), so any id
 * fits it. */
#include "mail.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "crypto.h"
#include "email_addr.h"
#include "hex.h"
#include "strbuf.h"
#include "timefmt.h"
#include "tz.h"

#define LINE_MAX_B64 76 /* characters of a base64 body line (RFC 2045) */
#define WORD_RAW_MAX 45 /* bytes per encoded-word: 60 base64 characters, 73 on its line */
/* The first word shares its line with "Subject: ", the longest name before one: 52 base64
 * characters, 73 on the line. */
#define WORD_FIRST_RAW_MAX 39
#define ICS_LINE_MAX 75 /* octets of an iCalendar line before it is folded (RFC 5545) */
/* The plain text and the calendar may each take TEXT_MAX * 4 bytes before encoding: room for a
 * meeting's title, location and description (5,700 characters) even in 4-byte UTF-8, escaped and
 * folded. */
#define TEXT_MAX 16384
/* "Reminder: ", a title of 200 characters (800 bytes), the time and zone. */
#define SUBJECT_MAX 1024

/* RFC 5322 section 2.1.1: a line must not pass 998 characters. A List-Unsubscribe line that
 * would is folded inside its angle brackets, where RFC 2369 section 2 has whitespace ignored. */
#define HEADER_LINE_MAX 998
#define FOLD_CHUNK 76 /* characters of the link on each line of a folded one */

/* Bytes of the participant's SHA-256 in the Message-ID: enough to tell a meeting's participants
 * apart, and the id stays short. */
#define MAIL_ID_DIGEST_BYTES 8

/* "<occurrence id>.<hex digest>" with its NUL. */
_Static_assert(OCCURRENCE_ID_MAX + HEX_ENCODED_LEN(MAIL_ID_DIGEST_BYTES) + 1 <= MAIL_ID_MAX,
               "MAIL_ID_MAX holds the occurrence id, a dot and the digest");

/* ---- ids ------------------------------------------------------------------------------------ */

void
mail_message_id(const struct occurrence *o, const char *participant_id, char out[MAIL_ID_MAX])
{
    uint8_t d[CRYPTO_SHA256_LEN];
    char occ[OCCURRENCE_ID_MAX];

    crypto_sha256(participant_id, strlen(participant_id), d);
    meeting_occurrence_id(o->reminder_id, o->fire_at_ms, occ);
    char tag[HEX_ENCODED_LEN(MAIL_ID_DIGEST_BYTES) + 1];

    hex_encode(d, MAIL_ID_DIGEST_BYTES, tag);
    snprintf(out, MAIL_ID_MAX, "%s.%s", occ, tag);
}

/* ---- encodings ------------------------------------------------------------------------------- */

/* Bytes of s that end on a character boundary, at most max. */
static size_t
utf8_cut(const char *s, size_t len, size_t max)
{
    if (len <= max)
        return len;
    while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80)
        max--;
    return max;
}

/* The characters a header's text must not carry decoded, as UTF-8 byte ranges of one length:
 * C0 controls and DEL (CR and LF among them), C1 controls (NEL), and the invisible format
 * characters that reorder or hide what a reader sees: the Arabic letter mark, the Mongolian vowel
 * separator, zero-width spaces and joiners, LRM and RLM, the line and paragraph separators
 * (U+2028, U+2029), the bidi embeddings and overrides (U+202A-202E) and isolates
 * (U+2066-2069), invisible operators, the BOM and the interlinear annotations. A display name
 * "Eve<U+2028>Bcc: evil@evil.example" or one reversed by U+202E spoofs what a mail program
 * shows. */
static const struct {
    unsigned char lead[3]; /* the bytes before the last */
    unsigned char lo, hi;  /* the last byte's range */
    size_t len;
} spoofing[] = {
    {{0}, 0x00, 0x1f, 1},          {{0}, 0x7f, 0x7f, 1}, {{0xc2}, 0x80, 0x9f, 2}, /* U+0080-009F */
    {{0xd8}, 0x9c, 0x9c, 2},                                                      /* U+061C */
    {{0xe1, 0xa0}, 0x8e, 0x8e, 3},                                                /* U+180E */
    {{0xe2, 0x80}, 0x8b, 0x8f, 3},                                                /* U+200B-200F */
    {{0xe2, 0x80}, 0xa8, 0xae, 3},                                                /* U+2028-202E */
    {{0xe2, 0x81}, 0xa0, 0xaf, 3},                                                /* U+2060-206F */
    {{0xef, 0xbb}, 0xbf, 0xbf, 3},                                                /* U+FEFF */
    {{0xef, 0xbf}, 0xb9, 0xbb, 3},                                                /* U+FFF9-FFFB */
};

/* The length of the spoofing character at s (len bytes left), 0 when there is none. */
static size_t
spoofing_at(const unsigned char *s, size_t len)
{
    for (size_t i = 0; i < sizeof spoofing / sizeof spoofing[0]; i++) {
        size_t n = spoofing[i].len;
        if (n <= len && memcmp(s, spoofing[i].lead, n - 1) == 0 && s[n - 1] >= spoofing[i].lo &&
            s[n - 1] <= spoofing[i].hi)
            return n;
    }
    return 0;
}

/* A copy of text with each spoofing character a space (malloc'ed; NULL when out of memory), its
 * length in *n. */
static char *
blanked(const char *text, size_t *n_out)
{
    size_t len = strlen(text), k = 0;
    char *out = malloc(len + 1);

    for (size_t at = 0; out != NULL && at < len;) {
        size_t n = spoofing_at((const unsigned char *)text + at, len - at);
        out[k++] = n > 0 ? ' ' : text[at];
        at += n > 0 ? n : 1;
    }
    if (out != NULL)
        out[k] = '\0';
    *n_out = k;
    return out;
}

/* text as RFC 2047 encoded-words after "Name: ", the first on the header's line and each other on
 * a continuation line of its own, so that no line with an encoded-word passes 76 characters (RFC
 * 2047 section 2), the header's name included. Control and format characters (spoofing[]) become
 * spaces: encoded, they could not break the header, but a reader decodes them into the header's
 * value, and mail programs refuse or mangle a name or subject with a line break in it, or show
 * one reordered by a bidi override. */
static void
put_words(struct strbuf *b, const char *text)
{
    char enc[B64_ENCODED_LEN(WORD_RAW_MAX) + 1];
    size_t len, at = 0;
    char *clean = blanked(text, &len);

    if (clean == NULL)
        b->bad = true;
    while (at < len) {
        size_t n = utf8_cut(clean + at, len - at, at == 0 ? WORD_FIRST_RAW_MAX : WORD_RAW_MAX);
        if (n == 0)
            n = 1; /* never stuck on a broken sequence */
        enc[b64_encode(clean + at, n, enc)] = '\0';
        strbuf_printf(b, "%s=?UTF-8?B?%s?=", at > 0 ? "\r\n " : "", enc);
        at += n;
    }
    free(clean);
}

/* data as base64 lines of LINE_MAX_B64 characters. */
static void
put_base64(struct strbuf *b, const char *data, size_t len)
{
    char enc[LINE_MAX_B64 + 1];

    for (size_t at = 0; at < len; at += LINE_MAX_B64 / 4 * 3) {
        size_t n = len - at < LINE_MAX_B64 / 4 * 3 ? len - at : LINE_MAX_B64 / 4 * 3;
        enc[b64_encode(data + at, n, enc)] = '\0';
        strbuf_printf(b, "%s\r\n", enc);
    }
}

/* One iCalendar content line "name:value" with the value's text escaped (RFC 5545 3.3.11) and the
 * line folded at ICS_LINE_MAX octets on character boundaries. */
static void
put_ics(struct strbuf *b, const char *name, const char *value, bool text)
{
    struct strbuf line = {.max = MAIL_MESSAGE_MAX};
    size_t at = 0;

    strbuf_puts(&line, name);
    strbuf_put(&line, ":", 1);
    for (const char *p = value; *p != '\0'; p++) {
        unsigned char c = (unsigned char)*p;
        if (text && (c == '\\' || c == ';' || c == ','))
            strbuf_put(&line, "\\", 1);
        /* A line break (CRLF, LF or a lone CR) is the escape \n; other control characters,
         * which RFC 5545 does not allow in text, are left out. */
        if (text && (c == '\n' || (c == '\r' && p[1] != '\n')))
            strbuf_put(&line, "\\n", 2);
        else if ((c >= 0x20 && c != 0x7f) || c == '\t')
            strbuf_put(&line, p, 1);
    }
    while (!line.bad && at < line.len) {
        size_t max = at == 0 ? ICS_LINE_MAX : ICS_LINE_MAX - 1;
        size_t n = utf8_cut(line.p + at, line.len - at, max);
        if (n == 0)
            n = 1;
        if (at > 0)
            strbuf_put(b, " ", 1);
        strbuf_put(b, line.p + at, n);
        strbuf_put(b, "\r\n", 2);
        at += n;
    }
    b->bad |= line.bad;
    free(line.p);
}

static void
ics_time(char out[32], int64_t ms)
{
    struct tz_local t;

    if (tz_local(NULL, ms, &t) != 0)
        t = (struct tz_local){0};
    snprintf(out, 32, "%04d%02d%02dT%02d%02d%02dZ", t.year, t.month, t.day, t.hour, t.minute,
             t.second);
}

/* ---- the parts ------------------------------------------------------------------------------- */

static const char *
zone_of(const struct meeting *m)
{
    return m->time_zone != NULL ? m->time_zone : "UTC";
}

/* The event's UID: the meeting's id, and for one occurrence of a series also its original start,
 * so that each occurrence is an event of its own in a calendar (they share the series' id, and a
 * calendar that imports an event with a UID it has replaces the older one). */
static void
calendar_uid(const struct meeting *m, char uid[MEETING_ID_LEN + 48])
{
    char t[32];

    if (!m->is_occurrence) {
        snprintf(uid, MEETING_ID_LEN + 48, "%s@tocsin", m->id);
        return;
    }
    ics_time(t, m->original_start_ms);
    snprintf(uid, MEETING_ID_LEN + 48, "%s-%s@tocsin", m->id, t);
}

static void
calendar(struct strbuf *b, const struct mail_input *in)
{
    const struct meeting *m = in->m;
    char t[32], uid[MEETING_ID_LEN + 48];

    strbuf_puts(b, "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//tocsin//reminders//EN\r\n"
                   "METHOD:PUBLISH\r\nBEGIN:VEVENT\r\n");
    calendar_uid(m, uid);
    put_ics(b, "UID", uid, false);
    ics_time(t, in->now_ms);
    put_ics(b, "DTSTAMP", t, false);
    ics_time(t, m->starts_at_ms);
    put_ics(b, "DTSTART", t, false);
    if (m->has_ends_at) {
        ics_time(t, m->ends_at_ms);
        put_ics(b, "DTEND", t, false);
    }
    put_ics(b, "SUMMARY", m->title ? m->title : "", true);
    if (m->location != NULL)
        put_ics(b, "LOCATION", m->location, true);
    if (m->description != NULL)
        put_ics(b, "DESCRIPTION", m->description, true);
    strbuf_puts(b, "END:VEVENT\r\nEND:VCALENDAR\r\n");
}

/* text with each of its line breaks (CRLF, LF or a lone CR) as CRLF, the only one a text part
 * may have (RFC 2046 section 4.1.1), also once it is base64. */
static void
put_lines(struct strbuf *b, const char *text)
{
    for (const char *p = text; *p != '\0'; p++) {
        if (*p == '\r' || *p == '\n') {
            strbuf_put(b, "\r\n", 2);
            p += p[0] == '\r' && p[1] == '\n';
        } else {
            strbuf_put(b, p, 1);
        }
    }
}

static int
plain_text(struct strbuf *b, const struct mail_input *in, const struct tz_local *start)
{
    const struct meeting *m = in->m;
    struct tz_local end;
    int minutes = 0;

    for (size_t i = 0; i < m->n_reminders; i++)
        if (m->reminders[i].id == in->o.reminder_id)
            minutes = m->reminders[i].minutes_before;
    put_lines(b, m->title ? m->title : "");
    strbuf_printf(b, "\r\n\r\nStarts: %04d-%02d-%02d %02d:%02d (%s)\r\n", start->year, start->month,
                  start->day, start->hour, start->minute, zone_of(m));
    if (m->has_ends_at && tz_local(m->time_zone, m->ends_at_ms, &end) == 0)
        strbuf_printf(b, "Ends:   %04d-%02d-%02d %02d:%02d (%s)\r\n", end.year, end.month, end.day,
                      end.hour, end.minute, zone_of(m));
    if (m->location != NULL) {
        strbuf_puts(b, "Where:  ");
        put_lines(b, m->location);
        strbuf_puts(b, "\r\n");
    }
    if (m->description != NULL) {
        strbuf_puts(b, "\r\n");
        put_lines(b, m->description);
        strbuf_puts(b, "\r\n");
    }
    strbuf_printf(b, "\r\nThis reminder was sent %d minutes before the meeting starts.\r\n",
                  minutes);
    if (in->unsubscribe_url != NULL)
        strbuf_printf(b, "\r\nTo get no more reminder emails: %s\r\n", in->unsubscribe_url);
    return b->bad ? -1 : 0;
}

/* List-Unsubscribe with its one link, on one line when it fits HEADER_LINE_MAX, and the
 * List-Unsubscribe-Post that makes it one-click (RFC 8058 section 3). */
static void
unsubscribe_headers(struct strbuf *b, const char *url)
{
    static const char name[] = "List-Unsubscribe: <";
    size_t n = strlen(url);

    strbuf_puts(b, name);
    if (sizeof name - 1 + n + 1 <= HEADER_LINE_MAX) {
        strbuf_put(b, url, n);
    } else {
        for (size_t at = 0; at < n; at += FOLD_CHUNK)
            strbuf_printf(b, "%s%.*s", at > 0 ? "\r\n " : "",
                          (int)(n - at < FOLD_CHUNK ? n - at : FOLD_CHUNK), url + at);
    }
    strbuf_puts(b, ">\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n");
}

/* An unsubscribe link mail_message may write into a header: see mail_input. */
static bool
unsubscribe_url_ok(const char *url)
{
    size_t n = strlen(url);

    if (n == 0 || n > MAIL_UNSUBSCRIBE_URL_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (url[i] <= ' ' || url[i] > '~' || url[i] == '<' || url[i] == '>')
            return false;
    return true;
}

static void
headers(struct strbuf *b, const struct mail_input *in, const struct tz_local *start,
        const char *boundary)
{
    char id[MAIL_ID_MAX], date[64], subject[SUBJECT_MAX];
    const char *domain = strchr(in->from, '@') + 1;
    static const char *const days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                         "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    struct tz_local now;

    tz_local(NULL, in->now_ms, &now);
    /* 1970-01-01 was a Thursday. */
    int64_t day = in->now_ms / 86400000;
    snprintf(date, sizeof date, "%s, %02d %s %04d %02d:%02d:%02d +0000", days[(day + 4) % 7],
             now.day, months[(now.month - 1) % 12], now.year, now.hour, now.minute, now.second);
    mail_message_id(&in->o, in->participant_id, id);
    strbuf_printf(b, "From: %s\r\nTo: ", in->from);
    if (in->name != NULL && in->name[0] != '\0') {
        put_words(b, in->name);
        strbuf_put(b, "\r\n", 2); /* the address on a line of its own, with no encoded-word */
    }
    strbuf_printf(b, "%s<%s>\r\nDate: %s\r\nMessage-ID: <%s@%s>\r\nSubject: ",
                  in->name != NULL && in->name[0] != '\0' ? " " : "", in->address, date, id,
                  domain);
    snprintf(subject, sizeof subject, "Reminder: %s at %02d:%02d %s",
             in->m->title ? in->m->title : "", start->hour, start->minute, zone_of(in->m));
    put_words(b, subject);
    strbuf_puts(b, "\r\n");
    if (in->unsubscribe_url != NULL)
        unsubscribe_headers(b, in->unsubscribe_url);
    strbuf_printf(b,
                  "MIME-Version: 1.0\r\nAuto-Submitted: auto-generated\r\n"
                  "Content-Type: multipart/mixed; boundary=\"%s\"\r\n\r\n",
                  boundary);
}

char *
mail_message(const struct mail_input *in, const char **why)
{
    struct strbuf b = {.max = MAIL_MESSAGE_MAX}, text = {.max = MAIL_MESSAGE_MAX},
                  ics = {.max = MAIL_MESSAGE_MAX};
    struct tz_local start;
    char boundary[MAIL_ID_MAX + 16];

    if (!email_addr_ok(in->address) || !email_addr_ok(in->from)) {
        *why = "the address cannot be written into a header";
        return NULL;
    }
    if (in->unsubscribe_url != NULL && !unsubscribe_url_ok(in->unsubscribe_url)) {
        *why = "the unsubscribe link cannot be written into a header";
        return NULL;
    }
    if (tz_local(in->m->time_zone, in->m->starts_at_ms, &start) != 0) {
        *why = "the meeting's time zone is unknown";
        return NULL;
    }
    mail_message_id(&in->o, in->participant_id, boundary + snprintf(boundary, 16, "tocsin-"));
    headers(&b, in, &start, boundary);
    plain_text(&text, in, &start);
    calendar(&ics, in);
    strbuf_printf(&b,
                  "--%s\r\nContent-Type: text/plain; charset=utf-8\r\n"
                  "Content-Transfer-Encoding: base64\r\n\r\n",
                  boundary);
    put_base64(&b, text.p ? text.p : "", text.len);
    strbuf_printf(&b,
                  "--%s\r\nContent-Type: text/calendar; charset=utf-8; method=PUBLISH\r\n"
                  "Content-Transfer-Encoding: base64\r\n"
                  "Content-Disposition: attachment; filename=\"meeting.ics\"\r\n\r\n",
                  boundary);
    put_base64(&b, ics.p ? ics.p : "", ics.len);
    strbuf_printf(&b, "--%s--\r\n", boundary);
    bool bad = b.bad || text.bad || ics.bad || text.len > TEXT_MAX * 4 || ics.len > TEXT_MAX * 4;
    free(text.p);
    free(ics.p);
    if (bad) {
        free(b.p);
        *why = "the message would be too large (or out of memory)";
        return NULL;
    }
    return b.p;
}
