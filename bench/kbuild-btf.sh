#!/usr/bin/env bash
# The BTF step of a kernel build measured alone: the link step's
# `pahole -J $PAHOLE_FLAGS .tmp_vmlinux.btf`, run by Debian's pahole 1.24 and by
# btfkit as pahole, each on a fresh copy of the same pre-BTF ELF, with the flags
# 6.1's scripts/pahole-flags.sh gives each version. Rounds alternate the two
# (a shared machine drifts); prints per-round wall time, CPU time (user + sys,
# less sensitive to other load on the machine) and peak RSS (/usr/bin/time),
# the medians, and the .BTF sizes.
#
#   bench/kbuild-btf.sh [ROUNDS] [TREE]
#
# TREE: a 6.1 object tree of scripts/kernel/build.sh (default
# ${XDG_CACHE_HOME:-$HOME/.cache}/btfkit/kernels/build/6.1-gcc), whose last link
# left .tmp_vmlinux.btf. btfkit: target/release/btfkit (cargo build --release -p btfkit).
set -euo pipefail
rounds=${1:-5}
cache="${BTFKIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/btfkit}"
tree=${2:-$cache/kernels/build/6.1-gcc}
root=$(cd "$(dirname "$0")/.." && pwd)
btfkit=$root/target/release/btfkit
[ -x "$btfkit" ] || { echo "build btfkit first: cargo build --release -p btfkit" >&2; exit 1; }
[ -f "$tree/.tmp_vmlinux.btf" ] || { echo "no $tree/.tmp_vmlinux.btf: run scripts/kernel/build.sh 6.1 gcc PAHOLE" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ln -s "$btfkit" "$work/pahole"
# The ELF as the link step hands it to pahole: without a .BTF yet.
objcopy --remove-section=.BTF "$tree/.tmp_vmlinux.btf" "$work/in.elf"
flags() { # scripts/pahole-flags.sh of 6.1 for version $1 (3 digits)
  local v=$1 f="--btf_gen_floats -j --lang_exclude=rust"
  [ "$v" -ge 125 ] && f="$f --skip_encoding_btf_inconsistent_proto --btf_gen_optimized"
  echo "$f"
}
ver() { "$1" --version | sed -E 's/v([0-9]+)\.([0-9]+)/\1\2/'; }
declare -A cmd=([pahole]=/usr/bin/pahole [btfkit]=$work/pahole)
echo "input: $tree/.tmp_vmlinux.btf ($(stat -c %s "$work/in.elf") bytes without .BTF), $(nproc) cores"
for who in pahole btfkit; do
  echo "$who: $(${cmd[$who]} --version): pahole -J $(flags "$(ver "${cmd[$who]}")")"
done
for r in $(seq "$rounds"); do
  for who in pahole btfkit; do
    cp "$work/in.elf" "$work/$who.elf"
    # shellcheck disable=SC2046
    /usr/bin/time -f "%e %M %U %S" -o "$work/t" env LLVM_OBJCOPY=objcopy "${cmd[$who]}" -J \
      $(flags "$(ver "${cmd[$who]}")") "$work/$who.elf"
    read -r wall rss user sys <"$work/t"
    cpu=$(echo "$user + $sys" | bc)
    echo "round $r $who wall ${wall}s cpu ${cpu}s peak_rss $((rss / 1024))MiB"
    echo "$wall $rss $cpu" >>"$work/$who.times"
  done
done
for who in pahole btfkit; do
  med_wall=$(sort -n "$work/$who.times" | awk '{w[NR]=$1} END {print w[int((NR+1)/2)]}')
  med_rss=$(sort -k2 -n "$work/$who.times" | awk '{m[NR]=$2} END {print int(m[int((NR+1)/2)]/1024)}')
  med_cpu=$(sort -k3 -n "$work/$who.times" | awk '{c[NR]=$3} END {print c[int((NR+1)/2)]}')
  size=$(printf '%d' "0x$(readelf -SW "$work/$who.elf" | sed 's/^ *\[ *[0-9]*\] *//' | awk '$1 == ".BTF" {print $5}')")
  echo "median $who: wall ${med_wall}s cpu ${med_cpu}s peak_rss ${med_rss}MiB .BTF ${size} bytes"
done
