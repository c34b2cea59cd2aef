#!/usr/bin/env bash
# bench/soak.sh -- the soak under faults (docs/soak.md): its own PostgreSQL, PgBouncer and Redis
# under .local/soak, 3 replicas of the ASan build (build-asan/, as scripts/test.sh builds it; or
# TOCSIN_BIN), a steady mixed load for SOAK_MINUTES (2) and a fault schedule drawn from SOAK_SEED
# (printed; the same seed replays the same schedule), then the ledger checked (bench/soak.mjs).
# Prints its totals as "N reminders, lost 0, twice 0, early 0" and the faults it ran; exits 1 on
# any violation. Ports: TOCSIN_SOAK_PG_PORT (24573; PgBouncer on the next), TOCSIN_SOAK_REDIS_PORT
# (64573), TOCSIN_SOAK_HTTP_BASE (47300: replicas, receivers and the fault proxy on the 30 above),
# TOCSIN_SOAK_DIR (.local/soak: the servers' data, the logs, report.txt).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$TOCSIN_ROOT"

PG_PORT=${TOCSIN_SOAK_PG_PORT:-24573}
BOUNCER_PORT=$((PG_PORT + 1))
REDIS_PORT=${TOCSIN_SOAK_REDIS_PORT:-64573}
HTTP_BASE=${TOCSIN_SOAK_HTTP_BASE:-47300}
DIR=${TOCSIN_SOAK_DIR:-$TOCSIN_ROOT/.local/soak}
SOAK_MINUTES=${SOAK_MINUTES:-2}
SOAK_SEED=${SOAK_SEED:-$((RANDOM * 32768 + RANDOM))}

NODE_PID=
# The node process ends its replicas and SMTP server itself when told to (SIGTERM): the trap tells
# it, and waits, before the servers go.
stop_node()
{
    if [ -n "$NODE_PID" ] && kill -0 "$NODE_PID" 2>/dev/null; then
        kill -TERM "$NODE_PID" 2>/dev/null || true
        wait "$NODE_PID" 2>/dev/null || true
    fi
}

stop_bouncer()
{
    tocsin_pgbouncer_stop "$DIR/pgbouncer"
}

bench_traps "$DIR"
bench_on_exit stop_node stop_bouncer
ulimit -n "$(ulimit -Hn)"

if [ -z "${TOCSIN_BIN:-}" ]; then
    tocsin_install_deps
    tocsin_build build-asan -DCMAKE_BUILD_TYPE=Debug -DTOCSIN_WERROR=ON -DTOCSIN_SANITIZE=ON \
        -DTOCSIN_TSAN=OFF
    TOCSIN_BIN=$TOCSIN_ROOT/build-asan/tocsin
fi
tocsin_npm_install tests
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
if [ -f tests/lsan.supp ] && [ -z "${LSAN_OPTIONS:-}" ]; then
    export LSAN_OPTIONS=suppressions=$TOCSIN_ROOT/tests/lsan.supp
fi

echo "soak: SOAK_SEED=$SOAK_SEED SOAK_MINUTES=$SOAK_MINUTES (replay: SOAK_SEED=$SOAK_SEED SOAK_MINUTES=$SOAK_MINUTES bash bench/soak.sh)"
tocsin_pgbouncer_stop "$DIR/pgbouncer"
# The fault schedule restarts PostgreSQL with these same lines (bench/soak.mjs, pg-restart).
bench_fresh_servers "$DIR" "$PG_PORT" "$REDIS_PORT" "fsync = off" "max_connections = 200"
tocsin_pgbouncer_start "$DIR/pgbouncer" "$BOUNCER_PORT" "$PG_PORT"
"$TOCSIN_BIN" migrate >/dev/null
SOAK_TOKEN=$("$TOCSIN_BIN" keys create --tenant soak)
SOAK_WRAP=$(tocsin_sanitizer_wrap "$TOCSIN_BIN" --help)
SOAK_PSQL=$(tocsin_pg_bindir)/psql
export SOAK_TOKEN SOAK_WRAP SOAK_PSQL SOAK_MINUTES SOAK_SEED TOCSIN_BIN SOAK_DIR=$DIR
export SOAK_PG_PORT=$PG_PORT SOAK_BOUNCER_PORT=$BOUNCER_PORT SOAK_REDIS_PORT=$REDIS_PORT
export SOAK_HTTP_BASE=$HTTP_BASE
# In the background and waited for, so that a signal reaches the trap at once (bash runs traps
# only between commands, and a wait is one that a signal ends).
node bench/soak.mjs &
NODE_PID=$!
wait "$NODE_PID"
