#!/usr/bin/env bash
# bench/prefs.sh -- what a participant's preferences cost a fire (bench/prefs.mjs) on a release
# build with its own PostgreSQL and Redis under .local/bench-prefs: BENCH_PEOPLE (10,000)
# participants reminded by email at one instant, with half of them having email off and a
# quarter in quiet hours, against the same meetings without preferences in the same run (the
# baseline), and with preferences for everyone that skip nothing (the cost of reading them),
# through the tests' local SMTP server (tests/api/smtp_server.py). Prints the three figures (the
# due instant to the last delivery settled) and the ratios to the baseline. Environment:
# BENCH_PEOPLE, BENCH_REPLICAS (1), BENCH_ROUNDS (1; each runs all three, in a turning order),
# BENCH_LEAD_MS; TOCSIN_BENCH_PG_PORT, TOCSIN_BENCH_REDIS_PORT. Not part of CI.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$TOCSIN_ROOT"

PG_PORT=${TOCSIN_BENCH_PG_PORT:-54491}
REDIS_PORT=${TOCSIN_BENCH_REDIS_PORT:-63891}
DIR=$TOCSIN_ROOT/.local/bench-prefs

bench_node_rig "$DIR" "$PG_PORT" "$REDIS_PORT"
node bench/prefs.mjs
