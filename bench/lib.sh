# bench/lib.sh -- the setup the bench/*.sh scripts share: the build, the traps that stop their
# PostgreSQL and Redis however a script ends, and a fresh, migrated pair of servers. Sourced right
# after `set -euo pipefail`; it sources scripts/lib.sh, so a script needs only this file. What
# differs between scripts (ports, folders, postgresql.conf lines, what runs after) stays in each.

. "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"

BENCH_SERVERS_DIR=
BENCH_AT_EXIT=()

# bench_on_exit FUNCTION...: run these functions (no arguments, in this order) at exit, before
# bench_traps stops Redis and PostgreSQL: a replica or a second Redis must go before the servers
# it talks to. A failing one does not keep the servers running.
bench_on_exit()
{
    BENCH_AT_EXIT+=("$@")
}

bench_exit()
{
    local rc=$? f
    trap - EXIT INT TERM
    for f in "${BENCH_AT_EXIT[@]}"; do
        "$f" || true
    done
    tocsin_redis_stop "$BENCH_SERVERS_DIR/redis" || true
    tocsin_pg_stop "$BENCH_SERVERS_DIR/pg" || true
    exit "$rc"
}

# bench_traps DIR: however the script ends (its exit status kept; 130 on SIGINT, 143 on SIGTERM),
# run the bench_on_exit functions, then stop the Redis and PostgreSQL under DIR (DIR/redis,
# DIR/pg). Stopping a server that is not running is harmless, so this is set before any starts.
bench_traps()
{
    BENCH_SERVERS_DIR=$1
    trap bench_exit EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

# bench_release_build: the optimised build in build-release/, warnings not errors and no
# sanitizers, so the figures are the code's and not the instrumentation's.
bench_release_build()
{
    tocsin_install_deps
    tocsin_build build-release -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" \
        -DTOCSIN_WERROR=OFF -DTOCSIN_SANITIZE=OFF -DTOCSIN_TSAN=OFF
}

# bench_relwithdebinfo_build: the same in build-rel/ with debug information, for benchmarks that
# print plans or profiles and may want symbols.
bench_relwithdebinfo_build()
{
    tocsin_install_deps
    tocsin_build build-rel -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTOCSIN_WERROR=OFF \
        -DTOCSIN_SANITIZE=OFF -DTOCSIN_TSAN=OFF
}

# bench_servers_stop DIR: stops the Redis and PostgreSQL a previous run left under DIR, so the
# ports are free and the data can go.
bench_servers_stop()
{
    tocsin_redis_stop "$1/redis"
    tocsin_pg_stop "$1/pg"
}

# bench_servers_wipe DIR: removes DIR (PostgreSQL's data too, wherever its link points) and makes
# it again, empty: each run measures from the same nothing.
bench_servers_wipe()
{
    tocsin_pg_wipe "$1/pg"
    rm -rf "$1"
    mkdir -p "$1"
}

# bench_servers_start DIR PG_PORT REDIS_PORT [postgresql.conf line...]: starts PostgreSQL in DIR/pg
# with these lines added to its configuration and Redis in DIR/redis, and exports
# TOCSIN_DATABASE_URL, the database of the one just started.
bench_servers_start()
{
    local dir=$1 pg_port=$2 redis_port=$3
    shift 3
    tocsin_pg_start "$dir/pg" "$pg_port" "$@"
    tocsin_redis_start "$dir/redis" "$redis_port"
    export TOCSIN_DATABASE_URL=postgresql://postgres@127.0.0.1:$pg_port/tocsin
}

# bench_fresh_servers DIR PG_PORT REDIS_PORT [postgresql.conf line...]: the three above in turn:
# the last run's servers stopped, DIR emptied, a new PostgreSQL and Redis started.
bench_fresh_servers()
{
    bench_servers_stop "$1"
    bench_servers_wipe "$1"
    bench_servers_start "$@"
}

# bench_node_rig DIR PG_PORT REDIS_PORT: the setup of a benchmark whose scenarios run in node over
# bench/stream_rig.mjs: the traps, the open-files limit raised, the release build and the tests'
# packages, fresh servers under DIR, a migrated database and a key of tenant `bench`, and the
# environment stream_rig.mjs reads (BENCH_TOKEN, BENCH_PSQL, TOCSIN_BIN, BENCH_DB_URL, BENCH_DIR,
# BENCH_REDIS_PORT).
bench_node_rig()
{
    local dir=$1 pg_port=$2 redis_port=$3
    local bin=$TOCSIN_ROOT/build-release/tocsin
    bench_traps "$dir"
    ulimit -n "$(ulimit -Hn)"
    bench_release_build
    tocsin_npm_install tests
    bench_fresh_servers "$dir" "$pg_port" "$redis_port" "max_connections = 200" "shared_buffers = 512MB"
    "$bin" migrate
    BENCH_TOKEN=$("$bin" keys create --tenant bench)
    BENCH_PSQL=$(tocsin_pg_bindir)/psql
    export BENCH_TOKEN BENCH_PSQL TOCSIN_BIN=$bin BENCH_DB_URL=$TOCSIN_DATABASE_URL BENCH_DIR=$dir
    export BENCH_REDIS_PORT=$redis_port
}
