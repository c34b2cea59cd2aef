# scripts/lib.sh -- shell functions shared by scripts/dev.sh, scripts/test.sh, .ci/run and bench/:
# install what is missing, build, and run a project-local PostgreSQL and Redis on 127.0.0.1 whose
# data lives under .local/. Servers are stopped by the PID they recorded, never by name.
# Source it from bash; it only defines functions and TOCSIN_ROOT, and sets no shell options.

TOCSIN_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Debian packages the build, the tests, the benchmark and the README's commands need (faketime:
# tests/api/scale.test.mjs runs a replica with its clock ahead; redis-sentinel: the Sentinels of
# tests/api/redis_sentinel.test.mjs; python3-dateutil and
# python3-icalendar: independent checks of recurrences and emails; python3-aiosmtpd: the email
# tests' SMTP server; jq: the curl sessions of README.md and docs/ read ids and fields with it).
# What building and running the service needs (scripts/dev.sh installs only these)...
TOCSIN_SERVICE_PACKAGES="build-essential cmake pkg-config libmicrohttpd-dev libjansson-dev
libhiredis-dev libpq-dev libssl-dev libcurl4-openssl-dev libical-dev postgresql postgresql-contrib
redis-server redis-tools curl ca-certificates jq"
# ...and what the test suite and the benchmarks need besides (scripts/test.sh installs both).
TOCSIN_TEST_PACKAGES="pgbouncer clang-format wrk chromium firefox-esr faketime python3-dateutil
python3-icalendar python3-aiosmtpd redis-sentinel"
TOCSIN_APT_PACKAGES="$TOCSIN_SERVICE_PACKAGES $TOCSIN_TEST_PACKAGES"
# What scripts/lint.sh needs besides: the static analysers, not needed to build or test.
TOCSIN_LINT_PACKAGES="clang-tidy cppcheck"

# Seconds to wait for a server to answer after start, or to exit after a stop request.
TOCSIN_WAIT_S_MAX=60

tocsin_log()
{
    printf '==> %s\n' "$*" >&2
}

tocsin_die()
{
    printf 'error: %s\n' "$*" >&2
    exit 1
}

# Runs "$@" as root: directly when we are root, else through sudo when there is one.
as_root()
{
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        tocsin_die "need root to run: $*"
    fi
}

pkg_missing()
{
    ! dpkg-query -W -f='${Status}\n' "$1" 2>/dev/null | grep -q ' ok installed$'
}

# tocsin_install_deps [more packages...]: installs the missing Debian packages of
# TOCSIN_APT_PACKAGES and the arguments. A machine that has everything does no apt work at all.
# Node.js may come from elsewhere (the machine's own Node 20): apt installs node/npm only when the
# commands are absent.
tocsin_install_deps()
{
    local missing=()
    # kubectl renders deploy/kubernetes for its test: Debian's kubernetes-client unless some
    # kubectl is there already (another one owns /usr/bin/kubectl; apt would refuse the overlap).
    command -v node >/dev/null 2>&1 || missing+=(nodejs)
    command -v npm >/dev/null 2>&1 || missing+=(npm)
    command -v kubectl >/dev/null 2>&1 || missing+=(kubernetes-client)
    tocsin_apt_install $TOCSIN_APT_PACKAGES "$@" "${missing[@]}"
}

# tocsin_install_service_deps: only what building and running the service needs (scripts/dev.sh).
tocsin_install_service_deps()
{
    tocsin_apt_install $TOCSIN_SERVICE_PACKAGES
}

# tocsin_apt_install PACKAGE...: installs those of the packages that are missing, in one apt-get.
tocsin_apt_install()
{
    local missing=() p installed
    # One dpkg-query for all of them: a second start of dev.sh must not pay one per package.
    installed=" $(dpkg-query -W -f='${db:Status-Status}:${Package} ' "$@" 2>/dev/null || true)"
    for p in "$@"; do
        case $installed in
        *" installed:$p "*) ;;
        *) missing+=("$p") ;;
        esac
    done
    if [ "${#missing[@]}" -eq 0 ]; then
        return 0
    fi
    command -v apt-get >/dev/null 2>&1 || tocsin_die "missing ${missing[*]} and no apt-get here"
    tocsin_log "installing ${missing[*]}"
    if [ -z "${TOCSIN_APT_UPDATED:-}" ]; then
        as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq </dev/null
        TOCSIN_APT_UPDATED=1
    fi
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" </dev/null >/dev/null
}

