#!/usr/bin/env bash
# scripts/containers.sh -- builds the Dockerfile and runs docker/compose.yaml's topology for real on
# a Debian 12 machine with no container registry: rootful podman behind docker-compose, a
# debian:bookworm-slim base made with debootstrap (scripts/podman.sh), the registry images replaced by
# docker/compose.debian.yaml, plus a test webhook receiver (tests/containers). Then, through the
# load balancer only: 500 live streams from several client addresses (containers of their own on
# the compose network), every one with its hello and all open at once, which the per-address
# bound allows only when tocsin counts each client behind the balancer by the address it names;
# a webhook registered, a meeting whose reminder fires a few seconds later, one of the three
# replicas stopped, and the reminder must reach the receiver exactly once; then down -v. The engine's settings go into a private CONTAINERS_CONF (nothing under /etc is
# changed); the podman service is stopped by its PID. Needs root. TOCSIN_COMPOSE_PROJECT
# (default tocsin-ci) and TOCSIN_CONTAINERS_PORT (the published port, default 18080) keep
# parallel runs apart.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/podman.sh"
cd "$TOCSIN_ROOT"

WORK=$TOCSIN_ROOT/.local/containers
SOCK=$WORK/podman.sock
[ "$(id -u)" -eq 0 ] || tocsin_die "scripts/containers.sh needs root (rootful podman)"
tocsin_podman_setup "$WORK"

