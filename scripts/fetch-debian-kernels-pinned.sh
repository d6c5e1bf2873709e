#!/usr/bin/env bash
# Fetch Debian's newer cloud kernels into a cache outside the repository,
# once, for the kallsyms encodings the 6.1 kernel does not have
# (crates/kmem/tests/kallsyms_offset_encodings.rs reads them; it fetches
# nothing).
# Prints the cache directory of each.
#
#   fetch-debian-kernels-pinned.sh           every pinned kernel below
#   fetch-debian-kernels-pinned.sh RELEASE   one of them
#
# The kernels are pinned to exact package versions: apt checks each .deb
# against the archive's signed index, and the script checks it against the
# SHA-256 recorded here as well. When Debian drops a version from sid or
# trixie-backports, the download fails: pin the newer one here (and in the
# test's constants).
#
#   vmlinuz          the bootable image
#   System.map       its link-time symbol table, when the release has its
#                    -dbg package (only that package has the real map;
#                    nothing else of it is kept: no DWARF is used)
#   qemu_fw_cfg.ko   uncompressed, so a QEMU guest can hand VMCOREINFO to dumps
#                    (when the release's modules package is published)
#   VERSION          the image package's name
#   PACKAGES         the packages fetched: name, version, SHA-256
#
# apt runs with its own state under the cache (its own sources list, never
# the system's), so the machine's package setup is untouched. That list
# points at the Debian mirror the host's apt uses (lib/debian-mirror.sh;
# DEBIAN_MIRROR overrides it).
set -euo pipefail
# shellcheck source=lib/debian-mirror.sh
. "$(dirname "$(readlink -f "$0")")/lib/debian-mirror.sh"

# RELEASE: its packages as NAME=VERSION:SHA256. Since 6.16 Debian splits the
# image: vmlinuz in linux-binary-*, modules in linux-modules-*.
declare -A pinned=(
  # sid's 7.x: place-relative kallsyms_offsets, no kallsyms_relative_base.
  ["7.2.13+deb14-cloud-amd64"]="
    linux-binary-7.2.13+deb14-cloud-amd64=7.2.13-1:03e41f1c34c16583462f029e81944a85ebcdb78098c258dedfa1cfdd680a27f8
    linux-modules-7.2.13+deb14-cloud-amd64=7.2.13-1:97d79546041e3fdfb44dccff180938894d1bf8eb298f091f88539c1b37080bef
    linux-image-7.2.13+deb14-cloud-amd64-dbg=7.2.13-1:ea758e3e52a42cf3b05913edd3075186c6bc943a1162c949fc7e6a437d457ad8"
  # trixie-backports' 6.19 (the last 6.x series): offsets + relative base,
  # no absolute per-CPU symbols. Its -dbg and modules packages are gone.
  ["6.19.11+deb13-cloud-amd64"]="
    linux-binary-6.19.11+deb13-cloud-amd64=6.19.11-1~bpo13+1:1bab2734894ec276711b68fe46710f2e10414487e23c319f375b1441f9b6988c"
)

cache="${BTFKIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/btfkit}/debian-new"
if [ "$#" -eq 0 ]; then
  for r in "${!pinned[@]}"; do bash "$0" "$r"; done
  exit 0
fi
release=$1
[ -n "${pinned[$release]:-}" ] || { echo "$release is not pinned in $0" >&2; exit 2; }
mkdir -p "$cache"
# One fetch at a time (they share apt's state here).
exec 9>"$cache/.lock"
flock 9
if [ -s "$cache/$release/vmlinuz" ] && [ "$(cat "$cache/$release/VERSION" 2>/dev/null)" = "linux-image-$release" ]; then
  echo "$cache/$release"; exit 0
fi
apt_dir="$cache/apt"
mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial"
mirror="${DEBIAN_MIRROR:-$(debian_mirror)}" ||
  { echo "$0: no Debian mirror in /etc/apt/sources.list*: set DEBIAN_MIRROR" >&2; exit 1; }
for suite in sid trixie-backports; do
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main"
done > "$apt_dir/sources.list"
apt_opts=(-o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o "Dir::Etc::sourceparts=/nonexistent"
  -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir" -o "Dir::State::status=/dev/null"
  -o "APT::Architecture=amd64" -o "APT::Sandbox::User=root")
apt-get "${apt_opts[@]}" update -qq >&2
pkgs=() sums=()
for p in ${pinned[$release]}; do
  pkgs+=("${p%%:*}") sums+=("${p##*:}")
done
tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
( cd "$tmp" && apt-get "${apt_opts[@]}" download -q "${pkgs[@]}" >&2 )
for i in "${!pkgs[@]}"; do
  name=${pkgs[$i]%%=*} version=${pkgs[$i]#*=}
  deb=$(ls "$tmp/${name}_"*.deb)
  echo "${sums[$i]}  $deb" | sha256sum -c --quiet >&2
  echo "$name $version ${sums[$i]}" >> "$tmp/PACKAGES"
done
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
echo "linux-image-$release" > "$tmp/out/VERSION"
mv "$tmp/PACKAGES" "$tmp/out/PACKAGES"
rm -rf "${cache:?}/$release"
mv "$tmp/out" "$cache/$release"
echo "$cache/$release"
