#!/usr/bin/env bash
# bench/engine.sh -- fire lateness and burst delivery of the reminder engine (bench/engine.mjs),
# against the same keys' Redis expired events as the baseline, in one run: a release build, its own
# PostgreSQL and Redis under .local/bench-engine, three replicas, a local webhook receiver.
# Environment: BENCH_PENDING ("0 1000000"), BENCH_DUE (10000), BENCH_SPREAD_S (20), BENCH_BURST
# (50000), BENCH_REPLICAS (3), BENCH_SCENARIOS ("lateness burst"). Not part of CI.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
cd "$TOCSIN_ROOT"

PG_PORT=${TOCSIN_BENCH_PG_PORT:-54359}
REDIS_PORT=${TOCSIN_BENCH_REDIS_PORT:-63829}
DIR=$TOCSIN_ROOT/.local/bench-engine
BIN=$TOCSIN_ROOT/build-release/tocsin

cleanup()
{
    local rc=$?
    trap - EXIT INT TERM
    tocsin_redis_stop "$DIR/redis" || true
    tocsin_pg_stop "$DIR/pg" || true
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

tocsin_install_deps
tocsin_build build-release -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" \
    -DTOCSIN_WERROR=OFF -DTOCSIN_SANITIZE=OFF -DTOCSIN_TSAN=OFF

tocsin_redis_stop "$DIR/redis"
tocsin_pg_stop "$DIR/pg"
tocsin_pg_wipe "$DIR/pg"
rm -rf "$DIR"
mkdir -p "$DIR"
tocsin_pg_start "$DIR/pg" "$PG_PORT" "max_connections = 200" "shared_buffers = 512MB"
tocsin_redis_start "$DIR/redis" "$REDIS_PORT"

export TOCSIN_DATABASE_URL=postgresql://postgres@127.0.0.1:$PG_PORT/tocsin
"$BIN" migrate
BENCH_TOKEN=$("$BIN" keys create --tenant bench)
BENCH_PSQL=$(tocsin_pg_bindir)/psql
export BENCH_TOKEN BENCH_PSQL TOCSIN_BIN=$BIN BENCH_DB_URL=$TOCSIN_DATABASE_URL
export BENCH_REDIS_PORT=$REDIS_PORT
node bench/engine.mjs
