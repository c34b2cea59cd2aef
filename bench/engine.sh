#!/usr/bin/env bash
# bench/engine.sh -- the reminder engine and its delivery at scale (bench/engine.mjs), with BullMQ
# as the baselines of the burst (bench/bullmq.mjs: the queue alone, and BullMQ + webhook, the same
# hop as tocsin's), in one run: a release build, its own PostgreSQL and Redis under
# .local/bench-engine, a second Redis for BullMQ, replicas and local receivers.
# Environment (defaults in engine.mjs): BENCH_SCENARIOS ("steady burst kill work throughput
# lateness"), BENCH_REPLICAS (3), BENCH_BURST (50000), BENCH_BURST_ROUNDS (1: the burst and
# BullMQ's two this many times, each ratio and their medians), BENCH_BULLMQ_WORKERS (3),
# BENCH_BULLMQ_CONCURRENCY (100), BENCH_KILL_BURST (10000), BENCH_WORK_REPLICAS ("1 3 6"),
# BENCH_WORK_DUE (10000), BENCH_SLOW_MS (100), BENCH_SLOW_WEBHOOKS ("1 16"),
# BENCH_SLOW_DELIVERIES (20000), BENCH_PENDING (1000000), BENCH_DUE (10000), BENCH_SPREAD_S (20),
# BENCH_LOAD_CONNECTIONS (32), BENCH_WORKERS (TOCSIN_DELIVERY_WORKERS of the replicas). Ports: TOCSIN_BENCH_PG_PORT, TOCSIN_BENCH_REDIS_PORT,
# TOCSIN_BENCH_BULLMQ_REDIS_PORT. BENCH_PG_STATEMENTS=1: the burst also prints PostgreSQL's
# statements by time, the steady one per reminder, and the work scenario by blocks per fired
# reminder (pg_stat_statements); BENCH_PG_CONF, more postgresql.conf lines.
# BENCH_REDIS_MODES ("plain"; any of "plain tls cluster"): the scenarios run once per mode, with
# the replicas on the bench Redis (plain), on a Redis of its own over TLS (rediss://, a CA made
# here; port TOCSIN_BENCH_REDIS_TLS_PORT) or on a 3-master Redis Cluster (redis-cluster://, ports
# TOCSIN_BENCH_CLUSTER_PORT and the two after it), and the report sets them side by side.
# Not part of CI.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$TOCSIN_ROOT"

PG_PORT=${TOCSIN_BENCH_PG_PORT:-54359}
REDIS_PORT=${TOCSIN_BENCH_REDIS_PORT:-63829}
BULLMQ_REDIS_PORT=${TOCSIN_BENCH_BULLMQ_REDIS_PORT:-63839}
DIR=$TOCSIN_ROOT/.local/bench-engine
BIN=$TOCSIN_ROOT/build-release/tocsin
REDIS_MODES=${BENCH_REDIS_MODES:-plain}
TLS_PORT=${TOCSIN_BENCH_REDIS_TLS_PORT:-63849}
CLUSTER_PORT=${TOCSIN_BENCH_CLUSTER_PORT:-7120}

stop_bullmq_redis()
{
    tocsin_redis_stop "$DIR/bullmq-redis"
    tocsin_redis_stop "$DIR/redis-tls"
    tocsin_cluster_stop "$DIR/cluster"
}
bench_traps "$DIR"
bench_on_exit stop_bullmq_redis

bench_release_build
if [ ! -f bench/node_modules/.package-lock.json ] ||
    [ bench/package-lock.json -nt bench/node_modules/.package-lock.json ]; then
    tocsin_log "installing the Node packages of bench/ (BullMQ)"
    # npm install, not ci: npm writes this lock without the other platforms' optional binaries of
    # msgpackr-extract and then refuses it in ci; install still takes the locked versions.
    (cd bench && npm install --no-audit --no-fund --loglevel=error </dev/null)
fi

stop_bullmq_redis
bench_servers_stop "$DIR"
# Someone else's server on one of these ports would answer the readiness checks and be measured
# (or emptied) instead of ours: refuse to start.
for port in "$PG_PORT" "$REDIS_PORT" "$BULLMQ_REDIS_PORT"; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        tocsin_die "127.0.0.1:$port is taken; choose other ports (TOCSIN_BENCH_*_PORT)"
    fi
done
bench_servers_wipe "$DIR"
# Six replicas of the work scenario hold about 25 connections each.
PG_CONF=("max_connections = 300" "shared_buffers = 512MB")
if [ "${BENCH_PG_STATEMENTS:-}" = 1 ]; then
    PG_CONF+=("shared_preload_libraries = 'pg_stat_statements'")
fi
# BENCH_PG_CONF: more postgresql.conf lines, one a line, for an experiment (what the commits'
# WAL flushes cost: "synchronous_commit = off"). The defaults are PostgreSQL's: fsync on.
if [ -n "${BENCH_PG_CONF:-}" ]; then
    mapfile -t extra <<<"$BENCH_PG_CONF"
    PG_CONF+=("${extra[@]}")
fi
bench_servers_start "$DIR" "$PG_PORT" "$REDIS_PORT" "${PG_CONF[@]}"
tocsin_redis_start "$DIR/bullmq-redis" "$BULLMQ_REDIS_PORT"
export BENCH_REDIS_MODES=$REDIS_MODES BENCH_REDIS_URL_PLAIN=redis://127.0.0.1:$REDIS_PORT/0
if [[ " $REDIS_MODES " == *" tls "* ]]; then
    tocsin_tls_files "$DIR/tls"
    # Its plain port (the next one) only answers the start-up check.
    tocsin_redis_start "$DIR/redis-tls" $((TLS_PORT + 1)) --tls-port "$TLS_PORT" \
        --tls-cert-file "$DIR/tls/server.pem" --tls-key-file "$DIR/tls/server.key" \
        --tls-ca-cert-file "$DIR/tls/ca.pem" --tls-auth-clients no
    export BENCH_REDIS_URL_TLS=rediss://localhost:$TLS_PORT/0 BENCH_REDIS_TLS_CA=$DIR/tls/ca.pem
fi
if [[ " $REDIS_MODES " == *" cluster "* ]]; then
    BENCH_REDIS_URL_CLUSTER=$(tocsin_cluster_start "$DIR/cluster" "$CLUSTER_PORT" 3)
    export BENCH_REDIS_URL_CLUSTER
fi
"$BIN" migrate
if [ "${BENCH_PG_STATEMENTS:-}" = 1 ]; then
    "$(tocsin_pg_bindir)/psql" "$TOCSIN_DATABASE_URL" -qc 'CREATE EXTENSION pg_stat_statements'
fi
BENCH_TOKEN=$("$BIN" keys create --tenant bench)
BENCH_PSQL=$(tocsin_pg_bindir)/psql
export BENCH_TOKEN BENCH_PSQL TOCSIN_BIN=$BIN BENCH_DB_URL=$TOCSIN_DATABASE_URL
export BENCH_REDIS_PORT=$REDIS_PORT BENCH_BULLMQ_REDIS_PORT=$BULLMQ_REDIS_PORT BENCH_PG_DATA=$DIR/pg
node bench/engine.mjs
