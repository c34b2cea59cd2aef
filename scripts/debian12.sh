#!/usr/bin/env bash
# scripts/debian12.sh -- proves the README's promise: its two commands work on a fresh Debian 12.
# In a bare debian:bookworm-slim container (podman, host network, the image from
# scripts/podman.sh) on a clean copy of the work tree: scripts/dev.sh in the background until the
# API answers, a meeting created with the key it made, dev.sh stopped by its PID (exit 0 wanted),
# then scripts/test.sh, whose exit status is this script's. Everything is installed by the two
# commands themselves from Debian's packages (Node.js 18 included). Needs root.
#
# Host networking shares the machine's ports: TOCSIN_TEST_PG_PORT / TOCSIN_TEST_REDIS_PORT
# (default 25412 / 63812, outside the ephemeral range, as scripts/test.sh explains) for the
# suite; dev.sh uses the next port of each and HTTP on TOCSIN_D12_HTTP_PORT (default 18412).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/podman.sh"
cd "$TOCSIN_ROOT"

WORK=$TOCSIN_ROOT/.local/debian12
SRC=$WORK/src
PG_PORT=${TOCSIN_TEST_PG_PORT:-25412}
REDIS_PORT=${TOCSIN_TEST_REDIS_PORT:-63812}
HTTP_PORT=${TOCSIN_D12_HTTP_PORT:-18412}
NAME=tocsin-debian12-$$
DEV_UP_WAIT_S=900 # dev.sh installs packages and builds before it answers

[ "$(id -u)" -eq 0 ] || tocsin_die "scripts/debian12.sh needs root (rootful podman)"
tocsin_podman_setup "$WORK"
tocsin_base_image "$WORK"

cleanup()
{
    local rc=$?
    trap - EXIT INT TERM
    if podman container exists "$NAME" 2>/dev/null; then
        podman rm -f -t 10 "$NAME" >/dev/null 2>&1 || true
    fi
    rm -rf "$SRC"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The tracked and the new (not ignored) files: what a fresh clone plus the work in progress has,
# without this machine's build trees, node_modules or .local.
rm -rf "$SRC"
mkdir -p "$SRC"
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
    [ -e "$f" ] && printf '%s\0' "$f"
done | tar --null -T - -c | tar -C "$SRC" -x

# What runs inside: the README's commands, verbatim, as root on a bare Debian 12.
cat >"$SRC/.debian12-run.sh" <<'INNER'
set -euo pipefail
cd /src
ADDR=127.0.0.1:$HTTP_PORT
echo "==> debian12: $(. /etc/os-release && echo "$PRETTY_NAME"), node: $(command -v node || echo none)"
# Only dev.sh gets these: the suite's own tests check the defaults of TOCSIN_HTTP_ADDR.
TOCSIN_DEV_PG_PORT=$((PG_PORT + 1)) TOCSIN_DEV_REDIS_PORT=$((REDIS_PORT + 1)) \
    TOCSIN_HTTP_ADDR=$ADDR bash scripts/dev.sh >/tmp/dev.log 2>&1 &
DEV_PID=$!
up=
for ((i = 0; i < DEV_UP_WAIT_S * 2; i++)); do
    kill -0 "$DEV_PID" 2>/dev/null || break
    if command -v curl >/dev/null && curl -fs -o /dev/null "http://$ADDR/healthz"; then
        up=1
        break
    fi
    sleep 0.5
done
if [ -z "$up" ]; then
    tail -n 40 /tmp/dev.log >&2
    echo "debian12: scripts/dev.sh did not answer on $ADDR" >&2
    kill -TERM "$DEV_PID" 2>/dev/null || true
    wait "$DEV_PID" || true
    exit 1
fi
key=$(cat .local/dev/api_key)
status=$(curl -s -o /tmp/created.json -w '%{http_code}' -X POST "http://$ADDR/v1/meetings" \
    -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
    -d "{\"title\":\"debian12\",\"starts_at\":\"$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)\"}")
kill -TERM "$DEV_PID"
rc=0
wait "$DEV_PID" || rc=$?
echo "==> debian12: dev.sh answered, POST /v1/meetings gave $status, dev.sh exited $rc after SIGTERM"
if [ "$status" != 201 ] || [ "$rc" -ne 0 ]; then
    tail -n 40 /tmp/dev.log >&2
    cat /tmp/created.json >&2 || true
    exit 1
fi
echo "==> debian12: node $(node --version), npm $(npm --version)"
exec bash scripts/test.sh
INNER

# The machine's CA bundle, read-only beside the container's own: npm reaches its registry over
# HTTPS, and where this machine trusts an extra CA (a proxy that inspects TLS), so must Node in
# the container. Debian's own bundle there stays Debian's (apt manages it).
CA_ARGS=()
if [ -s /etc/ssl/certs/ca-certificates.crt ]; then
    CA_ARGS=(-v /etc/ssl/certs/ca-certificates.crt:/run/host-ca.crt:ro
        -e NODE_EXTRA_CA_CERTS=/run/host-ca.crt -e npm_config_cafile=/run/host-ca.crt)
fi

tocsin_log "debian12: the README's two commands in a bare $TOCSIN_BASE_IMAGE (podman, host network)"
# seccomp=unconfined: the sanitizer runtimes may need personality(ADDR_NO_RANDOMIZE)
# (tocsin_sanitizer_wrap), which the default profile refuses.
podman run --rm --name "$NAME" --network host --security-opt seccomp=unconfined "${CA_ARGS[@]}" \
    -v "$SRC:/src" -e CI="${CI:-}" -e PG_PORT="$PG_PORT" -e REDIS_PORT="$REDIS_PORT" \
    -e HTTP_PORT="$HTTP_PORT" -e DEV_UP_WAIT_S="$DEV_UP_WAIT_S" \
    -e TOCSIN_TEST_PG_PORT="$PG_PORT" -e TOCSIN_TEST_REDIS_PORT="$REDIS_PORT" \
    -e TOCSIN_TEST_NODE -e TOCSIN_TEST_CTEST -e TOCSIN_TEST_TSAN \
    "$TOCSIN_BASE_IMAGE" bash /src/.debian12-run.sh </dev/null
