/* handler.h -- helpers shared by the endpoint handlers: request checks that several endpoints
 * make, the meeting reply with its ETag, and the after-commit Redis mirror update. */
#ifndef TOCSIN_HANDLER_H
#define TOCSIN_HANDLER_H

#include <stdbool.h>

#include "api_errors.h"
#include "codec.h"
#include "db.h"
#include "http_reply.h"
#include "http_request.h"
#include "meeting.h"

/* 0 when Content-Type's media type is want (case-insensitive) and its only parameter, if any, is
 * charset=utf-8; otherwise replies 415 and returns -1 (with *ret set to the MHD result). */
int handler_require_type(struct request *rq, const char *want, int *ret);
/* 0 when the request has no query arguments; otherwise replies 400 and returns -1. */
int handler_no_query(struct request *rq, int *ret);
/* Parses rq's body as JSON. NULL after replying 400 bad_json (*ret set). */
json_t *handler_parse_body(struct request *rq, int *ret);
/* The body of a POST that takes no query and application/json: handler_no_query,
 * handler_require_type and handler_parse_body in that order. NULL after replying (*ret set). */
json_t *handler_json_body(struct request *rq, int *ret);
/* Validates the {id} path argument: NULL after replying 404 (*ret set). */
const char *handler_meeting_id(struct request *rq, int *ret);
/* The worker's database for this request; NULL after replying 503 (*ret set). */
struct db *handler_db(struct request *rq, int *ret);
/* Replies for a failed database status st: 503 for errors; for NO_RESULTS the problem
 * no_results (a missing resource, a limit reached) with detail (NULL for its title). st must be
 * a failure: a success is a caller bug and panics. */
int handler_db_failure(struct request *rq, enum db_status st, enum api_error no_results,
                       const char *detail);
/* handler_db_failure for a meeting: 404 meeting_not_found for NO_RESULTS. */
int handler_db_problem(struct request *rq, enum db_status st);
/* A list's reply: 200 {"items": items} when st is DB_ONE_RESULT, else 503 (items freed). */
int handler_reply_items(struct request *rq, enum db_status st, json_t *items_steal);
/* Encodes m into *body (malloc'ed) and its ETag; 0 or -1 (out of memory). */
int handler_meeting_body(const struct meeting *m, char **body, char etag[HTTP_ETAG_MAX]);
/* The same inside database work: DB_ONE_RESULT, or DB_HARD_ERROR with why on db (db_note_error),
 * so that the 503's log line names this failure and not the handle's previous one. */
enum db_status handler_meeting_body_st(struct db *db, const struct meeting *m, char **body,
                                       char etag[HTTP_ETAG_MAX]);
/* After a commit: deletes the keys in gone, arms m's pending reminders and tells the engine of
 * them (either may be NULL). A Redis failure is logged and asks the reconciler for a full pass,
 * which arms what is missing; a stale key left behind expires into an event that finds no pending
 * row. */
void handler_mirror_sync(struct request *rq, const struct reminder_keys *gone,
                         const struct meeting *m);
struct db_signing_key;
/* Makes a signing key (random id and secret) for the tenant and stores it, within the limit of
 * live keys: the db_signing_key_insert status (NO_RESULTS at the limit); HARD_ERROR when no
 * random bytes could be had. */
int handler_signing_key_create(struct db *db, int64_t tenant_id, struct db_signing_key *k);
/* For a browser token: 0 when it may see meeting m (it organizes or takes part, and its mtg claim
 * allows it); otherwise replies 404 and returns -1. API keys always pass. */
int handler_meeting_visible(struct request *rq, const struct meeting *m, int *ret);
/* For a browser token: 0 when it organizes m (after handler_meeting_visible); otherwise replies
 * 403 not_organizer and returns -1. API keys always pass. */
int handler_meeting_organized(struct request *rq, const struct meeting *m, int *ret);

/* Shared by PUT and PATCH: loads the meeting for update, checks If-Match, builds the new
 * state (is_patch: doc is a merge patch; else the full input document), writes it and replies. */
int handler_meeting_replace(struct request *rq, const json_t *doc, bool is_patch);

/* ---- recurring meetings (handler_series.c) ---- */
struct db_series_keys;
/* After a commit that wrote a series' occurrence rows: deletes the keys in gone, arms fresh
 * (those within the mirror horizon) and tells the engine. Redis failures are handled as in
 * handler_mirror_sync. Either may be NULL. */
void handler_series_keys(struct request *rq, const struct db_series_keys *gone,
                         const struct db_series_keys *fresh);
/* A new series (or a single meeting made one), or a series whose rule, dates, start or zone
 * changed, must have an occurrence in the next SERIES_UPCOMING_YEARS: false with errs set to that
 * one field error otherwise. cur is the meeting before the change (NULL for a new one). */
bool handler_series_upcoming(const struct meeting *cur, const struct meeting *next,
                             struct codec_errors *errs);
