# scripts/podman.sh -- what scripts/containers.sh and scripts/debian12.sh share, sourced after
# lib.sh: rootful podman with this project's engine settings, and the debian:bookworm-slim base
# image made offline (no image registry) with debootstrap from the machine's own Debian mirror.
# It only defines functions and TOCSIN_BASE_IMAGE, and sets no shell options.

TOCSIN_BASE_IMAGE=docker.io/library/debian:bookworm-slim

# tocsin_podman_setup WORK: installs podman and its helpers when missing and exports a private
# CONTAINERS_CONF under WORK (nothing under /etc is changed). Needs root.
tocsin_podman_setup()
{
    local work=$1 missing= p nofile nproc
    [ "$(id -u)" -eq 0 ] || tocsin_die "rootful podman needs root"
    mkdir -p "$work"
    for p in podman buildah runc netavark aardvark-dns iptables debootstrap docker-compose curl; do
        if pkg_missing "$p"; then
            missing="$missing $p"
        fi
    done
    if [ -n "$missing" ]; then
        tocsin_log "installing$missing"
        as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq </dev/null
        # shellcheck disable=SC2086
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            $missing </dev/null >/dev/null
    fi
    # Each line answers an error seen on these machines: crun cannot run on the hybrid cgroup
    # setup, and the default rlimits exceed what the sandbox may set.
    nofile=$(ulimit -Hn)
    nproc=$(ulimit -Hu)
    if [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; then nproc=32768; fi
    cat >"$work/containers.conf" <<CONF
[containers]
default_ulimits = ["nofile=${nofile}:${nofile}", "nproc=${nproc}:${nproc}"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
[network]
network_backend = "netavark"
CONF
    export CONTAINERS_CONF=$work/containers.conf
}

# tocsin_base_image WORK: makes $TOCSIN_BASE_IMAGE with debootstrap (minbase, about a minute)
# unless podman has it already. Its apt sources are the machine's Debian ones.
tocsin_base_image()
{
    local work=$1 mirror rootfs=$1/rootfs
    podman image exists "$TOCSIN_BASE_IMAGE" && return 0
    mirror=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
    [ -n "$mirror" ] || mirror=$(awk '$1 == "deb" { print $2; exit }' /etc/apt/sources.list)
    tocsin_log "debootstrap of the base image (about a minute)"
    rm -rf "$rootfs"
    debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 || {
        tail -20 "$work/debootstrap.log" >&2
        tocsin_die "debootstrap failed"
    }
    rm -f "$rootfs/etc/resolv.conf" "$rootfs/etc/hostname"
    if [ -f /etc/apt/sources.list.d/debian.sources ]; then
        rm -f "$rootfs/etc/apt/sources.list"
        cp /etc/apt/sources.list.d/debian.sources "$rootfs/etc/apt/sources.list.d/"
    fi
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar --numeric-owner -C "$rootfs" -c . | podman import -q --change 'CMD ["bash"]' \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' - \
        "$TOCSIN_BASE_IMAGE"
    rm -rf "$rootfs"
}

# tocsin_aardvark_scrub: removes aardvark-dns's name tables of networks podman no longer has.
# netavark keeps one file per network under the rootful run directory, shared by every podman on
# the machine, and a teardown cut short (or racing its own parallel removals, as podman 4.3's can)
# leaves one behind. The next network given the same subnet then answers with the dead one's
# addresses too: the load balancer's `tocsin` named five replicas, two of them nowhere, and 200 of
# 500 streams waited on addresses with no route. aardvark-dns rereads its tables on SIGHUP.
TOCSIN_AARDVARK_DIR=/run/containers/networks/aardvark-dns
tocsin_aardvark_scrub()
{
    local f name networks pid removed=
    [ -d "$TOCSIN_AARDVARK_DIR" ] || return 0
    networks=$(podman network ls --format '{{.Name}}' 2>/dev/null) || return 0
    for f in "$TOCSIN_AARDVARK_DIR"/*; do
        [ -f "$f" ] || continue
        name=${f##*/}
        case $name in aardvark.pid | *.lock) continue ;; esac
        if ! printf '%s\n' "$networks" | grep -Fx -- "$name" >/dev/null; then
            tocsin_log "removing aardvark-dns's table of network $name (no such network: a stale one)"
            rm -f "$f"
            removed=1
        fi
    done
    if [ -n "$removed" ] && [ -f "$TOCSIN_AARDVARK_DIR/aardvark.pid" ]; then
        pid=$(cat "$TOCSIN_AARDVARK_DIR/aardvark.pid")
        kill -HUP "$pid" 2>/dev/null || true
    fi
}
