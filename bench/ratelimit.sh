#!/usr/bin/env bash
# bench/ratelimit.sh -- what the per-tenant rate limit (TOCSIN_TENANT_RATE) costs a request: the
# same GET /v1/meetings/{id} driven by wrk (bench/get.lua, keep-alive) against one replica without
# the limit and one with it set too high to refuse anything, in alternating rounds of one run, so
# both see the same machine. Prints each round's req/s and p99 and the medians' ratio.
# Environment: BENCH_DURATION_S (10), BENCH_ROUNDS (3), BENCH_CONNECTIONS (32). Not part of CI.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$TOCSIN_ROOT"

PG_PORT=${TOCSIN_BENCH_PG_PORT:-54379}
REDIS_PORT=${TOCSIN_BENCH_REDIS_PORT:-63849}
HTTP_ADDR=${TOCSIN_BENCH_HTTP_ADDR:-127.0.0.1:18090}
DURATION_S=${BENCH_DURATION_S:-10}
ROUNDS=${BENCH_ROUNDS:-3}
CONNECTIONS=${BENCH_CONNECTIONS:-32}
HIGH_RATE=1000000 # TOCSIN_TENANT_RATE's bound: every request takes a token, none is refused
BENCH=$TOCSIN_ROOT/.local/bench-rate
. bench/wrk.sh

# run_round RATE: "req_s p99_ms" of one wrk run against a replica with TOCSIN_TENANT_RATE=RATE.
run_round()
{
    local res rate p99
    bench_serve TOCSIN_TENANT_RATE="$1" TOCSIN_TENANT_BURST=$HIGH_RATE
    res=$(TOKEN=$TOKEN MEETING=$MEETING bench_wrk bench/get.lua "$CONNECTIONS" "$DURATION_S")
    bench_stop
    read -r rate _ p99 <<<"$res"
    echo "$rate $p99"
}

median()
{
    sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

bench_fresh
TOKEN=$("$BIN" keys create --tenant bench)
bench_serve
MEETING=$(curl -fs -X POST "$URL/v1/meetings" -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/json' \
    -d '{"title":"Benchmark sync","starts_at":"2030-01-07T09:00:00Z","reminders":[]}' |
    sed -n 's/.*"id":"\([0-9a-f-]\{36\}\)".*/\1/p')
bench_stop
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
