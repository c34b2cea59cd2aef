#!/usr/bin/env bash
# scripts/dev.sh -- from a fresh Debian 12 machine to a running tocsin in one command: installs
# what is missing, builds build/, starts PostgreSQL and Redis on loopback with their data in
# .local/dev, migrates, creates an API key once, prints how to call the API (and the exports a
# second shell needs for `tocsin keys`) and runs `tocsin serve` in the foreground, with webhooks
# to loopback allowed. Ctrl-C (or SIGTERM) stops tocsin, then PostgreSQL and Redis.
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

print_usage()
{
    local starts
    starts=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
    cat <<EOF

tocsin is listening on $URL (Ctrl-C stops it, PostgreSQL and Redis).
The API key of tenant "dev" is in .local/dev/api_key. In another shell:

  export TOKEN=\$(cat .local/dev/api_key)
  curl -s $URL/readyz
  curl -s -X POST $URL/v1/meetings -H "Authorization: Bearer \$TOKEN" \\
       -H 'Content-Type: application/json' \\
       -d '{"title":"Weekly sync","starts_at":"$starts","reminders":[{"minutes_before":5}]}'
  curl -s $URL/v1/meetings -H "Authorization: Bearer \$TOKEN"

PostgreSQL: psql $TOCSIN_DATABASE_URL
Redis:      redis-cli -h 127.0.0.1 -p $REDIS_PORT
Webhooks to 127.0.0.0/8 and ::1 are allowed (TOCSIN_WEBHOOK_ALLOW_NETS).
More examples: README.md, section "A curl session".

For tocsin's own commands in another shell (tocsin keys create --tenant NAME, keys list, ...):

$(print_exports)
  build/tocsin keys list

EOF
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

tocsin_install_deps
tocsin_build build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTOCSIN_WERROR=OFF
mkdir -p "$DEV"
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
    print_usage
fi
# wait returns early when a trapped signal arrives: keep waiting until tocsin has exited.
while kill -0 "$SERVE_PID" 2>/dev/null; do
    wait "$SERVE_PID" || true
done
wait "$SERVE_PID" && rc=0 || rc=$?
SERVE_PID=
exit "$rc"
