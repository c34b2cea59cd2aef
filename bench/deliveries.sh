#!/usr/bin/env bash
# bench/deliveries.sh -- the tenant-wide delivery search at scale: seeds BENCH_ROWS (10,000,000)
# outbox rows of BENCH_TENANTS (100) tenants with SQL (bench/deliveries_seed.sql), times GET
# /v1/deliveries with status, q and a cursor against one server (bench/deliveries.mjs: p50, p99,
# slowest), then prints each query's plan as the server's own statement ran it (auto_explain,
# with ANALYZE and BUFFERS), and the same for GET /v1/stats?window=1h and 24h (BENCH_QUERIES:
# search, stats or all); then POST /v1/webhooks/{id}/recover of BENCH_RECOVER_ROWS (10,000)
# failed deliveries against two replicas (bench/recover.mjs; BENCH_RECOVER=0 leaves it out,
# BENCH_SEARCH=0 the search). A RelWithDebInfo build, its own PostgreSQL and Redis under
# .local/bench-deliveries; BENCH_KEEP=1 keeps a seeded database for the next run (same
# BENCH_ROWS and BENCH_TENANTS). Environment: TOCSIN_BENCH_PG_PORT, TOCSIN_BENCH_REDIS_PORT,
# BENCH_REQUESTS (500 per query), BENCH_KEY_TENANTS (10: the tenants the requests go to in turn),
# BENCH_BIN (another tocsin binary), BENCH_PG_STATEMENTS=1 (the recover's statements per delivery,
# pg_stat_statements), BENCH_RECOVER_ROUNDS, BENCH_RECOVER_VACUUM and BENCH_RECOVER_EXPLAIN_MS
# (recovers in turn on one database, a vacuum between them, slow lease plans: bench/recover.mjs).
# Not part of CI.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$TOCSIN_ROOT"

PG_PORT=${TOCSIN_BENCH_PG_PORT:-54481}
REDIS_PORT=${TOCSIN_BENCH_REDIS_PORT:-63881}
ROWS=${BENCH_ROWS:-10000000}
TENANTS=${BENCH_TENANTS:-100}
KEY_TENANTS=${BENCH_KEY_TENANTS:-10}
DIR=$TOCSIN_ROOT/.local/bench-deliveries

bench_traps "$DIR"

bench_relwithdebinfo_build
BIN=${BENCH_BIN:-$TOCSIN_ROOT/build-rel/tocsin}

bench_servers_stop "$DIR"
# Not bench_fresh_servers: BENCH_KEEP=1 keeps a database seeded with the same BENCH_ROWS and
# BENCH_TENANTS.
seeded="$ROWS rows, $TENANTS tenants"
if [ "${BENCH_KEEP:-0}" != 1 ] || [ "$(cat "$DIR/seeded" 2>/dev/null)" != "$seeded" ]; then
    bench_servers_wipe "$DIR"
fi
mkdir -p "$DIR"
# Reads are measured; the seed's writes need no durability.
PG_CONF=("shared_buffers = 2GB" "maintenance_work_mem = 1GB" "max_wal_size = 8GB" "fsync = off"
    "synchronous_commit = off" "full_page_writes = off")
# BENCH_PG_STATEMENTS=1: the recover also prints its statements per delivery (pg_stat_statements).
if [ "${BENCH_PG_STATEMENTS:-}" = 1 ]; then
    PG_CONF+=("shared_preload_libraries = 'pg_stat_statements'")
fi
bench_servers_start "$DIR" "$PG_PORT" "$REDIS_PORT" "${PG_CONF[@]}"
PSQL=(psql "$TOCSIN_DATABASE_URL" -X -q -v ON_ERROR_STOP=1)
"$BIN" migrate
if [ "${BENCH_PG_STATEMENTS:-}" = 1 ]; then
    "${PSQL[@]}" -c 'CREATE EXTENSION IF NOT EXISTS pg_stat_statements'
fi
if [ "$(cat "$DIR/seeded" 2>/dev/null)" != "$seeded" ]; then
    tocsin_log "seeding $seeded"
    start=$(date +%s)
    "${PSQL[@]}" -v rows="$ROWS" -v tenants="$TENANTS" -f bench/deliveries_seed.sql
    echo "$seeded" >"$DIR/seeded"
    tocsin_log "seeded in $(($(date +%s) - start)) s"
fi
"${PSQL[@]}" -c "SELECT pg_size_pretty(pg_total_relation_size('outbox')) AS outbox_with_indexes,
    (SELECT count(*) FROM outbox) AS rows,
    pg_size_pretty(pg_relation_size('outbox_tenant_status')) AS outbox_tenant_status,
    pg_size_pretty(pg_relation_size('meetings_title_trgm')) AS meetings_title_trgm"

keys=
for i in $(seq 1 "$KEY_TENANTS"); do
    keys="$keys $("$BIN" keys create --tenant "bench_t$i")"
done
export BENCH_KEYS=$keys TOCSIN_BIN=$BIN BENCH_DB_URL=$TOCSIN_DATABASE_URL BENCH_DIR=$DIR
export BENCH_REDIS_URL=redis://127.0.0.1:$REDIS_PORT/0
if [ "${BENCH_SEARCH:-1}" = 1 ]; then
    node bench/deliveries.mjs

    # The plans: auto_explain in the sessions of a fresh server, one request per query.
    "${PSQL[@]}" -c "ALTER DATABASE tocsin SET session_preload_libraries = 'auto_explain'" \
        -c "ALTER DATABASE tocsin SET auto_explain.log_min_duration = 0" \
        -c "ALTER DATABASE tocsin SET auto_explain.log_analyze = on" \
        -c "ALTER DATABASE tocsin SET auto_explain.log_buffers = on"
    pglog=$(readlink -f "$DIR/pg")/server.log
    from=$(wc -c <"$pglog")
    BENCH_PLANS_ONLY=1 node bench/deliveries.mjs
    "${PSQL[@]}" -c "ALTER DATABASE tocsin RESET ALL"
    tocsin_log "plans of the search and stats statements (PostgreSQL's log, auto_explain)"
    tail -c +"$((from + 1))" "$pglog" | python3 -c '
import re, sys
text = sys.stdin.read()
for block in re.split(r"\n(?=\S.*LOG:  duration: )", text):
    if "SELECT s.*, m.title" not in block and "WITH w AS (SELECT now() AS t1" not in block:
        continue
    head = re.search(r"duration: ([0-9.]+) ms", block)
    plan = block[block.index("Query Text:"):]
    plan = plan[plan.index("\n") + 1:] if "\n" in plan else ""
    n = globals().setdefault("n", [0]); n[0] += 1
    print("--- plan %d: %s ms" % (n[0], head.group(1) if head else "?"))
    print(plan.rstrip())
'
fi

if [ "${BENCH_RECOVER:-1}" = 1 ]; then
    tocsin_log "recover of ${BENCH_RECOVER_ROWS:-10000} failed deliveries (bench/recover.mjs)"
    node bench/recover.mjs
fi
