#!/usr/bin/env bash
# bench/create.sh -- meeting-creation throughput next to PostgreSQL's own insert rate, in one run:
# a release build, its own PostgreSQL and Redis under .local/bench, `tocsin serve` driven by wrk
# (bench/create.lua, keep-alive), then pgbench running the same inserts (bench/create.sql) with the
# same client count and duration. Prints req/s, tx/s, their ratio and wrk's p50/p99 latency.
# Then the batch scenario on the same replica: BENCH_BATCH_MEETINGS (100000) meetings with one
# reminder each through POST /v1/meetings/batch, 1,000 a request, BENCH_BATCH_CLIENTS (4) requests
# at once (curl), checked afterwards in PostgreSQL (every meeting and reminder there) and Redis
# (a key per reminder); prints meetings/s and its ratio to the single creates' req/s above. Last,
# BENCH_IMPORT_MEETINGS (100000) such meetings as JSON lines through `tocsin import`, timed, once
# for each --jobs of BENCH_IMPORT_JOBS ("1 2 4"), each run new lines.
# Environment: BENCH_DURATION_S (15), BENCH_CONNECTIONS ("32 64"), TOCSIN_BENCH_THREADS (unset:
# try 8, 16 and 32 HTTP threads for 5 s each and keep the fastest). Not part of CI.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$TOCSIN_ROOT"

PG_PORT=${TOCSIN_BENCH_PG_PORT:-54349}
REDIS_PORT=${TOCSIN_BENCH_REDIS_PORT:-63819}
HTTP_ADDR=${TOCSIN_BENCH_HTTP_ADDR:-127.0.0.1:18080}
DURATION_S=${BENCH_DURATION_S:-15}
CONNECTIONS=${BENCH_CONNECTIONS:-32 64}
TUNE_THREADS="8 16 32"
BATCH_MEETINGS=${BENCH_BATCH_MEETINGS:-100000}
BATCH_CLIENTS=${BENCH_BATCH_CLIENTS:-4}
BATCH_SIZE=1000 # DB_MEETING_BATCH_MAX
IMPORT_MEETINGS=${BENCH_IMPORT_MEETINGS:-100000}
IMPORT_JOBS=${BENCH_IMPORT_JOBS:-1 2 4}
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

# batch_body N: a batch of N meetings, one reminder each, starting in 2 hours (inside the default
# mirror horizon, so Redis is written too), with the participants of create.lua.
batch_body()
{
    awk -v n="$1" -v s="$(date -u -d '+2 hours' +%Y-%m-%dT%H:%M:%SZ)" 'BEGIN {
        printf "{\"items\":["
        for (i = 0; i < n; i++)
            printf "%s{\"title\":\"Batch %d\",\"starts_at\":\"%s\",\"participants\":" \
                "[{\"id\":\"u1\",\"name\":\"Ada\",\"email\":\"ada@example.com\"}," \
                "{\"id\":\"u2\",\"name\":\"Grace\",\"email\":\"grace@example.com\"}," \
                "{\"id\":\"u3\",\"name\":\"Edsger\",\"email\":\"edsger@example.com\"}]," \
                "\"reminders\":[{\"minutes_before\":10}]}", i ? "," : "", i, s
        printf "]}\n"
    }'
}

psql_bench()
{
    "$(tocsin_pg_bindir)/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -d tocsin -tA -c "$1"
}

