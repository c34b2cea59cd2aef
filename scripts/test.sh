#!/usr/bin/env bash
# scripts/test.sh -- the whole test suite in one command, from a fresh Debian 12 machine: installs
# what is missing, builds with ASan+UBSan (build-asan/), starts a fresh PostgreSQL and Redis on
# loopback under .local/test, runs the browser client's type checks, ctest (unit + integration),
# the black-box API tests and the Chromium tests (tests/browser, Debian's chromium driven by
# puppeteer-core), a 2-minute soak under faults (bench/soak.sh), the deployment checks
# (tests/deploy: Kubernetes manifests, alert rules), then
# the integration tests, the stream suites and the connection limits again under ThreadSanitizer
# (build-tsan/; TOCSIN_TEST_TSAN=0 skips that). The node files that mostly wait, then the TSan
# stream files, run in a second lane beside the other node files (LANE_TESTS below).
# A missing server is a failure, never a skip. Ends with the line "N passed, N failed" (suites).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$TOCSIN_ROOT"

# PostgreSQL's ports sit below Linux's ephemeral range (32768-60999): the suite stops and starts
# it, and in between an outgoing connection of a test could be given its port.
PG_PORT=${TOCSIN_TEST_PG_PORT:-25339}
REDIS_PORT=${TOCSIN_TEST_REDIS_PORT:-63809}
POOLER_PORT=${TOCSIN_TEST_POOLER_PORT:-$((PG_PORT + 1))}
# The API and engine files that run a second time through PgBouncer in transaction mode.
# TOCSIN_TEST_POOLED names them (and runs them also when TOCSIN_TEST_NODE is set).
POOLED_TESTS=${TOCSIN_TEST_POOLED:-"tests/api/auth.test.mjs tests/api/meetings.test.mjs
tests/api/idempotency.test.mjs tests/api/engine.test.mjs tests/api/webhooks.test.mjs
tests/api/mirror.test.mjs"}
# The API files that run a second time against the ThreadSanitizer build.
# TOCSIN_TEST_TSAN_NODE names them (and runs them also when TOCSIN_TEST_NODE is set).
TSAN_NODE_TESTS=${TOCSIN_TEST_TSAN_NODE:-"tests/api/limits.test.mjs tests/api/stream.test.mjs
tests/api/stream_load.test.mjs tests/api/stream_replicas.test.mjs tests/api/stream_hub.test.mjs
tests/api/stream_tenants.test.mjs"}
# The node files that mostly wait (a minute boundary, a circuit's open time, a failover's timeouts)
# run in a second lane, in the background beside the others, on a PostgreSQL and a Redis of their
# own (PG_PORT + 6, REDIS_PORT + 6), so that their waits overlap the other files' work. Only in a
# whole run on plain Redis: a selected run (below), or one over TLS or on a Cluster, runs every
# file in one lane.
LANE_TESTS="tests/api/preferences.test.mjs tests/api/deliver_faults.test.mjs
tests/api/redis_cluster.test.mjs tests/api/redis_sentinel.test.mjs tests/api/pg_failover.test.mjs"
LANE_PG_PORT=$((PG_PORT + 6))
LANE_REDIS_PORT=$((REDIS_PORT + 6))
# For working on one part, the switches run exactly what they name: TOCSIN_TEST_NODE="files" runs
# those node files, TOCSIN_TEST_CTEST_REGEX=hub the ctest tests whose names match (ctest -R), in the
# ASan and the TSan stage; set either (or both) and nothing else runs (no type check, no deploy
# check, no pass through PgBouncer or under TSan unless TOCSIN_TEST_POOLED / TOCSIN_TEST_TSAN_NODE
# name files). TOCSIN_TEST_CTEST=0 leaves ctest out. CI sets none of them: everything runs.
# TOCSIN_TEST_SOAK=1 runs the 2-minute soak (bench/soak.sh) also when something is selected.
# TOCSIN_TEST_REDIS_TLS=1: the shared Redis also listens with TLS on TOCSIN_TEST_REDIS_TLS_PORT
# (default REDIS_PORT + 1) with a CA made here, and the node files (theirs and their private
# Redises) use rediss:// with it; ctest keeps the plain port. Off by default: a run of its own.
REDIS_TLS=${TOCSIN_TEST_REDIS_TLS:-0}
REDIS_TLS_PORT=${TOCSIN_TEST_REDIS_TLS_PORT:-$((REDIS_PORT + 1))}
# TOCSIN_TEST_REDIS_CLUSTER=1: a 3-master Redis Cluster (no replicas) on TOCSIN_TEST_REDIS_CLUSTER_PORT
# and the two ports after it (default 7100; each node's bus is its port + 10000), and the node
# files' tocsin servers use redis-cluster:// on it; ctest keeps the plain Redis. A run of its own.
REDIS_CLUSTER=${TOCSIN_TEST_REDIS_CLUSTER:-0}
CLUSTER_PORT=${TOCSIN_TEST_REDIS_CLUSTER_PORT:-7100}
CTEST_REGEX=${TOCSIN_TEST_CTEST_REGEX:-}
SELECTED=
if [ -n "${TOCSIN_TEST_NODE:-}" ] || [ -n "$CTEST_REGEX" ]; then
    SELECTED=1
fi
NODE_TESTS=${TOCSIN_TEST_NODE:-}
if [ -z "$SELECTED" ]; then
    NODE_TESTS="tests/api/ tests/browser/"
fi
LANE=
if [ -z "$SELECTED" ] && [ "$REDIS_TLS" = 0 ] && [ "$REDIS_CLUSTER" = 0 ]; then
    # Every test file node --test would find in the two folders, less the second lane's.
    NODE_TESTS=$(find tests/api tests/browser -name node_modules -prune -o -name '*.test.mjs' -print |
        sort | grep -vxF -f <(printf '%s\n' $LANE_TESTS) | tr '\n' ' ')
    LANE=1
fi
CTEST_DEFAULT=1
if [ -n "$SELECTED" ] && [ -z "$CTEST_REGEX" ]; then
    CTEST_DEFAULT=0
fi
CTEST=${TOCSIN_TEST_CTEST:-$CTEST_DEFAULT}
# The TSan stage builds build-tsan/ only when something selected runs in it.
TSAN_DEFAULT=1
if [ -n "$SELECTED" ] && [ "$CTEST" = 0 ] && [ -z "${TOCSIN_TEST_TSAN_NODE:-}" ]; then
    TSAN_DEFAULT=0
fi
TSAN=${TOCSIN_TEST_TSAN:-$TSAN_DEFAULT}
TEST_DIR=$TOCSIN_ROOT/.local/test
TEST_DB=tocsin_test
CTEST_TIMEOUT_S=600 # per test executable

PASSED=0
FAILED=0
RESULTS=()
declare -A BG_PID=() BG_START=()
SUMMARY_DONE=

summary()
{
    local r
    [ -z "$SUMMARY_DONE" ] || return 0
    SUMMARY_DONE=1
    echo
    for r in "${RESULTS[@]}"; do
        echo "  $r"
    done
    echo "$PASSED passed, $FAILED failed"
}

cleanup()
{
    local rc=$? pid
    trap - EXIT INT TERM
    # A suite still running in the background (record_start) ends first: bounded by its own
    # timeout, and stopped with the rest of the process group by an INT or a TERM.
    for pid in "${BG_PID[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    tocsin_redis_stop "$TEST_DIR/redis" || true
    tocsin_redis_stop "$TEST_DIR/lane-redis" || true
    tocsin_pg_stop "$TEST_DIR/lane-pg" || true
    tocsin_cluster_stop "$TEST_DIR/cluster" || true
    tocsin_pgbouncer_stop "$TEST_DIR/pgbouncer" || true
    tocsin_pg_stop "$TEST_DIR/pg" || true
    if [ -n "$INTERRUPTED" ] && [ -z "$SUMMARY_DONE" ]; then
        RESULTS+=("interrupted by SIG$INTERRUPTED: the suites not listed above did not run")
        FAILED=$((FAILED + 1))
    elif [ "$rc" -ne 0 ] && [ -z "$SUMMARY_DONE" ]; then
        RESULTS+=("setup: FAILED (exit $rc)")
        FAILED=$((FAILED + 1))
    fi
    summary
    exit "$rc"
}
INTERRUPTED=
trap cleanup EXIT
trap 'INTERRUPTED=INT; exit 130' INT
trap 'INTERRUPTED=TERM; exit 143' TERM

# counted NAME RC START [NOTE [END]]: counts one suite's result (exit RC, started at SECONDS = START,
# ended at END, default now).
counted()
{
    local name=$1 rc=$2 took=$((${5:-$SECONDS} - $3)) note=${4:+, $4}
    if [ "$rc" -eq 0 ]; then
        PASSED=$((PASSED + 1))
        RESULTS+=("$name: ok ($took s$note)")
    else
        FAILED=$((FAILED + 1))
        RESULTS+=("$name: FAILED (exit $rc, $took s$note)")
    fi
}

# record NAME CMD...: runs one suite, counts it, and keeps going after a failure.
record()
{
    local name=$1 start=$SECONDS rc=0
    shift
    tocsin_log "suite $name: $*"
    "$@" || rc=$?
    counted "$name" "$rc" "$start"
}

# record_start NAME CMD...: runs one suite in the background, its output kept in a log of its own
# until record_wait NAME shows it and counts it with the time it took (a suite that runs beside
# another, on servers of its own).
record_start()
{
    local name=$1
    shift
    tocsin_log "suite $name (in the background): $*"
    BG_START[$name]=$SECONDS
    (
        rc=0
        "$@" || rc=$?
        echo "$SECONDS" >"$TEST_DIR/$name.end"
        exit "$rc"
    ) >"$TEST_DIR/$name.log" 2>&1 &
    BG_PID[$name]=$!
}

record_wait()
{
    local name=$1 rc=0
    wait "${BG_PID[$name]}" || rc=$?
    tocsin_log "suite $name ended (exit $rc); its output:"
    cat "$TEST_DIR/$name.log"
    # A suite that waited for another first says when it began in NAME.start.
    counted "$name" "$rc" "$(cat "$TEST_DIR/$name.start" 2>/dev/null || echo "${BG_START[$name]}")" \
        "in the background" "$(cat "$TEST_DIR/$name.end" 2>/dev/null || echo "$SECONDS")"
}

# Every suite starts from an empty test database and an empty Redis.
reset_state()
{
    tocsin_pg_dropdb "$PG_PORT" "$TEST_DB"
    tocsin_pg_createdb "$PG_PORT" "$TEST_DB"
    redis-cli -h 127.0.0.1 -p "$REDIS_PORT" flushall >/dev/null
}

# run_ctest BUILD_DIR [ctest args...]: ctest under the sanitizer wrapper this kernel needs.
run_ctest()
{
    local dir=$1 wrap
    shift
    reset_state
    wrap=$(tocsin_sanitizer_wrap "$dir/tocsin" --help)
    [ -z "$wrap" ] || tocsin_log "sanitizer runtime needs ASLR off here: running under $wrap"
    $wrap ctest --test-dir "$dir" --output-on-failure --no-tests=error \
        --timeout "$CTEST_TIMEOUT_S" ${CTEST_REGEX:+-R "$CTEST_REGEX"} "$@"
}

# node_files FILES NAME: node --test of FILES, its output kept in NAME.tap too.
# node's runner reports "tests 0" and exits 0 when it found no test file: that is a failure here.
# Each test has a timeout (tests/api/harness.mjs: Node 18, Debian 12's, has no --test-timeout)
# and the whole run NODE_RUN_TIMEOUT_S, so that a file whose process stays alive (a server left
# open) fails the run instead of hanging CI.
NODE_RUN_TIMEOUT_S=1500
node_files()
{
    local files=$1 log=$TEST_DIR/$2.tap rc=0 wrap
    wrap=$(tocsin_sanitizer_wrap "$TOCSIN_BIN" --help)
    # shellcheck disable=SC2086
    $wrap timeout -k 10 "$NODE_RUN_TIMEOUT_S" node --test --test-concurrency=1 $files 2>&1 |
        tee "$log" || rc=$?
    [ "$rc" -eq 0 ] || return "$rc"
    if grep -Eq '^(# |ℹ )tests 0$' "$log"; then
        echo "node --test found no tests in $files" >&2
        return 1
    fi
}

run_node()
{
    reset_state
    node_files "${1:-$NODE_TESTS}" node
}

# The second lane: FILES against the lane's own PostgreSQL and Redis (the tests that restart
# PostgreSQL restart that one), their output in NAME.tap.
run_lane()
{
    redis-cli -h 127.0.0.1 -p "$LANE_REDIS_PORT" flushall >/dev/null
    TOCSIN_TEST_DATABASE_URL=postgresql://postgres@127.0.0.1:$LANE_PG_PORT/$TEST_DB \
        TOCSIN_TEST_REDIS_URL=redis://127.0.0.1:$LANE_REDIS_PORT/0 \
        TOCSIN_TEST_PG_DATA=$(readlink -f "$TEST_DIR/lane-pg") node_files "$1" "$2"
}

# The TSan stream files, in the second lane once its own files are done (PID, the lane's suite).
run_lane_tsan()
{
    while kill -0 "$1" 2>/dev/null; do
        sleep 1
    done
    echo "$SECONDS" >"$TEST_DIR/tsan-streams.start"
    TOCSIN_BIN=$TSAN_BIN TSAN_OPTIONS=$TSAN_RUN_OPTIONS run_lane "$TSAN_NODE_TESTS" tsan-streams
}

# The same tests with every server's PostgreSQL connections through PgBouncer in transaction
# mode (TOCSIN_DB_POOLED=1; the harness migrates each test database directly first).
run_node_pooled()
{
    TOCSIN_TEST_POOLER_URL=postgresql://postgres@127.0.0.1:$POOLER_PORT/$TEST_DB \
        run_node "$POOLED_TESTS"
}

# The soak's servers sit beside the suite's (PostgreSQL and PgBouncer on PG_PORT + 3 and + 4,
# Redis on REDIS_PORT + 3), its replicas, receivers and fault proxy on the 30 ports from
# TOCSIN_TEST_SOAK_HTTP_BASE (25600: below the harness's FREE_PORT_MIN and below the ephemeral
# range, so that neither a test's server nor an outgoing connection takes the port of a replica
# the soak has killed and starts again). So it runs beside the pass through PgBouncer, which has
# servers of its own too. The whole stage is bounded: a run that hangs fails.
SOAK_MINUTES_SUITE=2
SOAK_TIMEOUT_S=480
run_soak()
{
    SOAK_MINUTES=$SOAK_MINUTES_SUITE SOAK_SEED=${TOCSIN_TEST_SOAK_SEED:-} \
        TOCSIN_SOAK_PG_PORT=$((PG_PORT + 3)) TOCSIN_SOAK_REDIS_PORT=$((REDIS_PORT + 3)) \
        TOCSIN_SOAK_HTTP_BASE=${TOCSIN_TEST_SOAK_HTTP_BASE:-25600} TOCSIN_SOAK_DIR=$TEST_DIR/soak \
        timeout -k 10 "$SOAK_TIMEOUT_S" bash bench/soak.sh
}

tocsin_install_deps
tocsin_npm_install
# Prometheus's promtool checks /metrics in tests/api/ops.test.mjs and the alert rules in
# tests/deploy; not getting it fails the run.
TOCSIN_PROMTOOL=$(tocsin_promtool)
export TOCSIN_PROMTOOL
tocsin_build build-asan -DCMAKE_BUILD_TYPE=Debug -DTOCSIN_WERROR=ON -DTOCSIN_SANITIZE=ON \
    -DTOCSIN_TSAN=OFF
# The images build the service optimised, and only optimisation shows some warnings (format
# truncation among them): build it that way too, so such a warning fails here first.
tocsin_log "building the service in build-release"
cmake -S "$TOCSIN_ROOT" -B "$TOCSIN_ROOT/build-release" --log-level=WARNING -DCMAKE_BUILD_TYPE=Release \
    -DTOCSIN_WERROR=ON >/dev/null
cmake --build "$TOCSIN_ROOT/build-release" -j "$(nproc)" --target tocsin
# The TSan build too, before any suite: in a whole run its stream files run in the second lane.
TSAN_BIN=$TOCSIN_ROOT/build-tsan/tocsin
TSAN_RUN_OPTIONS=halt_on_error=1:second_deadlock_stack=1${TSAN_OPTIONS:+:$TSAN_OPTIONS}
if [ -f tests/tsan.supp ]; then
    TSAN_RUN_OPTIONS=$TSAN_RUN_OPTIONS:suppressions=$TOCSIN_ROOT/tests/tsan.supp
fi
# The stream hub's threads (its own, every HTTP thread's opens and reads, the wake queue) are only
# exercised by a server with streams, and the acceptor's bounds (counted by it, given back by both
# pools' threads) by connections coming and going: those suites again, against the TSan build.
TSAN_STREAMS=
if [ "$TSAN" != 0 ]; then
    tocsin_build build-tsan -DCMAKE_BUILD_TYPE=Debug -DTOCSIN_WERROR=ON -DTOCSIN_SANITIZE=OFF \
        -DTOCSIN_TSAN=ON
    if [ -d tests/api ] && { [ -z "$SELECTED" ] || [ -n "${TOCSIN_TEST_TSAN_NODE:-}" ]; }; then
        TSAN_STREAMS=1
    fi
fi

tocsin_log "starting PostgreSQL on 127.0.0.1:$PG_PORT and Redis on 127.0.0.1:$REDIS_PORT"
tocsin_redis_stop "$TEST_DIR/redis"
tocsin_redis_stop "$TEST_DIR/lane-redis"
tocsin_pg_stop "$TEST_DIR/pg"
tocsin_pg_wipe "$TEST_DIR/pg"
tocsin_pg_stop "$TEST_DIR/lane-pg"
tocsin_pg_wipe "$TEST_DIR/lane-pg"
rm -rf "$TEST_DIR"
mkdir -p "$TEST_DIR"
# Throwaway data: durability settings off make the suite faster and change no behaviour tested
# (the suite's PostgreSQL and the second lane's).
PG_TEST_SETTINGS=("fsync = off" "synchronous_commit = off" "full_page_writes = off"
    "max_connections = 300")
tocsin_pg_start "$TEST_DIR/pg" "$PG_PORT" "${PG_TEST_SETTINGS[@]}"
REDIS_ARGS=()
if [ "$REDIS_TLS" = 1 ]; then
    tocsin_tls_files "$TEST_DIR/tls"
    REDIS_ARGS=(--tls-port "$REDIS_TLS_PORT" --tls-cert-file "$TEST_DIR/tls/server.pem"
        --tls-key-file "$TEST_DIR/tls/server.key" --tls-ca-cert-file "$TEST_DIR/tls/ca.pem"
        --tls-auth-clients no)
    export TOCSIN_TEST_REDIS_TLS_URL=rediss://localhost:$REDIS_TLS_PORT/0
    export TOCSIN_TEST_REDIS_TLS_CA=$TEST_DIR/tls/ca.pem
    export TOCSIN_TEST_REDIS_TLS_SERVER_CERT=$TEST_DIR/tls/server.pem
    export TOCSIN_TEST_REDIS_TLS_SERVER_KEY=$TEST_DIR/tls/server.key
fi
tocsin_redis_start "$TEST_DIR/redis" "$REDIS_PORT" "${REDIS_ARGS[@]}"
if [ "$REDIS_CLUSTER" = 1 ]; then
    TOCSIN_TEST_REDIS_CLUSTER_URL=$(tocsin_cluster_start "$TEST_DIR/cluster" "$CLUSTER_PORT" 3)
    export TOCSIN_TEST_REDIS_CLUSTER_URL
fi
tocsin_pg_createdb "$PG_PORT" "$TEST_DB"
if [ -n "$LANE" ]; then
    tocsin_log "the second lane's PostgreSQL on 127.0.0.1:$LANE_PG_PORT and Redis on 127.0.0.1:$LANE_REDIS_PORT"
    tocsin_pg_start "$TEST_DIR/lane-pg" "$LANE_PG_PORT" "${PG_TEST_SETTINGS[@]}"
    tocsin_redis_start "$TEST_DIR/lane-redis" "$LANE_REDIS_PORT"
    tocsin_pg_createdb "$LANE_PG_PORT" "$TEST_DB"
fi
tocsin_pgbouncer_start "$TEST_DIR/pgbouncer" "$POOLER_PORT" "$PG_PORT"

export TOCSIN_TEST_DATABASE_URL=postgresql://postgres@127.0.0.1:$PG_PORT/$TEST_DB
export TOCSIN_TEST_REDIS_URL=redis://127.0.0.1:$REDIS_PORT/0
export TOCSIN_BIN=$TOCSIN_ROOT/build-asan/tocsin
REDIS_SERVER_BIN=$(command -v redis-server)
PG_BIN_DIR=$(tocsin_pg_bindir)
# The engine tests restart PostgreSQL on purpose: where its data is and who runs it.
TOCSIN_TEST_PG_DATA=$(readlink -f "$TEST_DIR/pg")
TOCSIN_TEST_PG_USER=$(pg_user)
export REDIS_SERVER_BIN PG_BIN_DIR TOCSIN_TEST_PG_DATA TOCSIN_TEST_PG_USER
export ASAN_OPTIONS=halt_on_error=1:abort_on_error=0:detect_leaks=1:strict_string_checks=1:check_initialization_order=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export LSAN_OPTIONS=${LSAN_OPTIONS:-}
if [ -f tests/lsan.supp ]; then
    LSAN_OPTIONS=suppressions=$TOCSIN_ROOT/tests/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}
fi

# web/tocsin-api.d.ts must be what api/openapi.yaml generates, and the client and an example
# using those types must type-check (tests/types/check.mjs).
if [ -z "$SELECTED" ]; then
    record types node tests/types/check.mjs
fi
if [ "$CTEST" != 0 ]; then
    record ctest run_ctest build-asan
fi
if [ -n "$LANE" ]; then
    record_start lane run_lane "$LANE_TESTS" lane
    if [ -n "$TSAN_STREAMS" ]; then
        record_start tsan-streams run_lane_tsan "${BG_PID[lane]}"
    fi
fi
if [ -d tests/api ] && [ -n "$NODE_TESTS" ]; then
    record node run_node
fi
if [ -n "$LANE" ]; then
    record_wait lane
fi
# The soak under faults (bench/soak.sh, docs/soak.md), SOAK_MINUTES of load against the ASan
# build on servers of its own; its seed is printed (TOCSIN_TEST_SOAK_SEED replays one).
# It runs in the background, beside the pass through PgBouncer (both wait more than they compute:
# about two minutes each, one after the other).
SOAK=
if [ -z "$SELECTED" ] || [ "${TOCSIN_TEST_SOAK:-0}" = 1 ]; then
    SOAK=1
    record_start soak run_soak
fi
if [ -d tests/api ]; then
    if [ -z "$SELECTED" ] || [ -n "${TOCSIN_TEST_POOLED:-}" ]; then
        record pgbouncer run_node_pooled
    fi
fi
if [ -n "$SOAK" ]; then
    record_wait soak
fi
# deploy/kubernetes rendered with kubectl kustomize and schema-checked, deploy/prometheus's rules
# checked and unit-tested with promtool: offline (no servers).
if [ -d tests/deploy ] && [ -z "$SELECTED" ]; then
    record manifests node --test tests/deploy/
fi

if [ "$TSAN" != 0 ]; then
    # A regex that names only unit tests matches nothing labelled integration: under TSan that is
    # nothing to run, not a failure (the ASan stage above failed if it matched nothing at all).
    if [ "$CTEST" != 0 ]; then
        TOCSIN_BIN=$TSAN_BIN TSAN_OPTIONS=$TSAN_RUN_OPTIONS \
            record tsan run_ctest build-tsan -L integration ${CTEST_REGEX:+--no-tests=ignore}
    fi
    if [ -n "$TSAN_STREAMS" ] && [ -n "$LANE" ]; then
        record_wait tsan-streams
    elif [ -n "$TSAN_STREAMS" ]; then
        TOCSIN_BIN=$TSAN_BIN TSAN_OPTIONS=$TSAN_RUN_OPTIONS record tsan-streams run_node "$TSAN_NODE_TESTS"
    fi
fi

summary
[ "$FAILED" -eq 0 ]
