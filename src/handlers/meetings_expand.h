/* meetings_expand.h -- GET /v1/meetings with expand=true (meetings_expand.c), called by
 * meetings_list.c once the query is parsed. */
#ifndef TOCSIN_MEETINGS_EXPAND_H
#define TOCSIN_MEETINGS_EXPAND_H

#include "db.h"
#include "http_request.h"

/* Parses an expand=true cursor into q (has_after, the position). 0 or -1. */
int meetings_expand_cursor_decode(const char *s, struct db_list_query *q);
/* Replies with one page of single meetings and occurrences in [q->from_ms, q->to_ms) (both
 * required, at most 400 days apart), q's viewer filters and cursor applied. */
int meetings_expand(struct request *rq, struct db *db, struct db_list_query *q);

#endif
