#!/bin/sh
# entrypoint.sh -- the part of the official postgres image's entrypoint that compose.yaml relies
# on: on first start, initdb with POSTGRES_USER and POSTGRES_PASSWORD (scram-sha-256 for every
# network client), create POSTGRES_DB; then run the server in the foreground, listening on all
# of the container's addresses, so the container stops with it.
set -eu
[ "${1:-}" = postgres ] || exec "$@"
: "${POSTGRES_USER:=postgres}" "${POSTGRES_DB:=$POSTGRES_USER}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    if [ -z "${POSTGRES_PASSWORD:-}" ]; then
        echo "entrypoint: POSTGRES_PASSWORD must be set (as with the official image)" >&2
        exit 1
    fi
    pw=$(mktemp)
    printf '%s\n' "$POSTGRES_PASSWORD" >"$pw"
    initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pw" -A scram-sha-256 -E UTF8 \
        --no-locale >/dev/null
    rm -f "$pw"
    printf 'local all all trust\nhost all all all scram-sha-256\n' >"$PGDATA/pg_hba.conf"
    if [ "$POSTGRES_DB" != postgres ]; then
        echo "CREATE DATABASE \"$POSTGRES_DB\";" |
            postgres --single -D "$PGDATA" -c listen_addresses='' postgres >/dev/null
    fi
fi
shift
exec postgres -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories=/var/run/postgresql "$@"
