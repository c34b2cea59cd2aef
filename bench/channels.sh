#!/usr/bin/env bash
# bench/channels.sh -- reminders that reach people, measured end to end (bench/channels.mjs) on a
# release build with its own PostgreSQL and Redis under .local/bench-channels and BENCH_REPLICAS
# (3) replicas: BENCH_PUSH (10,000) participants of meetings of 500, each with one Web Push
# subscription on the push-service stand-in of the tests (tests/api/pushservice.mjs: it decrypts
# every message with http_ece and verifies its VAPID JWT with jose), reminded at one instant: the
# time until the stand-in holds them all; then BENCH_EMAIL (1,000) recipients through the local
# SMTP server of the tests (tests/api/smtp_server.py, Debian's python3-aiosmtpd): the time until
# it has accepted them all. Each next to the same number of webhook deliveries to a plain local
# receiver in the same run (the baseline). Environment: BENCH_SCENARIOS ("push email"),
# BENCH_REPLICAS, BENCH_PUSH, BENCH_EMAIL; TOCSIN_BENCH_PG_PORT, TOCSIN_BENCH_REDIS_PORT.
# Not part of CI.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$TOCSIN_ROOT"

PG_PORT=${TOCSIN_BENCH_PG_PORT:-54481}
REDIS_PORT=${TOCSIN_BENCH_REDIS_PORT:-63881}
DIR=$TOCSIN_ROOT/.local/bench-channels

bench_node_rig "$DIR" "$PG_PORT" "$REDIS_PORT"
node bench/channels.mjs