# tocsin_promtool: prints the path of Prometheus's promtool (the tests check /metrics with it),
# getting it when missing. Debian ships promtool only inside the `prometheus` package, whose
# install also starts a Prometheus server listening on all interfaces; so the package is fetched
# with apt-get download and only its promtool is unpacked under .local/tools/.
TOCSIN_PROMTOOL_DIR=$TOCSIN_ROOT/.local/tools/prometheus
tocsin_promtool()
{
    local dir=$TOCSIN_PROMTOOL_DIR tmp deb
    if command -v promtool >/dev/null 2>&1; then
        command -v promtool
        return 0
    fi
    if [ ! -x "$dir/usr/bin/promtool" ]; then
        tocsin_log "fetching promtool (Debian package prometheus, unpacked under .local/tools)"
        if [ -z "${TOCSIN_APT_UPDATED:-}" ]; then
            as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq </dev/null >&2
            TOCSIN_APT_UPDATED=1
        fi
        tmp=$(mktemp -d "${TMPDIR:-/tmp}/tocsin-promtool.XXXXXX")
        # apt-get download writes into the current folder; as root it warns that its sandbox user
        # cannot write there, which is harmless.
        (cd "$tmp" && apt-get download -qq prometheus </dev/null >/dev/null 2>&1) ||
            tocsin_die "apt-get download prometheus failed (needed for promtool)"
        deb=$(ls "$tmp"/prometheus_*.deb)
        mkdir -p "$dir.new"
        dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$dir.new" ./usr/bin/promtool
        rm -rf "$tmp" "$dir"
        mv "$dir.new" "$dir"
    fi
    printf '%s\n' "$dir/usr/bin/promtool"
}

# tocsin_npm_install [DIR]: installs the Node packages of DIR (default tests/, the API tests'
# packages; tests/lint holds the OpenAPI linter's) when DIR/package.json exists and node_modules is
# missing or older than the lock file.
tocsin_npm_install()
{
    local dir=${1:-$TOCSIN_ROOT/tests}
    [ -f "$dir/package.json" ] || return 0
    if [ -f "$dir/node_modules/.package-lock.json" ] && [ -f "$dir/package-lock.json" ] &&
        [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ] &&
        [ "$dir/node_modules/.package-lock.json" -nt "$dir/package.json" ]; then
        return 0
    fi
    tocsin_log "installing the Node packages of ${dir#"$TOCSIN_ROOT"/}/"
    if [ -f "$dir/package-lock.json" ]; then
        (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error </dev/null)
    else
        (cd "$dir" && npm install --no-audit --no-fund --loglevel=error </dev/null)
    fi
}

# tocsin_build [dir] [cmake args...]: configures and builds the project into dir (relative to the
# project root; default build/).
tocsin_build()
{
    local dir=${1:-build}
    [ "$#" -gt 0 ] && shift
    case $dir in
    /*) ;;
    *) dir=$TOCSIN_ROOT/$dir ;;
    esac
    tocsin_log "building in ${dir#"$TOCSIN_ROOT"/}"
    cmake -S "$TOCSIN_ROOT" -B "$dir" --log-level=WARNING "$@" >/dev/null
    cmake --build "$dir" -j "$(nproc)"
}

# Prints the newest PostgreSQL server bin directory (/usr/lib/postgresql/<major>/bin).
tocsin_pg_bindir()
{
    local d best=
    for d in /usr/lib/postgresql/*/bin; do
        [ -x "$d/initdb" ] || continue
        if [ -z "$best" ] || [ "${d//[!0-9]/}" -gt "${best//[!0-9]/}" ]; then
            best=$d
        fi
    done
    [ -n "$best" ] || tocsin_die "no PostgreSQL server under /usr/lib/postgresql (apt: postgresql)"
    printf '%s\n' "$best"
}

# The system user that runs PostgreSQL when we are root (the server refuses to run as root).
pg_user()
{
    if [ "$(id -u)" -ne 0 ]; then
        id -un
    elif id postgres >/dev/null 2>&1; then
        echo postgres
    else
        id tocsin-pg >/dev/null 2>&1 ||
            useradd --system --no-create-home --shell /usr/sbin/nologin tocsin-pg
        echo tocsin-pg
    fi
}

as_pg()
{
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u "$(pg_user)" -- "$@"
    else
        "$@"
    fi
}

