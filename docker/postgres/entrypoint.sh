#!/bin/sh
# entrypoint.sh -- initialises the cluster on first start (database "tocsin", trust on the
# listen address only: compose.yaml runs everything on the host's loopback), then runs the server
# in the foreground so the container stops with it.
set -eu
BIN=/usr/lib/postgresql/15/bin
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    "$BIN/initdb" -D "$PGDATA" -U postgres -A trust -E UTF8 --no-locale >/dev/null
    printf 'local all all trust\nhost all all 127.0.0.1/32 trust\n' >"$PGDATA/pg_hba.conf"
    "$BIN/pg_ctl" -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
    "$BIN/createdb" -U postgres tocsin
    "$BIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null
fi
exec "$BIN/postgres" -D "$PGDATA" -c "listen_addresses=$PG_LISTEN" -c "port=$PGPORT" \
    -c unix_socket_directories=/tmp
