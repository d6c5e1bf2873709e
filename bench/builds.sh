#!/usr/bin/env bash
# Two btfkit builds against each other on one encode: how a change moves
# the encoder's own time, which the pahole ratios of encode.sh and
# modules.sh hide when the host's speed drifts (pahole's time moves with it
# by as much as a round of changes). The builds run in alternating pairs,
# which goes first alternating too, both pinned to the same cores, each
# under GNU time; printed: the medians of wall and CPU (user + system) and
# of the per-pair ratios NEW/OLD, and the peak RSS of each.
#
# Usage: [PAIRS=10] [JOBS=2] bench/builds.sh OLD NEW [ELF] [-- encode options]
#   OLD, NEW: btfkit binaries (e.g. a build of the commit before a change
#   and target/release/btfkit); ELF: default Debian's vmlinux from
#   scripts/fetch-debian-kernel.sh. Example:
#   bench/builds.sh /tmp/btfkit-old target/release/btfkit -- --vars all --addr-tags all
set -euo pipefail
cd "$(dirname "$0")/.."

[ $# -ge 2 ] || { sed -n '2,15p' "$0" >&2; exit 2; }
old=$1 new=$2
shift 2
elf=${BTFKIT_CACHE:-$HOME/.cache/btfkit}/vmlinux
if [ $# -gt 0 ] && [ "$1" != -- ]; then elf=$1; shift; fi
[ "${1:-}" = -- ] && shift
pairs=${PAIRS:-10}
jobs=${JOBS:-2}
for t in /usr/bin/time taskset; do
  command -v "$t" >/dev/null || { echo "missing $t (apt-get install time util-linux)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "input: $elf; options: -j $jobs $*"
echo "old: $old; new: $new; machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

# One line per run in $tmp/runs: build pair wall cpu rss_kib.
opts=("$@")
run() { # build pair
  local bin=$old
  [ "$1" = new ] && bin=$new
  /usr/bin/time -f "%e %U %S %M" -o "$tmp/time" taskset -c "0-$((jobs - 1))" \
    "$bin" encode "$elf" -o "$tmp/out.btf" -j "$jobs" "${opts[@]}" >/dev/null 2>"$tmp/err" ||
    { echo "$1 failed:"; cat "$tmp/err"; exit 1; } >&2
  awk -v b="$1" -v p="$2" '{ print b, p, $1, $2 + $3, $4 }' "$tmp/time" >>"$tmp/runs"
}
run old 0 # warm-up: the input in the page cache
: >"$tmp/runs"
for ((p = 1; p <= pairs; p++)); do
  if ((p % 2)); then order=(old new); else order=(new old); fi
  for b in "${order[@]}"; do run "$b" "$p"; done
done

median() { sort -n | awk '{ v[NR] = $1 } END { printf "%.3f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
of() { awk -v b="$1" -v c="$2" '$1 == b { print $c }' "$tmp/runs" | median; }
ratio() { # column
  awk -v c="$1" '$1 == "old" { o[$2] = $c } $1 == "new" { n[$2] = $c }
    END { for (p in n) print n[p] / o[p] }' "$tmp/runs" | median
}
maxrss() { awk -v b="$1" '$1 == b && $5 > m { m = $5 } END { print m }' "$tmp/runs"; }
echo
printf '%-4s %9s %9s %14s\n' "" "wall s" "cpu s" "peak RSS KiB"
for b in old new; do printf '%-4s %9s %9s %14s\n' "$b" "$(of "$b" 3)" "$(of "$b" 4)" "$(maxrss "$b")"; done
echo
echo "new/old, median of $pairs pairs: wall $(ratio 3), cpu $(ratio 4)"