abspath()
{
    case $1 in
    /*) printf '%s\n' "$1" ;;
    *) printf '%s\n' "$PWD/$1" ;;
    esac
}

# Creates an empty data directory at $1 owned by the PostgreSQL user. When that user cannot reach
# the project folder (a clone under a private home, a umask of 077), the data lives in a fresh
# folder under the temp dir and $1 becomes a symlink to it.
pg_make_datadir()
{
    local dir=$1 user real
    user=$(pg_user)
    mkdir -p "$(dirname "$dir")"
    if as_pg test -x "$(dirname "$dir")" && as_pg test -r "$(dirname "$dir")"; then
        mkdir -m 700 "$dir"
    else
        real=$(mktemp -d "${TMPDIR:-/tmp}/tocsin-pg.XXXXXX")
        ln -s "$real" "$dir"
    fi
    [ "$(id -u)" -ne 0 ] || chown "$user:" "$(readlink -f "$dir")"
    chmod 700 "$(readlink -f "$dir")"
}

# Removes a data directory made by pg_make_datadir (and the folder a symlink points to).
tocsin_pg_wipe()
{
    local dir
    dir=$(abspath "$1")
    if [ -L "$dir" ]; then
        rm -rf "$(readlink -f "$dir")"
    fi
    rm -rf "$dir"
}

# postgresql.conf includes tocsin.conf, rewritten at each start: the port and addresses may change.
pg_write_conf()
{
    local dir=$1 port=$2 sock opt
    shift 2
    sock=$(readlink -f "$dir")
    # A unix socket path is limited to 107 bytes; past that, TCP on loopback only.
    if [ "$((${#sock} + 20))" -gt 107 ]; then
        sock=
    fi
    {
        printf "listen_addresses = '127.0.0.1'\n"
        printf "port = %d\n" "$port"
        printf "unix_socket_directories = '%s'\n" "${sock//\'/\'\'}"
        printf "logging_collector = off\n"
        for opt in "$@"; do
            printf '%s\n' "$opt"
        done
    } >"$dir/tocsin.conf"
    [ "$(id -u)" -ne 0 ] || chown "$(pg_user):" "$dir/tocsin.conf"
}

# tocsin_pg_start DIR PORT [setting...]: starts PostgreSQL with its data in DIR (initdb when DIR
# has none), listening on 127.0.0.1:PORT only, trust auth for loopback and the socket in DIR;
# extra "name = value" settings go into its configuration. Creates the database tocsin.
tocsin_pg_start()
{
    local dir port bin
    dir=$(abspath "$1")
    port=$2
    shift 2
    bin=$(tocsin_pg_bindir)
    if [ ! -s "$dir/PG_VERSION" ]; then
        tocsin_pg_wipe "$dir"
        pg_make_datadir "$dir"
        # The server user may not reach the path through the project folder: use the real one.
        as_pg "$bin/initdb" -D "$(readlink -f "$dir")" -U postgres -A trust -E UTF8 --no-locale --no-instructions \
            >"$dir.initdb.log" 2>&1 || {
            cat "$dir.initdb.log" >&2
            tocsin_die "initdb failed in $dir"
        }
        printf 'local all all trust\nhost all all 127.0.0.1/32 trust\n' >"$dir/pg_hba.conf"
        printf "include_if_exists = 'tocsin.conf'\n" >>"$dir/postgresql.conf"
    fi
    tocsin_pg_stop "$dir"
    pg_write_conf "$dir" "$port" "$@"
    dir=$(readlink -f "$dir")
    as_pg "$bin/pg_ctl" -D "$dir" -l "$dir/server.log" -w -t "$TOCSIN_WAIT_S_MAX" -s start \
        </dev/null >/dev/null || {
        tail -n 20 "$dir/server.log" >&2
        tocsin_die "PostgreSQL did not start on 127.0.0.1:$port (log: $dir/server.log)"
    }
    wait_for "PostgreSQL on 127.0.0.1:$port" "$bin/pg_isready" -q -h 127.0.0.1 -p "$port"
    tocsin_pg_createdb "$port" tocsin
}

# tocsin_pg_createdb PORT NAME: creates database NAME on the server at 127.0.0.1:PORT if missing.
tocsin_pg_createdb()
{
    local bin out
    bin=$(tocsin_pg_bindir)
    if ! out=$("$bin/createdb" -h 127.0.0.1 -p "$1" -U postgres "$2" 2>&1); then
        case $out in
        *"already exists"*) ;;
        *) tocsin_die "createdb $2: $out" ;;
        esac
    fi
}

# tocsin_pg_dropdb PORT NAME: drops database NAME (closing its sessions) if it exists.
tocsin_pg_dropdb()
{
    local bin
    bin=$(tocsin_pg_bindir)
    "$bin/dropdb" -h 127.0.0.1 -p "$1" -U postgres --if-exists --force "$2"
}

# tocsin_pg_stop DIR: stops the server of DIR (fast shutdown) by the PID in its postmaster.pid.
tocsin_pg_stop()
{
    local dir pid
    dir=$(abspath "$1")
    [ -f "$dir/postmaster.pid" ] || return 0
    pid=$(head -n 1 "$dir/postmaster.pid")
    case $pid in
    '' | *[!0-9]*) return 0 ;;
    esac
    if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" != postgres ]; then
        return 0 # stale pid file from a crash or reboot: nothing of ours runs
    fi
    kill -INT "$pid" 2>/dev/null || return 0
    wait_gone "$pid" || tocsin_die "PostgreSQL (pid $pid) did not stop"
}

# tocsin_pgbouncer_start DIR PORT PG_PORT: PgBouncer on 127.0.0.1:PORT in transaction mode in front
# of the PostgreSQL on 127.0.0.1:PG_PORT (any database name, trust auth), run as the PostgreSQL
# user (PgBouncer refuses root), its config, pid file and log in DIR.
tocsin_pgbouncer_start()
{
    local dir port=$2 pg=$3
    dir=$(abspath "$1")
    mkdir -p "$dir"
    tocsin_pgbouncer_stop "$dir"
    cat >"$dir/pgbouncer.ini" <<INI
[databases]
* = host=127.0.0.1 port=$pg
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $dir/users.txt
pool_mode = transaction
max_client_conn = 2000
default_pool_size = 20
server_reset_query =
server_login_retry = 1
ignore_startup_parameters = extra_float_digits
pidfile = $dir/pgbouncer.pid
logfile = $dir/pgbouncer.log
INI
    printf '"postgres" ""\n' >"$dir/users.txt"
    [ "$(id -u)" -ne 0 ] || chown -R "$(pg_user):" "$dir"
    as_pg pgbouncer -d -q "$dir/pgbouncer.ini" </dev/null >/dev/null 2>&1 ||
        tocsin_die "pgbouncer did not start (log: $dir/pgbouncer.log)"
    wait_for "PgBouncer on 127.0.0.1:$port" "$(tocsin_pg_bindir)/pg_isready" -q -h 127.0.0.1 \
        -p "$port"
}

# tocsin_pgbouncer_stop DIR: stops the PgBouncer whose pid file is in DIR.
tocsin_pgbouncer_stop()
{
    local dir pid
    dir=$(abspath "$1")
    [ -f "$dir/pgbouncer.pid" ] || return 0
    pid=$(cat "$dir/pgbouncer.pid")
    case $pid in
    '' | *[!0-9]*) return 0 ;;
    esac
    if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = pgbouncer ]; then
        kill -INT "$pid" 2>/dev/null || true
        wait_gone "$pid" || tocsin_die "PgBouncer (pid $pid) did not stop"
    fi
    rm -f "$dir/pgbouncer.pid"
}

# tocsin_redis_start DIR PORT [ARG...]: starts a Redis on 127.0.0.1:PORT with no persistence, its
# pid file and log in DIR, keyspace events for expired keys on; ARGs go to redis-server (e.g. a
# --tls-port beside the plain one).
tocsin_redis_start()
{
    local dir port
    dir=$(abspath "$1")
    port=$2
    shift 2
    mkdir -p "$dir"
    tocsin_redis_stop "$dir"
    redis-server --bind 127.0.0.1 --port "$port" --dir "$dir" --save '' --appendonly no \
        --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" \
        --notify-keyspace-events Ex "$@" </dev/null >/dev/null ||
        tocsin_die "redis-server did not start (log: $dir/redis.log)"
    wait_for "Redis on 127.0.0.1:$port" redis_pong "$port"
}

# tocsin_tls_files DIR: a throwaway CA (DIR/ca.pem) and a server certificate it signs for
# localhost and 127.0.0.1 (DIR/server.pem, DIR/server.key), for a TLS Redis on loopback.
tocsin_tls_files()
{
    local dir=$1
    mkdir -p "$dir"
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=tocsin-test-ca \
        -keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null &&
        openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout "$dir/server.key" \
            -out "$dir/server.csr" 2>/dev/null &&
        printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$dir/server.ext" &&
        openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
            -CAcreateserial -days 2 -extfile "$dir/server.ext" -out "$dir/server.pem" 2>/dev/null ||
        tocsin_die "openssl could not make the test certificates in $dir"
}

redis_pong()
{
    [ "$(redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null)" = PONG ]
}

# tocsin_cluster_start DIR PORT N: a Redis Cluster of N masters and no replicas on 127.0.0.1:PORT
# and the ports after it (each node's bus is its port + 10000), node i's files in DIR/node<i>,
# joined with redis-cli --cluster create. Prints its redis-cluster:// URL once cluster_state is ok.
TOCSIN_CLUSTER_READY_S=30
tocsin_cluster_start()
{
    local dir port=$2 n=$3 nodes=() i
    dir=$(abspath "$1")
    for ((i = 0; i < n; i++)); do
        tocsin_redis_start "$dir/node$i" $((port + i)) --cluster-enabled yes \
            --cluster-config-file "$dir/node$i/nodes.conf" --cluster-node-timeout 2000
        nodes+=("127.0.0.1:$((port + i))")
    done
    redis-cli --cluster create "${nodes[@]}" --cluster-yes >/dev/null
    for ((i = 0; i < TOCSIN_CLUSTER_READY_S * 10; i++)); do
        if redis-cli -p "$port" CLUSTER INFO | grep -q '^cluster_state:ok'; then
            echo "redis-cluster://$(IFS=,; echo "${nodes[*]}")/"
            return 0
        fi
        sleep 0.1
    done
    tocsin_die "the Redis Cluster on $port.. did not reach cluster_state:ok"
}

# tocsin_cluster_stop DIR: stops the nodes of tocsin_cluster_start DIR.
tocsin_cluster_stop()
{
    local d
    for d in "$1"/node*; do
        if [ -d "$d" ]; then
            tocsin_redis_stop "$d"
        fi
    done
}

# tocsin_redis_stop DIR: stops the Redis whose pid file is in DIR.
tocsin_redis_stop()
{
    local dir pid
    dir=$(abspath "$1")
    [ -f "$dir/redis.pid" ] || return 0
    pid=$(cat "$dir/redis.pid")
    case $pid in
    '' | *[!0-9]*) return 0 ;;
    esac
    case $(cat "/proc/$pid/comm" 2>/dev/null) in
    redis-server*) ;;
    *)
        rm -f "$dir/redis.pid"
        return 0
        ;;
    esac
    kill -TERM "$pid" 2>/dev/null || return 0
    wait_gone "$pid" || tocsin_die "Redis (pid $pid) did not stop"
    rm -f "$dir/redis.pid"
}

# wait_for WHAT CMD...: retries CMD every 0.1 s until it succeeds, for at most TOCSIN_WAIT_S_MAX.
wait_for()
{
    local what=$1 i
    shift
    for ((i = 0; i < TOCSIN_WAIT_S_MAX * 10; i++)); do
        if "$@" >/dev/null 2>&1; then
            return 0
        fi
        sleep 0.1
    done
    tocsin_die "$what did not answer within ${TOCSIN_WAIT_S_MAX}s"
}

# wait_gone PID: waits until process PID has exited; 1 after TOCSIN_WAIT_S_MAX seconds.
wait_gone()
{
    local i
    for ((i = 0; i < TOCSIN_WAIT_S_MAX * 10; i++)); do
        kill -0 "$1" 2>/dev/null || return 0
        sleep 0.1
    done
    return 1
}

# Prints the wrapper that disables address randomisation when a sanitizer runtime cannot map its
# shadow memory on this kernel ("unexpected memory mapping"); nothing when it runs as is.
# tocsin_sanitizer_wrap BINARY [args...]
tocsin_sanitizer_wrap()
{
    local out
    out=$("$@" 2>&1 </dev/null)
    case $out in
    *"unexpected memory mapping"* | *"Shadow memory range interleaves"* | *"shadow was supposed"*)
        printf 'setarch %s -R\n' "$(uname -m)"
        ;;
    esac
    return 0
}
