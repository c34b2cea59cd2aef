#!/usr/bin/env bash
# scripts/dev.sh -- from a fresh Debian 12 machine to a running tocsin in one command: installs
# what the service needs that is missing (only that: scripts/test.sh installs the test tools),
# builds build/tocsin (only the binary; its output goes to .local/dev/build.log), starts
# PostgreSQL and Redis on loopback with their data in .local/dev, migrates, creates an API key
# once, prints a short banner (the key, a demo page URL with a browser token, the exports a second
# shell needs for `tocsin keys`) and runs `tocsin serve` in the foreground, with webhooks to
# loopback allowed, the demo page on and CORS open to loopback origins. Ctrl-C (or SIGTERM) stops
# tocsin, then PostgreSQL and Redis.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$TOCSIN_ROOT"

PG_PORT=${TOCSIN_DEV_PG_PORT:-54329}
REDIS_PORT=${TOCSIN_DEV_REDIS_PORT:-63799}
DEV=$TOCSIN_ROOT/.local/dev
KEY_FILE=$DEV/api_key
BIN=$TOCSIN_ROOT/build/tocsin

export TOCSIN_HTTP_ADDR=${TOCSIN_HTTP_ADDR:-127.0.0.1:8080}
export TOCSIN_DATABASE_URL=postgresql://postgres@127.0.0.1:$PG_PORT/tocsin
export TOCSIN_REDIS_URL=redis://127.0.0.1:$REDIS_PORT/0
# A developer's webhook receiver runs on this machine: loopback targets are allowed here (and only
# here: the guard refuses them by default).
export TOCSIN_WEBHOOK_ALLOW_NETS=${TOCSIN_WEBHOOK_ALLOW_NETS:-127.0.0.0/8,::1}
URL=http://$TOCSIN_HTTP_ADDR
# A developer's page is served from this machine too: the demo page on, and CORS open to tocsin's
# own origin and the usual ports of front-end dev servers on loopback (each a setting to override).
export TOCSIN_DEMO=${TOCSIN_DEMO:-1}
DEV_PORTS="3000 4200 5173 8000 8081"
LOOPBACK_ORIGINS=$URL
for port in $DEV_PORTS; do
    LOOPBACK_ORIGINS+=",http://localhost:$port,http://127.0.0.1:$port"
done
export TOCSIN_CORS_ORIGINS=${TOCSIN_CORS_ORIGINS:-$LOOPBACK_ORIGINS}

SERVE_PID=
cleanup()
{
    local rc=$?
    trap - EXIT INT TERM
    if [ -n "$SERVE_PID" ] && kill -0 "$SERVE_PID" 2>/dev/null; then
        kill -TERM "$SERVE_PID" 2>/dev/null || true
        wait "$SERVE_PID" 2>/dev/null || true
    fi
    tocsin_redis_stop "$DEV/redis" || true
    tocsin_pg_stop "$DEV/pg" || true
    exit "$rc"
}
# tocsin runs in the background of this script so that a signal to the script reaches it too.
forward()
{
    if [ -n "$SERVE_PID" ]; then
        kill -TERM "$SERVE_PID" 2>/dev/null || true
    else
        exit 130
    fi
}
trap cleanup EXIT
trap forward INT TERM

# A key made earlier is kept as long as the database still knows it as live.
key_is_live()
{
    local key
    [ -s "$KEY_FILE" ] || return 1
    key=$(cat "$KEY_FILE")
    # "tsk_<8 hex prefix>_<secret>"; `keys list` prints a header, then prefix, tenant, created,
    # state by tabs.
    "$BIN" keys list 2>/dev/null |
        awk -F '\t' -v p="${key:4:8}" '$1 == p && $NF == "live" { f = 1 } END { exit !f }'
}

# A browser token for participant u1 (15 minutes: the most a token in a URL may live), for the
# demo page's URL; empty when the demo page is off or minting failed.
demo_token()
{
    [ "$TOCSIN_DEMO" = 1 ] || return 0
    curl -fs -X POST "$URL/v1/browser-tokens" -H "Authorization: Bearer $(cat "$KEY_FILE")" \
        -H 'Content-Type: application/json' \
        -d '{"sub":"u1","scope":"notifications meetings:read push","ttl_s":900}' |
        jq -r '.token // empty' 2>/dev/null || true
}

print_banner()
{
    local bt
    bt=$(demo_token)
    printf '\ntocsin is listening on %s (Ctrl-C stops it, PostgreSQL and Redis).\n' "$URL"
    printf 'Its API key (tenant "dev") is in .local/dev/api_key; the README'"'"'s curl session runs as pasted.\n'
    printf 'Webhooks to loopback are allowed; CORS is open to %s and to localhost and\n' "$URL"
    printf '127.0.0.1 on ports %s (TOCSIN_CORS_ORIGINS overrides).\n' "$DEV_PORTS"
    if [ -n "$bt" ]; then
        printf '\nThe demo page as participant u1 (this link works for 15 minutes):\n  %s\n' \
            "$URL/demo#token=$bt"
    fi
    printf '\nIn another shell at the repository root:\n'
    printf '  export TOKEN=$(cat .local/dev/api_key) URL=%s\n' "$URL"
    print_exports
    printf '  build/tocsin keys list\n\n'
}

# The export lines a second shell needs to run build/tocsin against this PostgreSQL and Redis,
# each value in single quotes for the shell.
print_exports()
{
    local v val
    for v in TOCSIN_DATABASE_URL TOCSIN_REDIS_URL TOCSIN_WEBHOOK_ALLOW_NETS; do
        val=${!v}
        printf "  export %s='%s'\n" "$v" "${val//\'/\'\\\'\'}"
    done
}

tocsin_install_service_deps
mkdir -p "$DEV"
tocsin_log "building build/tocsin (output in .local/dev/build.log)"
if ! { cmake -S . -B build --log-level=WARNING -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTOCSIN_WERROR=OFF && cmake --build build -j "$(nproc)" --target tocsin; } \
    >"$DEV/build.log" 2>&1; then
    tail -n 40 "$DEV/build.log" >&2
    tocsin_die "the build failed (whole output: .local/dev/build.log)"
fi
tocsin_log "starting PostgreSQL on 127.0.0.1:$PG_PORT and Redis on 127.0.0.1:$REDIS_PORT"
tocsin_pg_start "$DEV/pg" "$PG_PORT"
tocsin_redis_start "$DEV/redis" "$REDIS_PORT"
"$BIN" migrate
if ! key_is_live; then
    (umask 077 && "$BIN" keys create --tenant dev >"$KEY_FILE.new")
    mv "$KEY_FILE.new" "$KEY_FILE"
    tocsin_log "created an API key for tenant dev in .local/dev/api_key"
fi
chmod 600 "$KEY_FILE"

"$BIN" serve &
SERVE_PID=$!
for ((i = 0; i < TOCSIN_WAIT_S_MAX * 10; i++)); do
    curl -fs -o /dev/null "$URL/healthz" && break
    kill -0 "$SERVE_PID" 2>/dev/null || break
    sleep 0.1
done
if curl -fs -o /dev/null "$URL/healthz"; then
    print_banner
fi
# wait returns early when a trapped signal arrives: keep waiting until tocsin has exited.
while kill -0 "$SERVE_PID" 2>/dev/null; do
    wait "$SERVE_PID" || true
done
wait "$SERVE_PID" && rc=0 || rc=$?
SERVE_PID=
exit "$rc"
