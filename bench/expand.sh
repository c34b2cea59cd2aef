#!/usr/bin/env bash
# bench/expand.sh -- what a calendar read costs over long COUNT series (issue 35, N4): tenant
# "count" has BENCH_SERIES (300) FREQ=DAILY;COUNT=10000 series starting tomorrow, tenant "until"
# the same series written as UNTIL rules of the same length. One request,
# GET /v1/meetings?expand=true over BENCH_FROM..BENCH_TO (2050-06-01..2051-07-01, 24 years ahead)
# and limit=10, is timed: the COUNT series as stored (with their UNTIL equivalent), the UNTIL
# series (the baseline), the COUNT series over their first 13 months, and the COUNT series with
# count_until emptied as it is for a series stored before migration 018 (each rule then walked
# from its start, as every read did before). Each line: over BENCH_ROUNDS (5) requests, the median
# wall time (curl) and the replica's CPU time per request (utime + stime of /proc/PID/stat).
# Also prints the time the creates took. TOCSIN_BENCH_PG_PORT, TOCSIN_BENCH_REDIS_PORT and
# TOCSIN_BENCH_HTTP_ADDR move its servers. Not part of CI.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$TOCSIN_ROOT"

PG_PORT=${TOCSIN_BENCH_PG_PORT:-54389}
REDIS_PORT=${TOCSIN_BENCH_REDIS_PORT:-63859}
HTTP_ADDR=${TOCSIN_BENCH_HTTP_ADDR:-127.0.0.1:18091}
SERIES=${BENCH_SERIES:-300}
ROUNDS=${BENCH_ROUNDS:-5}
FROM=${BENCH_FROM:-2050-06-01T00:00:00Z}
TO=${BENCH_TO:-2051-07-01T00:00:00Z}
COUNT=10000 # RECUR_COUNT_MAX
BENCH=$TOCSIN_ROOT/.local/bench-expand
. bench/wrk.sh

TICK_HZ=$(getconf CLK_TCK)
START_DAY=$(date -u -d tomorrow +%F)
# The UNTIL rule of the same length: its last day, the 10,000th.
UNTIL=$(date -u -d "$START_DAY + $((COUNT - 1)) days" +%Y%m%d)
NEAR_TO=$(date -u -d "$START_DAY + 13 months" +%FT00:00:00Z)

# cpu_ticks: the replica's user + system CPU time so far, in clock ticks.
cpu_ticks()
{
    awk '{ print $14 + $15 }' "/proc/$SERVE_PID/stat"
}

# create_series TOKEN RULE_SUFFIX: SERIES daily series, one an hour of the day after another.
create_series()
{
    local i hour
    for ((i = 0; i < SERIES; i++)); do
        hour=$(printf %02d $((i % 24)))
        curl -fs -o /dev/null -X POST "$URL/v1/meetings" -H "Authorization: Bearer $1" \
            -H 'Content-Type: application/json' \
            -d "{\"title\":\"s$i\",\"starts_at\":\"${START_DAY}T$hour:$(printf %02d $((i / 24))):00Z\",
                 \"time_zone\":\"UTC\",\"reminders\":[],
                 \"recurrence\":{\"rrule\":\"FREQ=DAILY;$2\"}}" ||
            tocsin_die "create $i ($2) failed"
    done
}

# read_once TOKEN FROM TO: the wall time of one expand request, in ms.
read_once()
{
    local wall
    wall=$(curl -fs -o /dev/null -w '%{time_total}' -H "Authorization: Bearer $1" \
        "$URL/v1/meetings?expand=true&from=$2&to=$3&limit=10") || tocsin_die "expand failed"
    awk -v w="$wall" 'BEGIN { printf "%.1f\n", w * 1000 }'
}

median()
{
    sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# measure LABEL TOKEN FROM TO: one line of the table: the median wall time of ROUNDS requests
# one after another, and the replica's CPU time over them divided by ROUNDS (a clock tick is
# 10 ms: one request's would be too coarse).
measure()
{
    local r walls=() before after
    before=$(cpu_ticks)
    for ((r = 0; r < ROUNDS; r++)); do
        walls+=("$(read_once "$2" "$3" "$4")")
    done
    after=$(cpu_ticks)
    printf '%-52s %12s %12s\n' "$1" "$(printf '%s\n' "${walls[@]}" | median)" \
        "$(awk -v b="$before" -v a="$after" -v hz="$TICK_HZ" -v n="$ROUNDS" \
            'BEGIN { printf "%.1f", (a - b) * 1000 / hz / n }')"
}

bench_fresh
COUNT_KEY=$("$BIN" keys create --tenant count)
UNTIL_KEY=$("$BIN" keys create --tenant until)
bench_serve
tocsin_log "creating $SERIES COUNT series and $SERIES UNTIL series from $START_DAY"
t0=$(date +%s.%N)
create_series "$COUNT_KEY" "COUNT=$COUNT"
t1=$(date +%s.%N)
create_series "$UNTIL_KEY" "UNTIL=${UNTIL}T235959Z"
t2=$(date +%s.%N)

echo
echo "$SERIES series of FREQ=DAILY;COUNT=$COUNT per tenant, expand=true&limit=10, $(nproc) CPUs"
awk -v a="$t0" -v b="$t1" -v c="$t2" -v n="$SERIES" 'BEGIN {
    printf "creates: COUNT %.1f s (%.1f ms each), UNTIL %.1f s (%.1f ms each)\n",
        b - a, (b - a) * 1000 / n, c - b, (c - b) * 1000 / n }'
printf '%-52s %12s %12s\n' "read ($ROUNDS each)" "median ms" "CPU ms each"
measure "COUNT, $FROM..$TO" "$COUNT_KEY" "$FROM" "$TO"
measure "UNTIL (baseline), same window" "$UNTIL_KEY" "$FROM" "$TO"
measure "COUNT, first 13 months" "$COUNT_KEY" "${START_DAY}T00:00:00Z" "$NEAR_TO"
"$(tocsin_pg_bindir)/psql" -qAt "$TOCSIN_DATABASE_URL" \
    -c "UPDATE series SET count_until = NULL WHERE rrule LIKE '%COUNT=%'" >/dev/null
measure "COUNT without count_until (as before 018)" "$COUNT_KEY" "$FROM" "$TO"
