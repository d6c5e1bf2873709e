#!/usr/bin/env bash
# Build libbpf 1.8 (the line after v1.7.0, at the commit below, 2026-07-30)
# into a cache outside the repository, once, as a static library with its
# headers. Prints the install directory (include/, lib/libbpf.a).
#
# It is the second oracle of crates/btf/tests/dedup_libbpf.rs: the dedup of
# recursive typedefs (libbpf commit 37027144, "Fix BTF dedup to support
# recursive typedef definitions", and its base-hash fix 5b0f3729) that
# Debian's libbpf 1.1 refuses. Needs git, make, cc, libelf-dev, zlib1g-dev.
#
#   LIBBPF_GIT  where to clone from (default: the GitHub mirror of libbpf)
set -euo pipefail
commit=f7081a6baf3f54949aacb8c2fc11bb30783b83e9
cache="${BTFKIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/btfkit}"
dir="$cache/libbpf-1.8"
if [ -s "$dir/lib/libbpf.a" ] && [ -s "$dir/include/bpf/btf.h" ]; then
  echo "$dir"; exit 0
fi
mkdir -p "$cache"
tmp=$(mktemp -d "$cache/.libbpf.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
git clone -q --no-checkout "${LIBBPF_GIT:-https://github.com/libbpf/libbpf}" "$tmp/src" >&2
git -C "$tmp/src" checkout -q "$commit" >&2
make -s -C "$tmp/src/src" -j2 BUILD_STATIC_ONLY=1 OBJDIR="$tmp/obj" DESTDIR="$tmp/inst" \
  PREFIX= LIBDIR=/lib INCLUDEDIR=/include install >&2
rm -rf "$dir"
mv "$tmp/inst" "$dir"
echo "$dir"
