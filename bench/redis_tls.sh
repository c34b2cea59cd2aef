#!/usr/bin/env bash
# bench/redis_tls.sh -- what TLS costs per Redis command, and what tocsin's own transport
# (src/core/transport.c under src/mirror/redis_conn.c) costs against hiredis's socket, in one run
# against one Redis that listens both plain and with TLS (a CA made here, TLS 1.3 as negotiated):
# tests/tools/redis_bench_tool.c measures, in ROUNDS interleaved rounds, the round trip of one SET
# and the cost per SET in pipelines of 256 on each wire. Prints the median of the rounds per wire
# and the differences to hiredis's socket (the baseline of this run).
# Usage: bash bench/redis_tls.sh   (N=20000 SETs per measure, ROUNDS=9; TOCSIN_BENCH_REDIS_PORT
# and TOCSIN_BENCH_REDIS_TLS_PORT move the two ports)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$TOCSIN_ROOT"

REDIS_PORT=${TOCSIN_BENCH_REDIS_PORT:-63799}
REDIS_TLS_PORT=${TOCSIN_BENCH_REDIS_TLS_PORT:-$((REDIS_PORT + 1))}
N=${N:-20000}
ROUNDS=${ROUNDS:-9}
BENCH=$TOCSIN_ROOT/.local/bench-redis-tls

bench_release_build
cmake --build build-release -j2 --target redis_bench_tool >/dev/null
bench_traps "$BENCH"
tocsin_redis_stop "$BENCH/redis"
rm -rf "$BENCH"
mkdir -p "$BENCH"
tocsin_tls_files "$BENCH/tls"
tocsin_redis_start "$BENCH/redis" "$REDIS_PORT" --tls-port "$REDIS_TLS_PORT" \
    --tls-cert-file "$BENCH/tls/server.pem" --tls-key-file "$BENCH/tls/server.key" \
    --tls-ca-cert-file "$BENCH/tls/ca.pem" --tls-auth-clients no
build-release/redis_bench_tool 127.0.0.1 "$REDIS_PORT" "$REDIS_TLS_PORT" "$BENCH/tls/ca.pem" \
    "$N" "$ROUNDS" | tee "$BENCH/rounds.txt"
python3 - "$BENCH/rounds.txt" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"wire=(\S+) round=\d+ rtt_us=(\S+) pipelined_us=(\S+)", line)
    if m:
        rows.setdefault(m[1], []).append((float(m[2]), float(m[3])))
base = rows["hiredis-socket"]
b_rtt = statistics.median(r for r, _ in base)
b_pipe = statistics.median(p for _, p in base)
print(f"{'wire':<16} {'rtt_us p50':>11} {'vs hiredis':>11} {'pipelined_us p50':>17} {'vs hiredis':>11}")
for wire, rs in rows.items():
    rtt = statistics.median(r for r, _ in rs)
    pipe = statistics.median(p for _, p in rs)
    print(f"{wire:<16} {rtt:>11.2f} {rtt - b_rtt:>+11.2f} {pipe:>17.3f} {pipe - b_pipe:>+11.3f}")
PY
