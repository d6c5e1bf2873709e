#!/usr/bin/env bash
# A Debian sid chroot with the newest oracles (pahole 1.32, bpftool linked
# with libbpf 1.8, gcc 16, clang, llvm, lld), what a kernel build needs
# (with linux-source-7.2, which scripts/kernel/build.sh builds in it) and
# GNU time (bench/ measures pahole 1.32 inside, as it measures btfkit), made
# once and cached under the cache folder. sid's binaries need sid's libc,
# hence a chroot rather than packages on the host.
#
#   scripts/sid-chroot.sh                  make it (if needed), print its path
#   scripts/sid-chroot.sh path             print its path; exit 1 if it is not made
#   scripts/sid-chroot.sh run [--bind DIR]... [--] CMD [ARG...]
#                                          run CMD inside, each DIR visible at the
#                                          same path (read-write); the working
#                                          directory is kept when it is bound
#
# `run` enters a private mount namespace (unshare -m) and mounts /proc, /sys
# and /dev there: the mounts vanish with the command, however it ends, and
# concurrent runs do not see each other's. Needs root and debootstrap
# (.ci/packages.d/sid). The mirror is the Debian one the host's apt uses
# (SID_MIRROR overrides it). sid's index here is past its Valid-Until date,
# so apt inside runs with Acquire::Check-Valid-Until=false.
#
# A stamp file lists the packages installed: a rerun with all of them there
# takes no time, and adding a package to the list installs just the new
# ones (a stamp with more packages, from another branch's list, is fine).
set -euo pipefail

packages=(
  dwarves bpftool gcc clang llvm lld libbpf-dev libc6-dev
  make bc flex bison libssl-dev libelf-dev cpio kmod python3
  linux-source-7.2 time
)

cache="${BTFKIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/btfkit}"
dir="$cache/sid"
stamp="$dir/.btfkit-stamp"
self=$(readlink -f "$0")

die() { echo "sid-chroot.sh: $*" >&2; exit 1; }

# The mirror: debian_mirror, the first Debian archive of the host's apt
# sources (shared with fetch-debian-kernels-pinned.sh).
# shellcheck source=lib/debian-mirror.sh
. "$(dirname "$self")/lib/debian-mirror.sh"

# Runs "$@" in the chroot; meant to be called inside a private mount
# namespace (see `run`), so nothing here needs unmounting.
enter() {
  local root=$1; shift
  local binds=()
  while [ "$#" -gt 0 ]; do
    case $1 in
      --bind) binds+=("$(readlink -f "$2")"); shift 2 ;;
      --) shift; break ;;
      *) break ;;
    esac
  done
  [ "$#" -gt 0 ] || die "run: no command given"
  mount -t proc proc "$root/proc"
  mount --rbind /sys "$root/sys"
  mount --rbind /dev "$root/dev"
  local b
  for b in "${binds[@]}"; do
    [ -e "$b" ] || die "run: --bind $b: no such file or directory"
    if [ -d "$b" ]; then
      mkdir -p "$root$b"
    else
      mkdir -p "$(dirname "$root$b")"; [ -e "$root$b" ] || : > "$root$b"
    fi
    mount --rbind "$b" "$root$b"
  done
  local wd=/
  [ -d "$root$PWD" ] && wd=$PWD
  exec chroot "$root" /usr/bin/env -i \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" DEBIAN_FRONTEND=noninteractive \
    /bin/sh -c 'cd "$1" && shift && exec "$@"' sh "$wd" "$@"
}

run_in() { unshare --mount --propagation private "$self" __enter "$@"; }

make_chroot() {
  [ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot, mount)"
  command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap)"
  mkdir -p "$cache"
  if [ ! -x "$dir/usr/bin/apt-get" ]; then
    local mirror="${SID_MIRROR:-$(debian_mirror)}"
    [ -n "$mirror" ] || die "no Debian mirror in /etc/apt/sources.list*: set SID_MIRROR"
    # Built aside and renamed, so an interrupted debootstrap leaves nothing
    # that looks finished.
    local tmp="$dir.tmp"
    # An interrupted debootstrap may leave /proc or /sys mounted inside:
    # never delete across into them.
    rm -rf --one-file-system "$tmp" "$dir"
    echo "sid-chroot.sh: debootstrap sid from $mirror" >&2
    debootstrap --variant=minbase sid "$tmp" "$mirror" >&2 ||
      die "debootstrap failed (see $tmp/debootstrap/debootstrap.log)"
    mv "$tmp" "$dir"
  fi
  cp /etc/resolv.conf "$dir/etc/resolv.conf"
  run_in "$dir" -- apt-get -qq -o Acquire::Check-Valid-Until=false update >&2
  run_in "$dir" -- apt-get -qq -o Acquire::Check-Valid-Until=false install -y \
    --no-install-recommends "${packages[@]}" >&2
  run_in "$dir" -- apt-get -qq clean
  { cat "$stamp" 2>/dev/null || true; printf '%s\n' "${packages[@]}"; } | sort -u > "$stamp.new"
  mv "$stamp.new" "$stamp"
}

# Whether every package of the list is in the stamp.
ready() {
  [ -f "$stamp" ] &&
    [ -z "$(printf '%s\n' "${packages[@]}" | sort -u | comm -23 - "$stamp")" ]
}

# One maker at a time; a caller that waited finds the chroot made.
ensure() {
  ready && return 0
  mkdir -p "$cache"
  exec 9>"$cache/.sid.lock"
  flock 9
  ready || make_chroot
  exec 9>&-
}

case "${1:-}" in
  "" | make)
    ensure
    echo "$dir"
    ;;
  path)
    ready || die "the sid chroot is missing or out of date: run scripts/sid-chroot.sh"
    echo "$dir"
    ;;
  run)
    shift
    ensure
    [ "$(id -u)" = 0 ] || die "run needs root (mount, chroot)"
    run_in "$dir" "$@"
    ;;
  __enter)
    shift
    enter "$@"
    ;;
  *)
    die "usage: $0 [make | path | run [--bind DIR]... [--] CMD [ARG...]]"
    ;;
esac
