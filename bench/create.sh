#!/usr/bin/env bash
# bench/create.sh -- meeting-creation throughput next to PostgreSQL's own insert rate, in one run:
# a release build, its own PostgreSQL and Redis under .local/bench, `tocsin serve` driven by wrk
# (bench/create.lua, keep-alive), then pgbench running the same inserts (bench/create.sql) with the
# same client count and duration. Prints req/s, tx/s, their ratio and wrk's p50/p99 latency.
# Environment: BENCH_DURATION_S (15), BENCH_CONNECTIONS ("32 64"), TOCSIN_BENCH_THREADS (unset:
# try 8, 16 and 32 HTTP threads for 5 s each and keep the fastest). Not part of CI.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
cd "$TOCSIN_ROOT"

PG_PORT=${TOCSIN_BENCH_PG_PORT:-54349}
REDIS_PORT=${TOCSIN_BENCH_REDIS_PORT:-63819}
HTTP_ADDR=${TOCSIN_BENCH_HTTP_ADDR:-127.0.0.1:18080}
DURATION_S=${BENCH_DURATION_S:-15}
CONNECTIONS=${BENCH_CONNECTIONS:-32 64}
TUNE_THREADS="8 16 32"
TUNE_DURATION_S=5
BENCH=$TOCSIN_ROOT/.local/bench
. bench/wrk.sh

start_serve()
{
    bench_serve TOCSIN_HTTP_THREADS="$1"
}

# run_wrk CONNECTIONS SECONDS: "req_s p50_ms p99_ms" of create.lua.
run_wrk()
{
    TOKEN=$TOKEN bench_wrk bench/create.lua "$1" "$2"
}

# run_pgbench CLIENTS SECONDS: prints the transactions per second of create.sql.
run_pgbench()
{
    local out
    out=$("$(tocsin_pg_bindir)/pgbench" -h 127.0.0.1 -p "$PG_PORT" -U postgres -n -M prepared \
        -c "$1" -j "$(nproc)" -T "$2" -D tenant="$TENANT_ID" -f bench/create.sql tocsin 2>&1) ||
        tocsin_die "pgbench failed: $out"
    sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out" | head -n 1
}

bench_fresh
TOKEN=$("$BIN" keys create --tenant bench)
TENANT_ID=$("$(tocsin_pg_bindir)/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -d tocsin -tA \
    -c "SELECT id FROM tenants WHERE name = 'bench'")

threads=${TOCSIN_BENCH_THREADS:-}
if [ -z "$threads" ]; then
    best=0
    for t in $TUNE_THREADS; do
        start_serve "$t"
        res=$(run_wrk 32 "$TUNE_DURATION_S")
        read -r rate _ <<<"$res"
        bench_stop
        tocsin_log "TOCSIN_HTTP_THREADS=$t: $rate req/s (32 connections, ${TUNE_DURATION_S} s)"
        if [ "${rate%.*}" -gt "$best" ]; then
            best=${rate%.*}
            threads=$t
        fi
    done
fi

start_serve "$threads"
results=()
for c in $CONNECTIONS; do
    tocsin_log "wrk: $c connections, ${DURATION_S} s"
    res=$(run_wrk "$c" "$DURATION_S")
    read -r rate p50 p99 <<<"$res"
    results+=("$c $rate $p50 $p99")
done
bench_stop
i=0
for c in $CONNECTIONS; do
    tocsin_log "pgbench: $c clients, ${DURATION_S} s"
    tps=$(run_pgbench "$c" "$DURATION_S")
    results[i]="${results[i]} $tps"
    i=$((i + 1))
done

echo
echo "meeting creation, TOCSIN_HTTP_THREADS=$threads, ${DURATION_S} s per run, $(nproc) CPUs"
printf '%-12s %14s %10s %10s %16s %8s\n' connections "tocsin req/s" "p50 ms" "p99 ms" \
    "pgbench tx/s" ratio
for r in "${results[@]}"; do
    read -r c rate p50 p99 tps <<<"$r"
    printf '%-12s %14s %10s %10s %16.0f %8s\n' "$c" "$rate" "$p50" "$p99" "$tps" \
        "$(awk -v a="$rate" -v b="$tps" 'BEGIN { printf "%.2f", a / b }')"
done
