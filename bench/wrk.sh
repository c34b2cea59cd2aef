# bench/wrk.sh -- what the benchmarks of one replica on HTTP_ADDR (create.sh, ratelimit.sh,
# expand.sh, inbox.sh) share. Sourced after bench/lib.sh with BENCH (their folder under .local),
# PG_PORT, REDIS_PORT and HTTP_ADDR set: sets BIN and URL, exports the replica's settings, and sets
# the traps (bench_traps) that stop the replica, Redis and PostgreSQL however the script ends.

BIN=$TOCSIN_ROOT/build-release/tocsin
URL=http://$HTTP_ADDR
export TOCSIN_DATABASE_URL=postgresql://postgres@127.0.0.1:$PG_PORT/tocsin
export TOCSIN_REDIS_URL=redis://127.0.0.1:$REDIS_PORT/0
export TOCSIN_HTTP_ADDR=$HTTP_ADDR
export TOCSIN_LOG_LEVEL=warn
SERVE_PID=

bench_stop()
{
    [ -n "$SERVE_PID" ] || return 0
    kill -TERM "$SERVE_PID" 2>/dev/null || true
    wait "$SERVE_PID" 2>/dev/null || true
    SERVE_PID=
}

bench_traps "$BENCH"
bench_on_exit bench_stop

# bench_serve [VAR=VALUE...]: one replica with these settings on top of the environment.
bench_serve()
{
    env "$@" "$BIN" serve >>"$BENCH/serve.log" 2>&1 &
    SERVE_PID=$!
    wait_for "tocsin on $URL" curl -fs -o /dev/null "$URL/readyz"
}

# bench_wrk SCRIPT CONNECTIONS SECONDS: prints "req_s p50_ms p99_ms" from the RESULT line of the
# wrk script (bench/wrk_result.lua); any failed request fails the run, a fast error not being
# work done.
bench_wrk()
{
    local out line
    out=$(wrk -t "$(nproc)" -c "$2" -d "${3}s" -s "$1" "$URL")
    line=$(grep '^RESULT ' <<<"$out") || tocsin_die "wrk printed no result: $out"
    awk '{
        for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
        if (v["errors"] > 0) { printf "wrk: %d errors\n", v["errors"] > "/dev/stderr"; exit 1 }
        printf "%.0f %.2f %.2f\n", v["requests"] / (v["duration_us"] / 1e6),
            v["p50_us"] / 1000, v["p99_us"] / 1000
    }' <<<"$line"
}

# bench_fresh: the release build, a fresh PostgreSQL and Redis under BENCH, migrated.
bench_fresh()
{
    bench_release_build
    bench_fresh_servers "$BENCH" "$PG_PORT" "$REDIS_PORT"
    "$BIN" migrate
}
