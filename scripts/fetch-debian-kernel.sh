#!/usr/bin/env bash
# Fetch Debian's cloud kernel with DWARF (the tests' and benchmarks' reference workload)
# into a cache outside the repository, once. Prints the cache directory.
#
#   vmlinux      the debug vmlinux (full DWARF 5 + Debian's pahole-written .BTF)
#   System.map   its link-time symbol table
#   vmlinuz      the bootable image of the same kernel (QEMU tests)
#   dbg-modules/ a few debug modules (DWARF), image-modules/ the shipped ones (split .BTF)
#
# The version is resolved from the meta package, so it follows Debian's updates.
set -euo pipefail
cache="${BTFKIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/btfkit}"
mkdir -p "$cache"
cd "$cache"
if [ -s vmlinux ] && [ -s vmlinuz ] && [ -s System.map ] && [ -d dbg-modules ] && [ -d image-modules ]; then
  echo "$cache"; exit 0
fi
if ! apt-cache show linux-image-cloud-amd64-dbg >/dev/null 2>&1; then
  apt-get update -qq >&2
fi
dbgpkg=$(apt-cache depends linux-image-cloud-amd64-dbg | awk '/Depends: linux-image-.*-dbg/ {print $2; exit}')
imgpkg=${dbgpkg%-dbg}
[ -n "$dbgpkg" ] || { echo "cannot resolve the debug kernel package" >&2; exit 1; }
tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
( cd "$tmp" && apt-get download -q "$dbgpkg" "$imgpkg" >&2 )
dbgdeb=$(ls "$tmp"/"$dbgpkg"_*.deb)
imgdeb=$(ls "$tmp"/"$imgpkg"_*.deb)
mkdir -p "$tmp/x"
dpkg-deb --fsys-tarfile "$dbgdeb" | tar -x -C "$tmp/x" --wildcards './usr/lib/debug/boot/*' './usr/lib/debug/lib/modules/*'
dpkg-deb --fsys-tarfile "$imgdeb" | tar -x -C "$tmp/x" --wildcards './lib/modules/*' './boot/System.map-*' './boot/vmlinuz-*'
mv "$tmp"/x/usr/lib/debug/boot/vmlinux-* "$tmp/vmlinux"
if ls "$tmp"/x/usr/lib/debug/boot/System.map-* >/dev/null 2>&1; then
  mv "$tmp"/x/usr/lib/debug/boot/System.map-* "$tmp/System.map"
else
  mv "$tmp"/x/boot/System.map-* "$tmp/System.map"
fi
# Keep the modules in their tree so names stay unique (kernel/net/..., drivers/...).
mv "$tmp"/x/usr/lib/debug/lib/modules/* "$tmp/dbg-modules"
mv "$tmp"/x/lib/modules/* "$tmp/image-modules"
mv "$tmp"/x/boot/vmlinuz-* "$tmp/vmlinuz"
echo "${dbgpkg}" > "$tmp/VERSION"
mv "$tmp/vmlinux" "$tmp/vmlinuz" "$tmp/System.map" "$tmp/VERSION" "$cache/"
rm -rf "$cache/dbg-modules" "$cache/image-modules"
mv "$tmp/dbg-modules" "$tmp/image-modules" "$cache/"
echo "$cache"