/* The body of a meeting after a series write: m re-read in the same transaction (a series'
 * reminders show their next firing, which the write just made), with its ETag. */
enum db_status handler_series_body(struct db *db, int64_t tenant_id, const char *id, char **body,
                                   char etag[HTTP_ETAG_MAX]);

/* The database of a request that takes no query: NULL after replying 400 (a query) or 503 (no
 * database), with *ret set. */
struct db *handler_db_no_query(struct request *rq, int *ret);

/* The reply to a DELETE whose statement ended with st: 204, or not_found for NO_RESULTS, or the
 * database's problem. */
int handler_reply_deleted(struct request *rq, enum db_status st, enum api_error not_found);

/* The query of a keyset-paginated list: from, to, limit and cursor (the cursor kept as text:
 * each endpoint decodes its own), plus what the endpoint takes besides (extra). Set from, to and
 * limit to their defaults, then call handler_page_query. */
struct handler_page {
    int64_t from_ms, to_ms; /* INT64_MIN / INT64_MAX when absent */
    size_t limit;
    const char *cursor;  /* NULL when absent */
    const char *bad;     /* the first offending parameter, for the problem detail */
    const char *bad_why; /* and the form it needs */
    const char *allowed; /* the parameters taken, for the message on an unknown one */
    /* The endpoint's other parameters: 1 taken, 0 not its own, -1 bad (bad_why set). */
    int (*extra)(struct handler_page *p, const char *key, const char *value);
    void *extra_arg;
    bool no_range; /* from and to are not taken (a list in another order than time) */
    int seen_from, seen_to, seen_limit, seen_cursor;
};

/* Walks the request's query into p. 0, or -1 after replying 400 bad_query naming the first bad
 * parameter (or 'from' after 'to'), with *ret set. */
int handler_page_query(struct request *rq, struct handler_page *p, int *ret);

/* Is v a search's q: 1 to DB_SEARCH_Q_MAX bytes of UTF-8? */
bool handler_search_q_valid(const char *v);
#define HANDLER_SEARCH_Q_FORM "must be 1 to 200 bytes of UTF-8"

#define HANDLER_CURSOR_FORM "must be a next_cursor returned by this endpoint, as it was returned"

/* What follows a list page's items (http_page.h): {"next_cursor": cursor}, null for "" (the last
 * page). New reference, NULL when out of memory. */
json_t *handler_page_tail(const char *cursor);

/* Page cursors are opaque to clients: hex of "<tag>:<fields separated by ':'>". Decodes s into
 * raw (raw_max bytes of room plus the NUL) and checks the tag; returns where the fields start, or
 * NULL when s is not such a text. */
const char *handler_cursor_open(const char *s, char *raw, size_t raw_max, const char *tag);

/* Reads a time at *p, decimal milliseconds that end at sep ('\0' for the last field), and moves
 * *p past the separator. 0, or -1 (nothing read, another character, or outside the times the API
 * takes, 0..TIMEFMT_MS_MAX: no cursor we wrote holds one, and a forged one must not reach the
 * series generator or the database as an instant they cannot represent). */
int handler_cursor_ms(const char **p, char sep, int64_t *out);
/* The same for a database id: digits only (no sign, no space), 0..INT64_MAX. */
int handler_cursor_id(const char **p, char sep, int64_t *out);

/* ---- pages of deliveries (deliveries.c) ---- */
struct db_delivery;
struct deliveries_page;
/* A delivery as the API shows it (the Delivery schema), with its meeting's id and title when
 * with_meeting. New reference, NULL when out of memory. */
json_t *deliveries_json(const struct db_delivery *d, bool with_meeting);
/* An empty page whose cursors are hex of "<tag>:<id>" (tag at most 4 bytes); NULL when out of
 * memory. Free with deliveries_page_free unless given to deliveries_page_reply. */
struct deliveries_page *deliveries_page_new(const char *tag, bool with_meeting);
/* A db_delivery_row_fn: adds d to the page arg (as its JSON text). */
void deliveries_page_add(void *arg, const struct db_delivery *d);
void deliveries_page_free(void *arg);
/* Replies with the page (taken in every case) read with status st (a failure's problem as
 * handler_db_problem's); more: rows follow the page's. */
int deliveries_page_reply(struct request *rq, struct deliveries_page *p_steal, enum db_status st,
                          bool more);
/* Reads a cursor of tag's pages into *id: 0, or -1 when s is not one. */
int deliveries_cursor(const char *s, const char *tag, int64_t *id);
/* The delivery id of the request's {id}: 0, or -1 when it is none (digits, 1..INT64_MAX). */
int deliveries_id(struct request *rq, int64_t *id);

/* An idempotency key as the API takes it (Idempotency-Key, a batch item's idempotency_key): 1..255
 * printable ASCII characters. */
bool handler_idempotency_key_valid(const char *k);

#endif
