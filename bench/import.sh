#!/usr/bin/env bash
# bench/import.sh -- `tocsin import` of BENCH_IMPORT_MEETINGS (1000000) meetings, one reminder
# each, with the wall time, and the fire lateness of a steady flow of reminders due while it
# runs next to the same flow without an import, in one run (bench/import.mjs): a release build,
# its own PostgreSQL and Redis under .local/bench-import and one `tocsin serve` replica, which
# fires the flow to a local webhook receiver. Environment: BENCH_IMPORT_MEETINGS, BENCH_IMPORT_JOBS
# (4, --jobs), BENCH_IMPORT_VARIANTS (the imports to run in turn, each into a tenant of its own:
# space-separated, each a comma list of jobs=N, batch=N, rate=N (the options), nice=N (the import
# and its PostgreSQL backends reniced: an experiment), e.g. "jobs=4 jobs=1,rate=3000"; default
# jobs=BENCH_IMPORT_JOBS), BENCH_IMPORT_PROFILE (1: sample PostgreSQL's wait events during
# each import), BENCH_FLOW_STEP_MS (5: one reminder due every 5 ms), BENCH_BASELINE_S (30),
# BENCH_IMPORT_FLOW_S (400, the flow's length in an import phase at least; it must outlast the
# import).
# Ports: TOCSIN_BENCH_PG_PORT, TOCSIN_BENCH_REDIS_PORT, TOCSIN_BENCH_HTTP_ADDR. Not part of CI.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$TOCSIN_ROOT"

PG_PORT=${TOCSIN_BENCH_PG_PORT:-54369}
REDIS_PORT=${TOCSIN_BENCH_REDIS_PORT:-63849}
HTTP_ADDR=${TOCSIN_BENCH_HTTP_ADDR:-127.0.0.1:18090}
MEETINGS=${BENCH_IMPORT_MEETINGS:-1000000}
BENCH=$TOCSIN_ROOT/.local/bench-import
. bench/wrk.sh

# import_lines N: N meetings as JSON lines, one reminder each, starting in 2 hours (inside the
# default mirror horizon, so each is a Redis key too), each a title of its own.
import_lines()
{
    awk -v n="$1" -v s="$(date -u -d '+2 hours' +%Y-%m-%dT%H:%M:%SZ)" 'BEGIN {
        for (i = 0; i < n; i++)
            printf "{\"title\":\"Import %d\",\"starts_at\":\"%s\",\"participants\":" \
                "[{\"id\":\"u1\",\"name\":\"Ada\",\"email\":\"ada@example.com\"}]," \
                "\"reminders\":[{\"minutes_before\":10}]}\n", i, s
    }'
}

bench_fresh
tocsin_log "writing $MEETINGS JSON lines"
import_lines "$MEETINGS" >"$BENCH/import.jsonl"
bench_serve TOCSIN_WEBHOOK_ALLOW_PRIVATE=1
BENCH_PSQL=$(tocsin_pg_bindir)/psql
export BENCH_DB_URL=$TOCSIN_DATABASE_URL BENCH_PSQL TOCSIN_BIN=$BIN
export BENCH_SERVE_PID=$SERVE_PID BENCH_URL=$URL BENCH_IMPORT_FILE=$BENCH/import.jsonl BENCH_IMPORT_LINES=$MEETINGS
node bench/import.mjs
