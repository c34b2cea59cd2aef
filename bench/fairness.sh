#!/usr/bin/env bash
# bench/fairness.sh -- fair delivery between tenants (bench/fairness.mjs) on a release build with
# its own PostgreSQL and Redis under .local/bench-fairness and one replica with BENCH_WORKERS (1)
# delivery worker of 256 slots: tenant b's webhook lateness p50/p99 with nothing else to deliver (the
# baseline, in the same run), then while tenant a's 32 slow webhooks (200 after 9 s) are busy,
# with TOCSIN_DELIVERY_TENANT_SHARE at BENCH_SHARE (50) and at 100 (no share). Environment:
# BENCH_SHARE, BENCH_A (tenant a's meetings, 40), BENCH_B (tenant b's reminders, 40);
# TOCSIN_BENCH_PG_PORT, TOCSIN_BENCH_REDIS_PORT. Not part of CI.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$TOCSIN_ROOT"

PG_PORT=${TOCSIN_BENCH_PG_PORT:-54483}
REDIS_PORT=${TOCSIN_BENCH_REDIS_PORT:-63883}
DIR=$TOCSIN_ROOT/.local/bench-fairness
BIN=$TOCSIN_ROOT/build-release/tocsin

bench_traps "$DIR"

ulimit -n "$(ulimit -Hn)"
bench_release_build
tocsin_npm_install tests

bench_fresh_servers "$DIR" "$PG_PORT" "$REDIS_PORT" "max_connections = 200"
"$BIN" migrate
BENCH_TOKEN=$("$BIN" keys create --tenant bench)
BENCH_PSQL=$(tocsin_pg_bindir)/psql
export BENCH_TOKEN BENCH_PSQL TOCSIN_BIN=$BIN BENCH_DB_URL=$TOCSIN_DATABASE_URL BENCH_DIR=$DIR
export BENCH_REDIS_PORT=$REDIS_PORT
node bench/fairness.mjs
