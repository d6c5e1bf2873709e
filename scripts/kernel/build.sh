#!/usr/bin/env bash
# Build a small BTF kernel from Debian's linux-source package with a given pahole.
#
#   scripts/kernel/build.sh VERSION CC PAHOLE [NAME]
#
#   VERSION  6.1 | 6.12      (the host's /usr/src/linux-source-VERSION.tar.xz)
#            7.2             (Debian sid's, built inside the sid chroot of
#                            scripts/sid-chroot.sh with sid's GCC 16 or clang 21)
#   CC       gcc | clang     (clang: LLVM=-19 on the host, LLVM=1 in the chroot)
#   PAHOLE   the pahole to run (Debian's /usr/bin/pahole, or btfkit through a symlink
#            named pahole: `make PAHOLE=...` exactly as a distribution would build);
#            `sid` is the chroot's pahole 1.32 (7.2 only)
#   NAME     tree label (default: "btfkit" when PAHOLE resolves to a btfkit binary,
#            else "pahole")
#
# Prints the result directory on stdout when done: bzImage, vmlinux, System.map, .config,
# the two modules (configfs.ko and crc-itu-t.ko; prime_numbers.ko on 7.2, where
# CRC_ITU_T has no prompt), the out-of-tree module of extmod/ (btfkit_oot.ko)
# and build.log (the make output). Under
# ${XDG_CACHE_HOME:-$HOME/.cache}/btfkit/kernels:
#   src/linux-source-VERSION/   unpacked once per tarball (stamp: its size and mtime)
#   build/VERSION-CC/           the object tree, shared by every pahole
#   VERSION-CC-NAME/            the result of one pahole (complete, or absent)
#
# Caching: a result is reused as long as the tarball, the option list and the pahole
# binary (its sha256 and --version) are the same. Otherwise the shared object tree is
# brought up to date with this pahole: make recompiles only what the config change
# reaches (CONFIG_PAHOLE_VERSION differs between paholes; no C file uses it), and the
# link runs again, with its BTF step, because the old vmlinux is removed first (the
# modules' final link depends on vmlinux). One tree, not a copy per pahole: kbuild's
# tools (objtool) record absolute paths, so a copied tree recompiles everything.
set -euo pipefail

usage() { echo "usage: $0 VERSION(6.1|6.12) CC(gcc|clang) PAHOLE [NAME]" >&2; exit 2; }
[ $# -ge 3 ] && [ $# -le 4 ] || usage
version=$1 cc=$2 pahole=$3
here=$(cd "$(dirname "$0")" && pwd)
cache="${BTFKIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/btfkit}/kernels"
mkdir -p "$cache"
# in_tree CMD...: runs CMD where the kernel is built (the host, or the sid
# chroot with the cache and the pahole's directories bound at the same paths).
binds=(--bind "$cache")
case "$version" in
  6.1 | 6.12)
    sid=
    modules=(fs/configfs/configfs.ko lib/crc-itu-t.ko) module_option="CRC_ITU_T m"
    case "$cc" in gcc) llvm=() ;; clang) llvm=(LLVM=-19) ;; *) usage ;; esac
    in_tree() { "$@"; }
    ;;
  7.2)
    sid=$(bash "$here/../sid-chroot.sh")
    modules=(fs/configfs/configfs.ko lib/math/prime_numbers.ko) module_option="PRIME_NUMBERS m"
    case "$cc" in gcc) llvm=() ;; clang) llvm=(LLVM=1) ;; *) usage ;; esac
    in_tree() { bash "$here/../sid-chroot.sh" run "${binds[@]}" -- "$@"; }
    ;;
  *) usage ;;
esac
if [ "$pahole" = sid ] && [ -n "$sid" ]; then
  pahole=/usr/bin/pahole real=$sid/usr/bin/pahole
