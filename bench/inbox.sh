#!/usr/bin/env bash
# bench/inbox.sh -- a participant's reads at a tenant's 1,000,000 stream events (issue 35, N3;
# bench/inbox.mjs): GET /v1/me/notifications for a participant in no event (the ghost) and for a
# busy one (p1, in 6,000), against the ghost's inbox in a tenant with none (the baseline) and the
# inbox statement as it was before migration 017, run in psql; and another tenant's live-stream
# lateness (meeting created -> frame received) alone and while four clients of the big tenant loop
# stream resumes (the ghost from cursor 1; p1 from a cursor ~900 of its events back, the heaviest
# backlog a resume may read). The events are written in SQL as in the adversarial test:
# BENCH_MEETINGS (200) real meetings of tenant d listing p1..p30, each event one of them with 30
# of 5,000 participants; the audience index is built after the load (its build time is printed:
# what migration 017 costs on such a table). A release build, its own PostgreSQL and Redis under
# .local/bench-inbox, one replica. Environment: BENCH_EVENTS (1000000), BENCH_MEETINGS (200),
# BENCH_ROUNDS (200 inbox reads per figure), BENCH_LIVE (40 live reminders per phase),
# BENCH_LOOPERS (4); TOCSIN_BENCH_PG_PORT, TOCSIN_BENCH_REDIS_PORT, TOCSIN_BENCH_HTTP_ADDR. Not
# part of CI.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$TOCSIN_ROOT"

PG_PORT=${TOCSIN_BENCH_PG_PORT:-54491}
REDIS_PORT=${TOCSIN_BENCH_REDIS_PORT:-63891}
HTTP_ADDR=${TOCSIN_BENCH_HTTP_ADDR:-127.0.0.1:18093}
BENCH=$TOCSIN_ROOT/.local/bench-inbox
. bench/wrk.sh

bench_fresh
BENCH_KEY_D=$("$BIN" keys create --tenant d)
BENCH_KEY_E=$("$BIN" keys create --tenant e)
BENCH_PSQL=$(tocsin_pg_bindir)/psql
export BENCH_KEY_D BENCH_KEY_E BENCH_PSQL BENCH_URL=$URL BENCH_DB_URL=$TOCSIN_DATABASE_URL
bench_serve TOCSIN_STREAMS_PER_PARTICIPANT=20 TOCSIN_HTTP_CONNECTIONS_PER_ADDR=4096
BENCH_SERVE_PID=$SERVE_PID node bench/inbox.mjs
