#!/usr/bin/env bash
# Fetch one of Debian's newer cloud kernels into a cache outside the
# repository, once, for the kallsyms encodings the 6.1 kernel does not have.
# Prints the cache directory.
#
#   fetch-debian-kernel-new.sh            sid's current cloud kernel (7.x:
#                                          place-relative kallsyms_offsets)
#   fetch-debian-kernel-new.sh RELEASE    a given one from sid or
#                                          trixie-backports, e.g.
#                                          6.19.11+deb13-cloud-amd64 (6.15-6.19:
#                                          offsets + relative base, no absolute
#                                          per-CPU symbols)
#
#   vmlinuz          the bootable image
#   System.map       its link-time symbol table, when the release still has
#                    its -dbg package (only that package has the real map;
#                    nothing else of it is kept: no DWARF is used)
#   qemu_fw_cfg.ko   uncompressed, so a QEMU guest can hand VMCOREINFO to dumps
#                    (when the release's modules package is still published)
#   VERSION          the image package's name
#
# apt runs with its own state under the cache (its own sources, never the
# system's), so the machine's package setup is untouched.
set -euo pipefail
cache="${BTFKIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/btfkit}/debian-new"
mkdir -p "$cache"
# One fetch at a time (tests run in parallel and share apt's state here).
exec 9>"$cache/.lock"
flock 9
release="${1:-}"
cached="${release:-$(cat "$cache/current" 2>/dev/null || true)}"
if [ -n "$cached" ] && [ -s "$cache/$cached/vmlinuz" ] && [ -s "$cache/$cached/VERSION" ]; then
  echo "$cache/$cached"; exit 0
fi
apt_dir="$cache/apt"
mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial"
for suite in sid trixie-backports; do
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $suite main"
done > "$apt_dir/sources.list"
apt_opts=(-o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o "Dir::Etc::sourceparts=/nonexistent"
  -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir" -o "Dir::State::status=/dev/null"
  -o "APT::Architecture=amd64" -o "APT::Sandbox::User=root")
apt-get "${apt_opts[@]}" update -qq >&2
if [ -z "$release" ]; then
  # The candidate is sid's (priority 500 over backports' 100).
  imgpkg=$(apt-cache "${apt_opts[@]}" depends linux-image-cloud-amd64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
  [ -n "$imgpkg" ] || { echo "cannot resolve linux-image-cloud-amd64 in sid" >&2; exit 1; }
  release=${imgpkg#linux-image-}
fi
imgpkg="linux-image-$release"
apt-cache "${apt_opts[@]}" show "$imgpkg" >/dev/null 2>&1 || { echo "no package $imgpkg in sid or trixie-backports" >&2; exit 1; }
# Since 6.16 Debian splits the image: vmlinuz in linux-binary-*, modules in
# linux-modules-*; older packages carry both in linux-image-* itself.
pkgs=()
# Only packages apt can download (an index may name one it no longer has).
# (No pipe into grep -q: under pipefail its early exit fails the pipe.)
available() { [[ $(apt-cache "${apt_opts[@]}" policy "$1" 2>/dev/null) == *"Candidate: "[0-9]* ]]; }
for p in "$imgpkg-dbg" "linux-binary-$release" "linux-modules-$release"; do
  if available "$p"; then pkgs+=("$p"); fi
done
available "linux-binary-$release" || pkgs+=("$imgpkg")
tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
( cd "$tmp" && apt-get "${apt_opts[@]}" download -q "${pkgs[@]}" >&2 )
mkdir -p "$tmp/x" "$tmp/out"
for deb in "$tmp"/*.deb; do
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp/x" --wildcards --no-anchored \
    'vmlinuz*' 'System.map*' 'qemu_fw_cfg.ko*' 2>/dev/null || true
done
find "$tmp/x" -name 'vmlinuz*' -type f -exec mv {} "$tmp/out/vmlinuz" \;
# The -dbg package's map is the real one; the others hold a one-line pointer to it.
find "$tmp/x" -path '*debug*' -name 'System.map*' -type f -exec mv {} "$tmp/out/System.map" \;
# The image's module, not the -dbg package's copy with DWARF.
ko=$(find "$tmp/x" -name 'qemu_fw_cfg.ko*' -type f -not -path '*debug*' | head -1)
case "${ko:-}" in
  *.xz) xz -dc "$ko" > "$tmp/out/qemu_fw_cfg.ko" ;;
  *.zst) zstd -dqc "$ko" > "$tmp/out/qemu_fw_cfg.ko" ;;
  *.gz) gzip -dc "$ko" > "$tmp/out/qemu_fw_cfg.ko" ;;
  ?*) cp "$ko" "$tmp/out/qemu_fw_cfg.ko" ;;
esac
[ -s "$tmp/out/vmlinuz" ] || { echo "no vmlinuz in ${pkgs[*]}" >&2; exit 1; }
if [ -e "$tmp/out/System.map" ] && [ "$(wc -l < "$tmp/out/System.map")" -lt 1000 ]; then
  echo "System.map of ${pkgs[*]} is not the real one" >&2; exit 1
fi
echo "$imgpkg" > "$tmp/out/VERSION"
rm -rf "${cache:?}/$release"
mv "$tmp/out" "$cache/$release"
[ -n "${1:-}" ] || echo "$release" > "$cache/current"
echo "$cache/$release"
