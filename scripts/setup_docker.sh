#!/usr/bin/env bash
# The Docker sandbox backend's engine and image, built here (there is no image registry):
#   1. docker.io (and debootstrap) from apt when missing;
#   2. dockerd in the background when no engine answers (`--iptables=false --bridge=none`: sandbox
#      containers run with `--network none`, so the engine needs no bridge), logging to $DOCKERD_LOG;
#   3. the sandbox image gfcr-sandbox:bookworm when absent: Debian bookworm minbase plus python3,
#      assembled by debootstrap from the mirror apt uses and loaded with `docker import`.
# Idempotent and quick when done. Needs root for each step it has to do; as another user it says
# what to run and exits 0, so `make setup` still works on a developer's machine.
#
#   bash scripts/setup_docker.sh           # all three steps; `make setup` runs it
#   bash scripts/setup_docker.sh --start   # only steps 1-2 (the tests' fixture runs this)
set -euo pipefail
cd "$(dirname "$0")/.."

image=${GFCR_SANDBOX_IMAGE:-gfcr-sandbox:bookworm}  # = gfcr.sandboxes.docker_backend.DEFAULT_IMAGE
log=${DOCKERD_LOG:-/var/log/gfcr-dockerd.log}
say() { echo "setup_docker: $*" >&2; }
root() { [[ $(id -u) == 0 ]]; }
engine_answers() { command -v docker >/dev/null && timeout 10 docker info >/dev/null 2>&1; }

install_packages() {  # apt packages for the commands named in "$@" (command:package pairs)
    local missing=()
    for pair in "$@"; do command -v "${pair%%:*}" >/dev/null || missing+=("${pair#*:}"); done
    ((${#missing[@]})) || return 0
    if ! root || ! command -v apt-get >/dev/null; then
        say "missing ${missing[*]}: run as root on Debian/Ubuntu: apt-get install -y ${missing[*]}"
        return 1
    fi
    say "installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null \
        || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive \
            apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; }
}

start_engine() {
    engine_answers && return 0
    install_packages docker:docker.io dockerd:docker.io || return 1
    engine_answers && return 0
    if ! root; then
        say "no Docker engine answers; start one as root: dockerd --iptables=false --bridge=none &"
        return 1
    fi
    say "starting dockerd (log: $log)"
    mkdir -p "$(dirname "$log")"
    setsid nohup dockerd --iptables=false --bridge=none >>"$log" 2>&1 </dev/null &
    for _ in $(seq 120); do  # about 5 s here; give a loaded machine a minute
        engine_answers && return 0
        sleep 0.5
    done
    say "dockerd did not answer within 60 s; see $log"
    return 1
}

debian_mirror() {  # the Debian mirror apt uses (deb822 or one-line sources)
    local uri
    uri=$(grep -hsE '^(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/* \
        | grep -oE 'https?://[^ ]+/debian/?( |$)' | grep -v security | head -n1 | tr -d ' ')
    echo "${uri:-http://deb.debian.org/debian}"
}

build_image() {
    docker image inspect "$image" >/dev/null 2>&1 && return 0
    install_packages debootstrap:debootstrap || return 1
    local rootfs started
    rootfs=$(mktemp -d /var/tmp/gfcr-rootfs.XXXXXX)
    trap 'rm -rf "$rootfs"' RETURN
    started=$SECONDS
    say "building $image from $(debian_mirror) (about a minute)"
    # minbase: the Essential packages (bash, coreutils, util-linux …); python3-minimal plus the
    # standard library is what the backend's bootstrap and session loop run with.
    debootstrap --variant=minbase --include=python3-minimal,libpython3.11-stdlib \
        bookworm "$rootfs" "$(debian_mirror)" >"$rootfs.log" 2>&1 \
        || { say "debootstrap failed; see $rootfs.log"; return 1; }
    rm -f "$rootfs.log"
    # Nothing a run needs: package caches, docs, and the password hashes (no account has one).
    rm -rf "$rootfs"/var/cache/apt/* "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/{doc,man,info,locale}/* \
        "$rootfs"/etc/shadow* "$rootfs"/etc/gshadow*
    ln -sf python3 "$rootfs/usr/bin/python"
    tar -C "$rootfs" -c . | docker import --change 'CMD ["python3"]' - "$image" >/dev/null
    say "built $image in $((SECONDS - started)) s: $(docker image inspect -f '{{.Size}}' "$image" | numfmt --to=iec)"
}

start_engine || exit 0  # said what to do; the Docker tests skip (fail in CI) until it is done
[[ ${1:-} == --start ]] && exit 0
build_image || exit 0
