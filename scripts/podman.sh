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
