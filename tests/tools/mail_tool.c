/* mail_tool.c -- the C side of the email check (tests/property/mail_check.py): for each input line,
 * a JSON object {"id"?, "title", "description"?, "location"?, "time_zone"?, "starts_at_ms",
 * "ends_at_ms"?, "original_start_ms"? (one occurrence of a series), "reminder_id", "fire_at_ms",
 * "participant_id", "name"?, "address", "from", "now_ms", "unsubscribe_url"?}, prints one line:
 * "OK <the message, base64>" from mail_message (the production path), or "ERR <reason>". The
 * message is base64 on the wire so that every byte of it reaches the Python parsers as it was
 * written. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"
#include "mail.h"

#define LINE_MAX_LEN (64 * 1024)

static char *
dup_member(json_t *o, const char *name)
{
    const char *s = json_string_value(json_object_get(o, name));
    return s != NULL ? strdup(s) : NULL;
}

static void
one(const char *line)
{
    json_t *o = json_loads(line, 0, NULL);
    struct meeting m;
    const char *why = "bad input line";
    char *msg = NULL;

    meeting_init(&m);
    if (o != NULL) {
        m.title = dup_member(o, "title");
        m.description = dup_member(o, "description");
        m.location = dup_member(o, "location");
        m.time_zone = dup_member(o, "time_zone");
        const char *id = json_string_value(json_object_get(o, "id"));
        if (id != NULL)
            snprintf(m.id, sizeof m.id, "%s", id);
        m.is_occurrence = json_object_get(o, "original_start_ms") != NULL;
        m.original_start_ms = json_integer_value(json_object_get(o, "original_start_ms"));
        m.starts_at_ms = json_integer_value(json_object_get(o, "starts_at_ms"));
        m.has_ends_at = json_object_get(o, "ends_at_ms") != NULL;
        m.ends_at_ms = json_integer_value(json_object_get(o, "ends_at_ms"));
        struct mail_input in = {
            .m = &m,
            .o = {json_integer_value(json_object_get(o, "reminder_id")),
                  json_integer_value(json_object_get(o, "fire_at_ms")), 0},
            .participant_id = json_string_value(json_object_get(o, "participant_id")),
            .name = json_string_value(json_object_get(o, "name")),
            .address = json_string_value(json_object_get(o, "address")),
            .from = json_string_value(json_object_get(o, "from")),
            .now_ms = json_integer_value(json_object_get(o, "now_ms")),
            .unsubscribe_url = json_string_value(json_object_get(o, "unsubscribe_url")),
        };
        if (m.title != NULL && in.participant_id != NULL && in.address != NULL && in.from != NULL)
            msg = mail_message(&in, &why);
    }
    if (msg == NULL) {
        printf("ERR %s\n", why);
    } else {
        size_t n = strlen(msg);
        char *text = malloc(B64_ENCODED_LEN(n) + 1);
        if (text == NULL) {
            printf("ERR out of memory\n");
        } else {
            b64_encode(msg, n, text);
            printf("OK %s\n", text);
            free(text);
        }
        free(msg);
    }
    meeting_fini(&m);
    json_decref(o);
}

int
main(void)
{
    static char line[LINE_MAX_LEN];

    while (fgets(line, sizeof line, stdin) != NULL)
        one(line);
    return 0;
}