# run_batches: "meetings_s seconds" for BATCH_MEETINGS meetings; dies unless every request
# answered 200 with every item 201, and every meeting, reminder and Redis key is there.
run_batches()
{
    local n=$((BATCH_MEETINGS / BATCH_SIZE)) keys0 keys1 t0 t1 bad made rems
    batch_body "$BATCH_SIZE" >"$BENCH/batch.json"
    keys0=$(redis-cli -p "$REDIS_PORT" DBSIZE)
    t0=$(date +%s.%N)
    bad=$(seq "$n" | xargs -P "$BATCH_CLIENTS" -I{} curl -sS -o "$BENCH/batch.{}.out" \
        -w '%{http_code}\n' -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
        --data-binary @"$BENCH/batch.json" "$URL/v1/meetings/batch" | grep -vc '^200$' || true)
    t1=$(date +%s.%N)
    [ "$bad" -eq 0 ] || tocsin_die "batch: $bad requests did not answer 200"
    ! grep -l '"status":[^2]' "$BENCH"/batch.*.out >/dev/null || tocsin_die "batch: an item failed"
    made=$(psql_bench "SELECT count(*) FROM meetings WHERE title LIKE 'Batch %'")
    rems=$(psql_bench "SELECT count(*) FROM reminders r JOIN meetings m ON m.id = r.meeting_id
        WHERE m.title LIKE 'Batch %' AND r.status = 'pending'")
    keys1=$(redis-cli -p "$REDIS_PORT" DBSIZE)
    [ "$made" -eq "$BATCH_MEETINGS" ] && [ "$rems" -eq "$BATCH_MEETINGS" ] ||
        tocsin_die "batch: $made meetings and $rems pending reminders, not $BATCH_MEETINGS"
    [ $((keys1 - keys0)) -ge "$BATCH_MEETINGS" ] ||
        tocsin_die "batch: $((keys1 - keys0)) new Redis keys for $BATCH_MEETINGS reminders"
    rm -f "$BENCH"/batch.*.out
    awk -v m="$BATCH_MEETINGS" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f %.2f\n", m / (b - a), b - a }'
}

# run_import JOBS: "meetings_s seconds" of `tocsin import --jobs JOBS` over IMPORT_MEETINGS new
# lines (one reminder each, titles of their own so that each line is a meeting of its own and
# each run's are new); dies unless it exits 0 with every one in PostgreSQL.
run_import()
{
    local t0 t1 made
    batch_body "$IMPORT_MEETINGS" | sed 's/^{"items":\[//; s/\]}$//; s/},{"title"/}\n{"title"/g' |
        sed "s/\"title\":\"Batch /\"title\":\"Import $1 /" >"$BENCH/import.jsonl"
    t0=$(date +%s.%N)
    "$BIN" import --jobs "$1" --tenant bench "$BENCH/import.jsonl" 2>"$BENCH/import.log" ||
        tocsin_die "import failed: $(tail -n 5 "$BENCH/import.log")"
    t1=$(date +%s.%N)
    made=$(psql_bench "SELECT count(*) FROM meetings WHERE title LIKE 'Import $1 %'")
    [ "$made" -eq "$IMPORT_MEETINGS" ] || tocsin_die "import: $made meetings, not $IMPORT_MEETINGS"
    awk -v m="$IMPORT_MEETINGS" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f %.2f\n", m / (b - a), b - a }'
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
tocsin_log "batch: $BATCH_MEETINGS meetings, $BATCH_SIZE a request, $BATCH_CLIENTS at once"
read -r batch_rate batch_s <<<"$(run_batches)"
imports=()
for j in $IMPORT_JOBS; do
    tocsin_log "import: $IMPORT_MEETINGS meetings through tocsin import --jobs $j"
    imports+=("$j $(run_import "$j")")
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

read -r _ single_rate _ <<<"${results[0]}"
echo
echo "batch: $BATCH_MEETINGS meetings (one reminder each) in $batch_s s: $batch_rate meetings/s," \
    "$(awk -v a="$batch_rate" -v b="$single_rate" 'BEGIN { printf "%.1f", a / b }')x the single" \
    "creates' $single_rate req/s above (${results[0]%% *} connections)"
for r in "${imports[@]}"; do
    read -r j import_rate import_s <<<"$r"
    echo "import: $IMPORT_MEETINGS meetings (one reminder each) through tocsin import --jobs $j in" \
        "$import_s s: $import_rate meetings/s"
done
