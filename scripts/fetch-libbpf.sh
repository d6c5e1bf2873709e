#!/usr/bin/env bash
# Build the newest libbpf that a package registry ships into a cache outside
# the repository, once, as a static library with its headers. Prints the
# install directory (include/, lib/libbpf.a).
#
# It is the second oracle of the dedup tests: the dedup of recursive
# typedefs (libbpf commit 37027144, "Fix BTF dedup to support recursive
# typedef definitions") that Debian's libbpf 1.1 refuses. The source is the
# libbpf that crates.io's `libbpf-sys` package vendors (libbpf 1.7.0, the
# first release with that rule), fetched by cargo like any dependency.
# Needs cargo, make, cc, libelf-dev, zlib1g-dev.
set -euo pipefail
version="1.7.0+v1.7.0"
cache="${BTFKIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/btfkit}"
dir="$cache/libbpf-new"
if [ -s "$dir/lib/libbpf.a" ] && [ -s "$dir/include/bpf/btf.h" ]; then
  echo "$dir"; exit 0
fi
mkdir -p "$cache"
tmp=$(mktemp -d "$cache/.libbpf.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# A throwaway package whose one dependency is libbpf-sys: `cargo fetch`
# downloads it, `cargo metadata` says where its source was unpacked.
mkdir -p "$tmp/pkg/src"
cat > "$tmp/pkg/Cargo.toml" <<TOML
[package]
name = "libbpf-oracle-source"
version = "0.0.0"
edition = "2021"
[dependencies]
libbpf-sys = { version = "=$version", default-features = false }
TOML
: > "$tmp/pkg/src/lib.rs"
cargo fetch -q --manifest-path "$tmp/pkg/Cargo.toml" >&2
src=$(cargo metadata -q --format-version 1 --manifest-path "$tmp/pkg/Cargo.toml" |
  python3 -c 'import json,sys; m=json.load(sys.stdin); print(next(p["manifest_path"] for p in m["packages"] if p["name"]=="libbpf-sys"))')
src=$(dirname "$src")/libbpf/src
make -s -C "$src" -j2 BUILD_STATIC_ONLY=1 OBJDIR="$tmp/obj" DESTDIR="$tmp/inst" \
  PREFIX= LIBDIR=/lib INCLUDEDIR=/include install >&2
rm -rf "$dir"
mv "$tmp/inst" "$dir"
echo "$dir"
