#!/bin/sh
# entrypoint.sh -- as the official redis image's entrypoint: "redis-server [options]" runs the
# server with protected mode off (the container's network is what protects it); anything else
# runs as given.
set -eu
if [ "${1:-redis-server}" = redis-server ]; then
    [ "$#" -eq 0 ] || shift
    exec redis-server "$@" --protected-mode no
fi
exec "$@"
