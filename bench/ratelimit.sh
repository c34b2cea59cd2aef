#!/usr/bin/env bash
# bench/ratelimit.sh -- what the per-tenant rate limit (TOCSIN_TENANT_RATE) costs a request: the
# same GET /v1/meetings/{id} driven by wrk (bench/get.lua, keep-alive) against one replica without
# the limit and one with it set too high to refuse anything, in alternating rounds of one run, so
# both see the same machine. Prints each round's req/s and p99 and the medians' ratio.
# Environment: BENCH_DURATION_S (10), BENCH_ROUNDS (3), BENCH_CONNECTIONS (32). Not part of CI.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
cd "$TOCSIN_ROOT"

PG_PORT=${TOCSIN_BENCH_PG_PORT:-54349}
REDIS_PORT=${TOCSIN_BENCH_REDIS_PORT:-63819}
HTTP_ADDR=${TOCSIN_BENCH_HTTP_ADDR:-127.0.0.1:18080}
DURATION_S=${BENCH_DURATION_S:-10}
ROUNDS=${BENCH_ROUNDS:-3}
CONNECTIONS=${BENCH_CONNECTIONS:-32}
HIGH_RATE=1000000 # TOCSIN_TENANT_RATE's bound: every request takes a token, none is refused
BENCH=$TOCSIN_ROOT/.local/bench
BIN=$TOCSIN_ROOT/build-release/tocsin
URL=http://$HTTP_ADDR

export TOCSIN_DATABASE_URL=postgresql://postgres@127.0.0.1:$PG_PORT/tocsin
export TOCSIN_REDIS_URL=redis://127.0.0.1:$REDIS_PORT/0
export TOCSIN_HTTP_ADDR=$HTTP_ADDR
export TOCSIN_LOG_LEVEL=warn

SERVE_PID=
cleanup()
{
    local rc=$?
    trap - EXIT INT TERM
    stop_serve
    tocsin_redis_stop "$BENCH/redis" || true
    tocsin_pg_stop "$BENCH/pg" || true
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start_serve RATE: a replica with TOCSIN_TENANT_RATE=RATE (0: off).
start_serve()
{
    TOCSIN_TENANT_RATE=$1 TOCSIN_TENANT_BURST=$HIGH_RATE "$BIN" serve >>"$BENCH/serve.log" 2>&1 &
    SERVE_PID=$!
    wait_for "tocsin on $URL" curl -fs -o /dev/null "$URL/readyz"
}

stop_serve()
{
    [ -n "$SERVE_PID" ] || return 0
    kill -TERM "$SERVE_PID" 2>/dev/null || true
    wait "$SERVE_PID" 2>/dev/null || true
    SERVE_PID=
}

# run_round RATE: prints "req_s p99_ms" of one wrk run against a replica with that rate.
run_round()
{
    local out line
    start_serve "$1"
    out=$(TOKEN=$TOKEN MEETING=$MEETING wrk -t "$(nproc)" -c "$CONNECTIONS" -d "${DURATION_S}s" \
        -s bench/get.lua "$URL")
    stop_serve
    line=$(grep '^RESULT ' <<<"$out") || tocsin_die "wrk printed no result: $out"
    awk '{
        for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
        if (v["errors"] > 0) { printf "wrk: %d errors\n", v["errors"] > "/dev/stderr"; exit 1 }
        printf "%.0f %.2f\n", v["requests"] / (v["duration_us"] / 1e6), v["p99_us"] / 1000
    }' <<<"$line"
}

median()
{
    sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

tocsin_install_deps
tocsin_build build-release -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" \
    -DTOCSIN_WERROR=OFF -DTOCSIN_SANITIZE=OFF -DTOCSIN_TSAN=OFF

tocsin_redis_stop "$BENCH/redis"
tocsin_pg_stop "$BENCH/pg"
tocsin_pg_wipe "$BENCH/pg"
rm -rf "$BENCH"
mkdir -p "$BENCH"
tocsin_pg_start "$BENCH/pg" "$PG_PORT"
tocsin_redis_start "$BENCH/redis" "$REDIS_PORT"
"$BIN" migrate
TOKEN=$("$BIN" keys create --tenant bench)
start_serve 0
MEETING=$(curl -fs -X POST "$URL/v1/meetings" -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/json' \
    -d '{"title":"Benchmark sync","starts_at":"2030-01-07T09:00:00Z","reminders":[]}' |
    sed -n 's/.*"id":"\([0-9a-f-]\{36\}\)".*/\1/p')
stop_serve
[ -n "$MEETING" ] || tocsin_die "the benchmark's meeting was not created"

off=()
on=()
for ((r = 1; r <= ROUNDS; r++)); do
    tocsin_log "round $r: without the limit, then with TOCSIN_TENANT_RATE=$HIGH_RATE"
    off+=("$(run_round 0)")
    on+=("$(run_round "$HIGH_RATE")")
done

echo
echo "GET /v1/meetings/{id}, $CONNECTIONS connections, ${DURATION_S} s per round, $(nproc) CPUs"
printf '%-8s %18s %10s %18s %10s\n' round "no limit req/s" "p99 ms" "limit req/s" "p99 ms"
for ((r = 0; r < ROUNDS; r++)); do
    read -r a ap <<<"${off[r]}"
    read -r b bp <<<"${on[r]}"
    printf '%-8s %18s %10s %18s %10s\n' $((r + 1)) "$a" "$ap" "$b" "$bp"
done
m_off=$(printf '%s\n' "${off[@]}" | awk '{ print $1 }' | median)
m_on=$(printf '%s\n' "${on[@]}" | awk '{ print $1 }' | median)
printf 'medians: %s req/s without, %s with: ratio %s\n' "$m_off" "$m_on" \
    "$(awk -v a="$m_on" -v b="$m_off" 'BEGIN { printf "%.3f", a / b }')"
