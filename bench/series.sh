#!/usr/bin/env bash
# bench/series.sh -- recurring meetings materialised ahead (bench/series.mjs): a release build, its
# own PostgreSQL and Redis under .local/bench-series, BENCH_REPLICAS replicas, a local webhook
# receiver. Measures the time and rows to expand BENCH_SERIES weekly series for the next
# BENCH_WINDOW_DAYS days, then the engine's fire lateness with and without the reconcilers
# extending those windows at the same time. Environment: BENCH_SERIES (100000), BENCH_WINDOW_DAYS
# (60), BENCH_REPLICAS (2), BENCH_DUE (10000), BENCH_SPREAD_S (20), BENCH_ROUNDS (2),
# BENCH_LOG_LEVEL (warn). Not part of CI.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$TOCSIN_ROOT"

PG_PORT=${TOCSIN_BENCH_PG_PORT:-54369}
REDIS_PORT=${TOCSIN_BENCH_REDIS_PORT:-63839}
DIR=$TOCSIN_ROOT/.local/bench-series
BIN=$TOCSIN_ROOT/build-release/tocsin

bench_traps "$DIR"

bench_release_build

bench_fresh_servers "$DIR" "$PG_PORT" "$REDIS_PORT" "max_connections = 200" "shared_buffers = 512MB"
"$BIN" migrate
BENCH_TOKEN=$("$BIN" keys create --tenant bench)
BENCH_PSQL=$(tocsin_pg_bindir)/psql
export BENCH_TOKEN BENCH_PSQL TOCSIN_BIN=$BIN BENCH_DB_URL=$TOCSIN_DATABASE_URL
export BENCH_REDIS_PORT=$REDIS_PORT
node bench/series.mjs
