#!/usr/bin/env bash
# scripts/containers.sh -- builds the Dockerfile and docker/compose.yaml and tests them for real on
# a Debian 12 machine with no container registry: rootful podman behind docker-compose, a
# debian:bookworm-slim base made with debootstrap (scripts/podman.sh), then three replicas +
# PostgreSQL + Redis up,
# an API key made through the image, a meeting created on one replica and read on another, its
# reminder key in Redis, and down -v. The engine's settings go into a private CONTAINERS_CONF
# (nothing under /etc is changed); the podman service is stopped by its PID. Needs root.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/podman.sh"
cd "$TOCSIN_ROOT"

WORK=$TOCSIN_ROOT/.local/containers
SOCK=$WORK/podman.sock
COMPOSE="docker-compose -f docker/compose.yaml -p tocsin-ci"
REPLICAS="18081 18082 18083"
UP_WAIT_S=120

[ "$(id -u)" -eq 0 ] || tocsin_die "scripts/containers.sh needs root (rootful podman)"
tocsin_podman_setup "$WORK"

SVC_PID=
cleanup()
{
    local rc=$?
    trap - EXIT INT TERM
    if [ "$rc" -ne 0 ] && [ -n "$SVC_PID" ]; then
        $COMPOSE ps || true
        $COMPOSE logs --tail=40 || true
    fi
    [ -z "$SVC_PID" ] || $COMPOSE down -v --timeout 10 || true
    if [ -n "$SVC_PID" ]; then
        kill "$SVC_PID" 2>/dev/null || true
        wait "$SVC_PID" 2>/dev/null || true
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

tocsin_base_image "$WORK"
tocsin_log "podman system service on $SOCK"
rm -f "$SOCK"
podman system service --time=0 "unix://$SOCK" >"$WORK/podman-service.log" 2>&1 &
SVC_PID=$!
export DOCKER_HOST=unix://$SOCK
wait_for "the podman service" curl -sf --unix-socket "$SOCK" http://d/_ping

$COMPOSE config -q
tocsin_log "building the images"
$COMPOSE build
tocsin_log "starting PostgreSQL, Redis and three replicas"
$COMPOSE up -d
for port in $REPLICAS; do
    TOCSIN_WAIT_S_MAX=$UP_WAIT_S wait_for "replica on 127.0.0.1:$port" \
        curl -sf -o /dev/null "http://127.0.0.1:$port/readyz"
done

tocsin_log "smoke test: create on one replica, read on another, key in Redis"
token=$($COMPOSE exec -T tocsin-1 tocsin keys create --tenant containers | tr -d '\r')
[ -n "$token" ] || tocsin_die "keys create printed nothing"
starts=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
loc=$(curl -sf -D - -o /dev/null -X POST http://127.0.0.1:18081/v1/meetings \
    -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    -d "{\"title\":\"containers\",\"starts_at\":\"$starts\"}" | tr -d '\r' |
    sed -n 's/^[Ll]ocation: //p')
[ -n "$loc" ] || tocsin_die "POST /v1/meetings gave no Location"
curl -sf "http://127.0.0.1:18082$loc" -H "Authorization: Bearer $token" | grep -q '"pending"' ||
    tocsin_die "GET $loc on the second replica did not show the pending reminder"
keys=$($COMPOSE exec -T redis redis-cli -p 16379 --scan --pattern 'tocsin:rem:*' | wc -l)
[ "$keys" -ge 1 ] || tocsin_die "no reminder key in Redis"
tocsin_log "containers: ok ($keys reminder key(s) in Redis)"