else
  pahole=$(command -v "$pahole") || { echo "$0: pahole not found: $3" >&2; exit 1; }
  pahole=$(cd "$(dirname "$pahole")" && pwd)/$(basename "$pahole")
  real=$(readlink -f "$pahole")
  binds+=(--bind "$(dirname "$pahole")" --bind "$(dirname "$real")")
fi
if [ $# -eq 4 ]; then
  name=$4
elif [ "$(basename "$real")" = btfkit ]; then
  name=btfkit
else
  name=pahole
fi

tarball=$sid/usr/src/linux-source-$version.tar.xz
[ -r "$tarball" ] || { echo "$0: $tarball missing (apt-get install linux-source-$version${sid:+ in the sid chroot})" >&2; exit 1; }
src=$cache/src/linux-source-$version
out=$cache/build/$version-$cc
result=$cache/$version-$cc-$name
mkdir -p "$cache/src" "$cache/build"
jobs=$(nproc)
log() { echo "kernel $version-$cc-$name: $*" >&2; }

# One build of a version at a time (tests in several processes may ask; the
# sources are shared); a caller that waited finds the result the other made.
exec 8>"$cache/.lock-$version"
flock 8

# 1. Sources: unpack once per tarball (into a temporary directory, then rename).
tar_id=$(stat -c '%s %Y' "$tarball")
if [ ! -f "$src/.btfkit-unpacked" ] || [ "$(cat "$src/.btfkit-unpacked")" != "$tar_id" ]; then
  log "unpacking $tarball"
  rm -rf "$src" "$src.tmp"
  mkdir "$src.tmp"
  tar -xf "$tarball" -C "$src.tmp" --strip-components=1
  echo "$tar_id" >"$src.tmp/.btfkit-unpacked"
  mv "$src.tmp" "$src"
  # Object trees and results of the old sources are stale.
  rm -rf "$cache/build/$version-"* "$cache/$version-"*
fi

# make runs the pahole for minutes, the caller's link to it may be re-pointed
# meanwhile (tests of other worktrees share it): make runs a link of this object tree,
# made under the lock, to the binary resolved above.
if [ "$real" != "$pahole" ] && [ "$pahole" != /usr/bin/pahole ]; then
  mkdir -p "$out.pahole"
  ln -sfn "$real" "$out.pahole/pahole"
  pahole=$out.pahole/pahole
fi

# 2. A result of the same sources, options and pahole is reused as it is.
# The option list: scripts/kernel/config and the second module of this version.
options=$(cat "$here/config"; echo "$module_option")
options_id=$(printf '%s\n' "$options" | sha256sum | cut -c1-16)
pahole_id="$(sha256sum "$real" | cut -c1-64) $(in_tree "$pahole" --version)"
extmod_id=$(cat "$here"/extmod/* | sha256sum | cut -c1-16)
# This script's own hash too: a result made by an older recipe (one that did
# not relink 7.x's vmlinux.unstripped for a new pahole) is rebuilt.
recipe_id=$(sha256sum "$0" | cut -c1-16)
result_id="$(cat "$src/.btfkit-unpacked") $options_id $extmod_id $recipe_id $pahole_id"
if [ -f "$result/.btfkit-result" ] && [ "$(cat "$result/.btfkit-result")" = "$result_id" ]; then
  log "up to date"
  echo "$result"
  exit 0
fi
mkdir -p "$out"

mk() { in_tree make -C "$src" O="$out" -j"$jobs" PAHOLE="$pahole" "${llvm[@]}" "$@"; }

# 3. Config: tinyconfig plus what the tests need; redone when the option list changes.
config_id="$options_id $(cat "$src/.btfkit-unpacked")"
# The make output of this run (the result keeps it as build.log).
exec 3>"$out/btfkit-build.log"
if [ ! -f "$out/.btfkit-config" ] || [ "$(cat "$out/.btfkit-config")" != "$config_id" ]; then
  log "configuring"
  mk tinyconfig >&3 2>&3
  args=()
  while read -r opt value; do
    case "$opt" in '' | '#'*) continue ;; esac
    case "$value" in
      y) args+=(-e "$opt") ;;
      m) args+=(-m "$opt") ;;
      n) args+=(-d "$opt") ;;
      *) args+=(--set-val "$opt" "$value") ;;
    esac
  done <<<"$options"
  "$src/scripts/config" --file "$out/.config" "${args[@]}"
  echo "$config_id" >"$out/.btfkit-config"
fi
# Always: the config holds CONFIG_PAHOLE_VERSION, which follows the pahole given.
mk olddefconfig >&3 2>&3
missing=
while read -r opt value; do
  case "$opt" in '' | '#'*) continue ;; esac
  case "$value" in
    y | m) grep -qx "CONFIG_$opt=$value" "$out/.config" || missing="$missing $opt=$value" ;;
    n) ! grep -q "^CONFIG_$opt=" "$out/.config" || missing="$missing $opt=n" ;;
  esac
done <<<"$options"
if [ -n "$missing" ]; then
  echo "$0: options not in the resolved config of $out:$missing" >&2
  exit 1
fi

# 4. Build. A different pahole binary means a new BTF step even when make sees nothing
# else changed: drop the linked vmlinux (bzImage and the modules' final link follow).
# 7.x links vmlinux.unstripped (with the BTF step) and only copies it to vmlinux
# without relocations: removing vmlinux alone would copy the old BTF again.
relink=
if [ ! -f "$out/.btfkit-pahole" ] || [ "$(cat "$out/.btfkit-pahole")" != "$pahole_id" ]; then
  rm -f "$out/vmlinux" "$out/vmlinux.unstripped" "$out/.tmp_vmlinux"*
  relink=1
fi
log "make bzImage modules (log: $out/btfkit-build.log)"
start=$(date +%s)
if ! mk bzImage modules >&3 2>&3; then
  echo "$0: kernel build failed; last lines of $out/btfkit-build.log:" >&2
  tail -n 30 "$out/btfkit-build.log" >&2
  exit 1
fi
log "built in $(($(date +%s) - start)) s"
# link-vmlinux.sh ends the BTF step of every version with `BTFIDS  vmlinux...`:
# without it, vmlinux still carries the BTF of the previous pahole.
if [ -n "$relink" ] && ! grep -qE '^  BTFIDS +vmlinux' "$out/btfkit-build.log"; then
  echo "$0: the build did not relink vmlinux with the BTF step of $pahole (no BTFIDS line in $out/btfkit-build.log)" >&2
  exit 1
fi
echo "$pahole_id" >"$out/.btfkit-pahole"

# 5. The out-of-tree module of extmod/, built as a distribution's user would
# (`make M=`) against this tree and its vmlinux: kbuild then asks the pahole
# (6.12) or resolve_btfids (7.x) for a distilled base. A fresh copy each
# time, since its BTF follows the vmlinux of this pahole.
extmod=$cache/build/$version-$cc-extmod
rm -rf "$extmod"
cp -r "$here/extmod" "$extmod"
log "make M=$extmod modules"
if ! mk M="$extmod" modules >&3 2>&3; then
  echo "$0: the out-of-tree module failed to build; last lines of $out/btfkit-build.log:" >&2
  tail -n 30 "$out/btfkit-build.log" >&2
  exit 1
fi

# 6. The result, complete or not at all.
rm -rf "$result.tmp"
mkdir "$result.tmp"
cp "$out/arch/x86/boot/bzImage" "$out/vmlinux" "$out/System.map" "$out/.config" \
  "${modules[@]/#/$out/}" "$extmod/btfkit_oot.ko" "$result.tmp/"
cp "$out/btfkit-build.log" "$result.tmp/build.log"
echo "$result_id" >"$result.tmp/.btfkit-result"
rm -rf "$result"
mv "$result.tmp" "$result"
echo "$result"