# ---- the compose topology --------------------------------------------------------------------
PROJECT=${TOCSIN_COMPOSE_PROJECT:-tocsin-ci}
REPLICAS=3            # deploy.replicas in docker/compose.yaml
UP_WAIT_S=180         # builds are done before: this is start-up only
FIRE_IN_S=12          # the reminder fires this long after it is created
DELIVERY_WAIT_S=60    # from the fire time until the receiver must have it
DUPLICATE_WAIT_S=5    # after the first receipt, time for a duplicate to show up
HEALTH_EVERY_S=2      # see run_healthchecks
CALL_WAIT_S=120       # any one docker-compose or podman call (a wedged engine fails, not hangs)
BUILD_WAIT_S=1200     # the image builds: apt-get in three images on a cold cache
CURL_WAIT_S=10        # one HTTP call through the load balancer
KEYS_WAIT_S=90        # `tocsin keys create` in a replica: retried while its DNS and database settle
STREAM_CLIENTS=5      # client containers, each an address of its own behind the balancer
STREAMS_EACH=100      # streams each opens: 500 in all, past 3 replicas x 128 per address
STREAMS_WAIT_S=60     # until every stream of a client has its hello
STREAMS_HOLD_S=10     # they stay open that much longer, while the replicas' counts are read
STREAMS=$((STREAM_CLIENTS * STREAMS_EACH))
export TOCSIN_PUBLISH_ADDR=127.0.0.1 TOCSIN_PUBLISH_PORT=${TOCSIN_CONTAINERS_PORT:-18080}
TOCSIN_COMMIT=$(git -C "$TOCSIN_ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
export TOCSIN_COMMIT
DC="docker-compose -p $PROJECT -f docker/compose.yaml -f docker/compose.debian.yaml"
DC="$DC -f tests/containers/compose.ci.yaml"
COMPOSE="timeout -k 10 $CALL_WAIT_S $DC"
PODMAN="timeout -k 10 $CALL_WAIT_S podman"
LB=http://127.0.0.1:$TOCSIN_PUBLISH_PORT

SVC_PID=
HEALTH_PID=
cleanup()
{
    local rc=$?
    trap - EXIT INT TERM
    if [ "$rc" -ne 0 ] && [ -n "$SVC_PID" ]; then
        $COMPOSE ps || true
        $COMPOSE logs --tail=40 || true
    fi
    if [ -n "$SVC_PID" ]; then
        stream_clients_remove
        $COMPOSE down -v --timeout 10 || true
        tocsin_aardvark_scrub
    fi
    for pid in $HEALTH_PID $SVC_PID; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Every call below is bounded (CALL_WAIT_S, CURL_WAIT_S): an engine that wedges, or a balancer
# that accepts and never answers, must fail this script with a message, not hold CI until its end.

# podman runs healthchecks from systemd timers; where PID 1 is not systemd (this machine, most CI
# containers) nobody runs them and `condition: service_healthy` would wait forever. This loop runs
# the compose file's own healthcheck commands instead, as Docker's daemon would.
run_healthchecks()
{
    local id
    while :; do
        for id in $($PODMAN ps -q --filter "label=com.docker.compose.project=$PROJECT"); do
            $PODMAN healthcheck run "$id" >/dev/null 2>&1 || true
        done
        sleep "$HEALTH_EVERY_S"
    done
}

# Readers in the pipes below read their whole input (no grep -q, no head): with pipefail, a
# writer cut short by SIGPIPE would fail the check at random.

# lb METHOD PATH [curl args...]: one API call through the load balancer; prints the body.
lb()
{
    local method=$1 path=$2
    shift 2
    curl -sS -f -m "$CURL_WAIT_S" -X "$method" "$LB$path" -H "Authorization: Bearer $token" "$@"
}

# The webhook-id lines the receiver has written so far.
received()
{
    $COMPOSE exec -T receiver cat /tmp/received 2>/dev/null | tr -d '\r' || true
}

# until SECONDS WHAT CMD...: retries CMD once a second for up to SECONDS of wall time (lib.sh's
# wait_for counts 0.1 s tries, which a docker-compose call of a second or two stretches tenfold).
until_ok()
{
    local limit=$1 end=$((SECONDS + $1)) what=$2
    shift 2
    until "$@" >/dev/null 2>&1; do
        [ "$SECONDS" -lt "$end" ] || tocsin_die "$what: not within ${limit}s"
        sleep 1
    done
}

delivered()
{
    received | grep "^$1\$" >/dev/null
}

replicas_healthy()
{
    [ "$(healthy_replicas)" -eq "$REPLICAS" ]
}

healthy_replicas()
{
    local id n=0
    for id in $($COMPOSE ps -q tocsin); do
        [ "$($PODMAN inspect -f '{{.State.Health.Status}}' "$id" 2>/dev/null)" != healthy ] ||
            n=$((n + 1))
    done
    echo "$n"
}

# keys_create: a key for tenant "containers" made in a replica; prints it. The CLI waits for the
# database only a few seconds (a newcomer's typo must not hang), and a container's first DNS
# lookup can take longer than that: tried again until KEYS_WAIT_S.
keys_create()
{
    local end=$((SECONDS + KEYS_WAIT_S)) out
    while :; do
        if out=$($COMPOSE exec -T tocsin tocsin keys create --tenant containers 2>&1); then
            out=$(printf '%s' "$out" | tr -d '\r')
            [ -n "$out" ] && printf '%s\n' "$out" && return 0
        fi
        [ "$SECONDS" -lt "$end" ] || { printf '%s\n' "$out" >&2; return 1; }
        sleep 2
    done
}

# The stream clients' containers (not compose's: down would leave them, and the network with them).
stream_clients_remove()
{
    local ids
    ids=$($PODMAN ps -aq --filter "label=tocsin.streams=$PROJECT" 2>/dev/null) || return 0
    [ -z "$ids" ] || $PODMAN rm -f $ids >/dev/null 2>&1 || true
}

# The live streams of every replica together, each replica's own /metrics read inside it.
streams_open()
{
    local id v n=0
    for id in $($COMPOSE ps -q tocsin); do
        v=$($PODMAN exec "$id" curl -sf -m "$CURL_WAIT_S" http://127.0.0.1:8080/metrics |
            awk '$1 == "tocsin_streams_open" { print $2 }') || v=0
        n=$((n + ${v:-0}))
    done
    echo "$n"
}

streams_all_open()
{
    [ "$(streams_open)" -eq "$STREAMS" ]
}

# STREAM_CLIENTS containers on the compose network, each with its own browser token, open
# STREAMS_EACH streams through the balancer (tests/containers/streams.pl); all must be open at once
# on the replicas and every one must have its hello.
streams_check()
{
    local net image i bt got=0 pids=()
    net=$($PODMAN network ls -q --filter "label=com.docker.compose.project=$PROJECT")
    [ -n "$net" ] || tocsin_die "no network of project $PROJECT"
    # The image this project's receiver runs, by id: its tag is shared with parallel runs.
    image=$($PODMAN inspect -f '{{.Image}}' "$($COMPOSE ps -q receiver)") ||
        tocsin_die "no receiver container to take the stream clients' image from"
    for i in $(seq "$STREAM_CLIENTS"); do
        bt=$(lb POST /v1/browser-tokens -H 'Content-Type: application/json' \
            -d "{\"sub\":\"browser-$i\",\"scope\":\"notifications\"}" |
            node -e 'console.log(JSON.parse(require("fs").readFileSync(0, "utf8")).token)') ||
            tocsin_die "POST /v1/browser-tokens through the load balancer failed"
        $PODMAN run --rm --network "$net" --label "tocsin.streams=$PROJECT" \
            "$image" perl /usr/local/bin/streams.pl lb 8080 "$bt" \
            "$STREAMS_EACH" "$STREAMS_WAIT_S" "$STREAMS_HOLD_S" >"$WORK/streams-$i.log" 2>&1 &
        pids+=($!)
    done
    until_ok "$STREAMS_WAIT_S" "$STREAMS streams open on the replicas at once (last count: \
$(streams_open))" streams_all_open
    tocsin_log "$(streams_open) streams open at once on the replicas"
    for i in $(seq "$STREAM_CLIENTS"); do
        wait "${pids[$((i - 1))]}" || tocsin_die "stream client $i: $(cat "$WORK/streams-$i.log")"
        got=$((got + $(sed -n 's/^hello \([0-9]*\) of .*/\1/p' "$WORK/streams-$i.log")))
    done
    [ "$got" -eq "$STREAMS" ] || tocsin_die "$got of $STREAMS streams had their hello"
    tocsin_log "streams: $got of $STREAMS had their hello through the load balancer, from \
$STREAM_CLIENTS client addresses"
}

tocsin_base_image "$WORK"
tocsin_log "podman system service on $SOCK"
rm -f "$SOCK"
podman system service --time=0 "unix://$SOCK" >"$WORK/podman-service.log" 2>&1 &
SVC_PID=$!
export DOCKER_HOST=unix://$SOCK
wait_for "the podman service" curl -sf -m 5 --unix-socket "$SOCK" http://d/_ping

$COMPOSE config -q
# A run killed before its teardown leaves its containers, network and volume behind; a new run
# would "recreate" into that state (and its stale DNS). Start from nothing.
$COMPOSE down -v --timeout 10 >/dev/null 2>&1 || true
tocsin_aardvark_scrub
start=$SECONDS
tocsin_log "building the images (tocsin commit $TOCSIN_COMMIT)"
timeout -k 10 "$BUILD_WAIT_S" $DC build
tocsin_log "images built in $((SECONDS - start)) s; starting the topology as project $PROJECT"
run_healthchecks &
HEALTH_PID=$!
start=$SECONDS
$COMPOSE up -d
until_ok "$UP_WAIT_S" "the load balancer on $LB" curl -sf -m "$CURL_WAIT_S" -o /dev/null "$LB/readyz"
until_ok "$UP_WAIT_S" "$REPLICAS healthy replicas" replicas_healthy
tocsin_log "up in $((SECONDS - start)) s"

version=$($COMPOSE exec -T tocsin tocsin --version | tr -d '\r')
case $version in
"tocsin "*" (commit $TOCSIN_COMMIT)") ;;
*) tocsin_die "tocsin --version in the image: '$version', want commit $TOCSIN_COMMIT" ;;
esac
curl -sf -m "$CURL_WAIT_S" "$LB/metrics" | grep "^tocsin_build_info{version=\"[0-9.]*\",commit=\"$TOCSIN_COMMIT\"} 1\$" >/dev/null ||
    tocsin_die "/metrics through the load balancer lacks tocsin_build_info for $TOCSIN_COMMIT"

