#!/usr/bin/env bash
# scripts/demo-screenshot.sh [OUT.png] -- takes the screenshot of the demo page in docs/browsers.md
# (docs/demo.png by default): builds build/, starts a throwaway PostgreSQL and Redis under
# .local/screenshot, installs Debian's chromium when it is missing, and runs
# tests/demo-screenshot.mjs, which starts tocsin with TOCSIN_DEMO=1, opens /demo in headless
# Chromium (puppeteer-core) with a browser token, fires a reminder and takes the picture once it
# has arrived. Ports: TOCSIN_SHOT_PG_PORT (54349), TOCSIN_SHOT_REDIS_PORT (63819).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$TOCSIN_ROOT"

OUT=$(abspath "${1:-docs/demo.png}")
PG_PORT=${TOCSIN_SHOT_PG_PORT:-54349}
REDIS_PORT=${TOCSIN_SHOT_REDIS_PORT:-63819}
DIR=$TOCSIN_ROOT/.local/screenshot

cleanup()
{
    tocsin_redis_stop "$DIR/redis" || true
    tocsin_pg_stop "$DIR/pg" || true
}
trap cleanup EXIT

tocsin_install_deps
if [ ! -x /usr/bin/chromium ]; then
    tocsin_log "installing chromium"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium </dev/null >/dev/null
fi
tocsin_npm_install
tocsin_build build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTOCSIN_WERROR=OFF
tocsin_pg_start "$DIR/pg" "$PG_PORT" "fsync = off"
tocsin_redis_start "$DIR/redis" "$REDIS_PORT"
tocsin_pg_dropdb "$PG_PORT" screenshot
tocsin_pg_createdb "$PG_PORT" screenshot
redis-cli -h 127.0.0.1 -p "$REDIS_PORT" flushall >/dev/null
mkdir -p "$(dirname "$OUT")"
TOCSIN_BIN=$TOCSIN_ROOT/build/tocsin \
    TOCSIN_DATABASE_URL=postgresql://postgres@127.0.0.1:$PG_PORT/screenshot \
    TOCSIN_REDIS_URL=redis://127.0.0.1:$REDIS_PORT/0 \
    node tests/demo-screenshot.mjs "$OUT"
