#!/usr/bin/env bash
# bench/pages.sh -- big list pages measured against one server (bench/pages.mjs): bytes and server
# CPU of GET /v1/meetings?limit=200 over 200 meetings of ~64 KB, the server's resident set idle,
# while slow readers hold big pages and 10 s after they closed, and another tenant's latency
# meanwhile; then clients that read every meeting at once. A RelWithDebInfo build, its own
# PostgreSQL and Redis under .local/bench-pages. Environment: the BENCH_* of bench/pages.mjs;
# TOCSIN_BENCH_PG_PORT, TOCSIN_BENCH_REDIS_PORT; BENCH_BIN (another tocsin binary to measure, an
# older build say). Not part of CI.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$TOCSIN_ROOT"

PG_PORT=${TOCSIN_BENCH_PG_PORT:-54471}
REDIS_PORT=${TOCSIN_BENCH_REDIS_PORT:-63871}
DIR=$TOCSIN_ROOT/.local/bench-pages

bench_traps "$DIR"

bench_relwithdebinfo_build
BIN=${BENCH_BIN:-$TOCSIN_ROOT/build-rel/tocsin}

bench_fresh_servers "$DIR" "$PG_PORT" "$REDIS_PORT"
"$BIN" migrate
BENCH_KEY_C=$("$BIN" keys create --tenant c)
BENCH_KEY_B=$("$BIN" keys create --tenant b)
export BENCH_KEY_C BENCH_KEY_B TOCSIN_BIN=$BIN BENCH_DB_URL=$TOCSIN_DATABASE_URL BENCH_DIR=$DIR
export BENCH_REDIS_URL=redis://127.0.0.1:$REDIS_PORT/0
node bench/pages.mjs