token=$(keys_create) || tocsin_die "tocsin keys create in a replica failed for ${KEYS_WAIT_S}s"
tocsin_log "through the load balancer: $STREAMS streams from $STREAM_CLIENTS client addresses"
streams_check
tocsin_log "through the load balancer: a webhook and a meeting whose reminder fires in ${FIRE_IN_S} s"
lb POST /v1/webhooks -H 'Content-Type: application/json' \
    -d '{"url":"http://receiver:9000/hook","description":"containers.sh"}' >/dev/null ||
    tocsin_die "POST /v1/webhooks through the load balancer failed"
starts=$(date -u -d "+$FIRE_IN_S seconds" +%Y-%m-%dT%H:%M:%SZ)
meeting=$(lb POST /v1/meetings -H 'Content-Type: application/json' \
    -d "{\"title\":\"containers\",\"starts_at\":\"$starts\",\"reminders\":[{\"minutes_before\":0}]}") ||
    tocsin_die "POST /v1/meetings through the load balancer failed"
# webhook-id is rem_<reminder id>_<fire_at in ms> (docs/channels.md, Webhooks).
read -r id want < <(printf '%s' "$meeting" | node -e '
    const m = JSON.parse(require("fs").readFileSync(0, "utf8"));
    const r = m.reminders[0];
    console.log(m.id, `rem_${r.id}_${Date.parse(r.fire_at)}`);') ||
    tocsin_die "unexpected meeting: $meeting"

victim=$($COMPOSE ps -q tocsin | sed -n 1p)
tocsin_log "stopping one replica ($victim) before the reminder is due"
$PODMAN stop -t 30 "$victim" >/dev/null
for _ in 1 2 3 4 5 6; do
    lb GET "/v1/meetings/$id" -o /dev/null ||
        tocsin_die "GET through the load balancer failed with a replica stopped"
done

tocsin_log "waiting for $want at the receiver"
until_ok $((FIRE_IN_S + DELIVERY_WAIT_S)) "delivery of $want" delivered "$want"
sleep "$DUPLICATE_WAIT_S"
n=$(received | grep -c "^$want\$" || true)
[ "$n" -eq 1 ] || tocsin_die "$want received $n times, want exactly once: $(received)"
lb GET "/v1/meetings/$id" | grep '"status":"fired"' >/dev/null ||
    tocsin_die "the reminder is not recorded fired: $(lb GET "/v1/meetings/$id")"
lb GET "/v1/meetings/$id/deliveries" | grep '"delivered"' >/dev/null ||
    tocsin_die "no delivered attempt: $(lb GET "/v1/meetings/$id/deliveries")"
tocsin_log "containers: ok ($STREAMS streams with their hello; $want delivered once with one of \
$REPLICAS replicas stopped)"
