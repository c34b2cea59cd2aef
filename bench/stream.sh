#!/usr/bin/env bash
# bench/stream.sh -- the live stream (GET /v1/stream) measured end to end (bench/stream.mjs):
# lateness from recorded fired to received on the firing replica and on another, fan-out to
# 10,000 streams on one replica with its memory and idle CPU, and a reconnect storm under a steady
# API load (bench/stream_load.mjs) against the same load without it, in one run: a release build,
# its own PostgreSQL and Redis under .local/bench-stream, three replicas, one Node process holding
# every stream (bench/stream_client.mjs).
# Environment: BENCH_SCENARIOS ("lateness fanout storm_missed storm"), BENCH_REPLICAS (3), BENCH_DUE (10000),
# BENCH_SPREAD_S (20), BENCH_STREAMS (10000), BENCH_STREAMS_EACH (20), BENCH_IDLE_S (60),
# BENCH_FANOUT_FIRES (3), BENCH_STORM_S (10), BENCH_STORM_REMINDERS (3), BENCH_API_RATE (200),
# BENCH_API_CONNECTIONS (10), BENCH_STORM_ROUNDS (1: each storm this many times, with the median
# ratio), BENCH_CLIENT_SCHED (idle: SCHED_IDLE, or a nice value: the stream client's
# priority during the storms);
# TOCSIN_BENCH_PG_PORT, TOCSIN_BENCH_REDIS_PORT. Not part of CI.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$TOCSIN_ROOT"

PG_PORT=${TOCSIN_BENCH_PG_PORT:-54461}
REDIS_PORT=${TOCSIN_BENCH_REDIS_PORT:-63861}
DIR=$TOCSIN_ROOT/.local/bench-stream
BIN=$TOCSIN_ROOT/build-release/tocsin
# Descriptors the bench client needs: every stream, plus the storm's reconnects in flight.
FDS_NEED=$((${BENCH_STREAMS:-10000} + 2048))

bench_traps "$DIR"

# One process holds every stream: raise the soft limit to the hard one (the replicas inherit it
# and raise their own as far as they need).
ulimit -n "$(ulimit -Hn)"
[ "$(ulimit -n)" -ge "$FDS_NEED" ] ||
    tocsin_die "ulimit -n is $(ulimit -n), the bench needs $FDS_NEED descriptors (raise the hard limit)"

bench_release_build

bench_fresh_servers "$DIR" "$PG_PORT" "$REDIS_PORT" "max_connections = 200" "shared_buffers = 512MB"
"$BIN" migrate
BENCH_TOKEN=$("$BIN" keys create --tenant bench)
BENCH_PSQL=$(tocsin_pg_bindir)/psql
export BENCH_TOKEN BENCH_PSQL TOCSIN_BIN=$BIN BENCH_DB_URL=$TOCSIN_DATABASE_URL BENCH_DIR=$DIR
export BENCH_REDIS_PORT=$REDIS_PORT
node bench/stream.mjs
