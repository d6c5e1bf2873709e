#!/usr/bin/env bash
# btfkit as pahole against pahole -J, side by side in one run, on the same
# ELF (default: Debian's vmlinux from scripts/fetch-debian-kernel.sh),
# both writing detached BTF with the peer's flags (bench/peer.sh: PEER=1.32,
# the default, is sid's pahole in the sid chroot with Linux 7.2's flags;
# PEER=1.24 the host's with 6.1's). Both are pinned to the same JOBS cores;
# `-j` without a count makes each use all of them.
#
# The tools run in alternation (pahole; ours with the default --funcs
# exact; ours --funcs pahole; ours --vars all --addr-tags all; RUNS times,
# after one warm-up round), each under GNU time: wall, CPU and peak RSS of
# every run. A shared machine drifts in speed over a minute; pairing each
# of our runs with the pahole run just before it cancels the drift, so the
# ratio reported is the median of the per-round ratios (means shown too).
# Targets (issue 31, pahole 1.32): the default wall <= 0.15 of pahole's,
# peak RSS <= 0.25.
#
# Usage: [RUNS=5] [PEER=1.32|1.24] [BTFKIT=path] bench/encode.sh [ELF] [JOBS]
#   (needs GNU time; PEER=1.24 needs the host's dwarves, PEER=1.32 root)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/peer.sh

elf=$(realpath "${1:-${BTFKIT_CACHE:-$HOME/.cache/btfkit}/vmlinux}")
jobs=${2:-2}
runs=${RUNS:-5}
# BTFKIT=path measures another build (e.g. the commit before a change).
if [ -z "${BTFKIT:-}" ]; then
  cargo build --release -q -p btfkit
  BTFKIT=$(realpath "${CARGO_TARGET_DIR:-target}/release/btfkit")
fi
peer_enter bench/encode.sh "$elf" "$BTFKIT" -- "$elf" "$jobs"

ours=$BTFKIT
for t in pahole /usr/bin/time taskset; do
  command -v "$t" >/dev/null || { echo "missing $t (apt-get install dwarves time util-linux)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "input: $elf ($(stat -c %s "$elf") bytes)"
echo "pahole: $(pahole --version) ${peer_flags[*]}"
echo "btfkit: ${BENCH_REV:-$(git rev-parse --short HEAD 2>/dev/null || echo '?')} ($ours)"
echo "machine: $(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo

cores="0-$((jobs - 1))"
declare -A cmd=(
  [pahole]="pahole ${peer_flags[*]} --btf_encode_detached=$tmp/pahole.btf $elf"
  [exact]="$ours pahole ${peer_flags[*]} --btf_encode_detached=$tmp/exact.btf $elf"
  [ours]="$ours pahole ${peer_flags[*]} --funcs pahole --btf_encode_detached=$tmp/ours.btf $elf"
  [all]="$ours pahole ${peer_flags[*]} --vars all --addr-tags all --btf_encode_detached=$tmp/all.btf $elf"
)
order=(pahole exact ours all)

# One line per run in $tmp/runs: tool round wall cpu rss_kib.
run() { # tool round
  /usr/bin/time -f "%e %U %S %M" -o "$tmp/time" taskset -c "$cores" ${cmd[$1]} >/dev/null 2>"$tmp/err" ||
    { echo "$1 failed:"; cat "$tmp/err"; exit 1; } >&2
  awk -v t="$1" -v r="$2" '{ print t, r, $1, $2 + $3, $4 }' "$tmp/time" >>"$tmp/runs"
}
for t in "${order[@]}"; do run "$t" 0; done
: >"$tmp/runs"
for ((r = 1; r <= runs; r++)); do
  for t in "${order[@]}"; do run "$t" "$r"; done
done

echo "per round: wall s (wall ratio to pahole's), peak RSS KiB"
printf '%-6s' round
for t in "${order[@]}"; do printf ' %-24s' "$t"; done
echo
for ((r = 1; r <= runs; r++)); do
  printf '%-6s' "$r"
  for t in "${order[@]}"; do
    awk -v t="$t" -v r="$r" '$1 == "pahole" && $2 == r { p = $3 } $1 == t && $2 == r { w = $3; m = $5 }
      END { printf " %-24s", sprintf("%.2f (%.3f) %d", w, w / p, m) }' "$tmp/runs"
  done
  echo
done
echo

col() { awk -v t="$1" -v c="$2" '$1 == t { s += $c; n++ } END { printf "%.2f", s / n }' "$tmp/runs"; }
maxrss() { awk -v t="$1" '$1 == t && $5 > m { m = $5 } END { print m }' "$tmp/runs"; }
printf '%-24s %9s %9s %14s\n' tool "wall s" "cpu s" "peak RSS KiB"
for t in exact ours all pahole; do
  printf '%-24s %9s %9s %14s\n' "$t" "$(col "$t" 3)" "$(col "$t" 4)" "$(maxrss "$t")"
done
echo
# Per-round ratios ours/pahole (column 3 wall, 4 cpu), and their median.
median_ratio() { # tool column
  awk -v t="$1" -v c="$2" '$1 == "pahole" { p[$2] = $c } $1 == t { o[$2] = $c }
    END { for (r in o) print o[r] / p[r] }' "$tmp/runs" | sort -n |
    awk '{ v[NR] = $1 } END { printf "%.3f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
rss_ratio() { awk -v o="$(maxrss "$1")" -v p="$(maxrss pahole)" 'BEGIN { printf "%.3f", o / p }'; }
echo "tool/pahole $peer, median of $runs paired rounds:"
printf '  %-6s wall %s, cpu %s, peak RSS %s  %s\n' \
  exact "$(median_ratio exact 3)" "$(median_ratio exact 4)" "$(rss_ratio exact)" "(default; issue 31 vs 1.32: wall <= 0.15, RSS <= 0.25)" \
  ours "$(median_ratio ours 3)" "$(median_ratio ours 4)" "$(rss_ratio ours)" "(--funcs pahole)" \
  all "$(median_ratio all 3)" "$(median_ratio all 4)" "$(rss_ratio all)" "(--vars all --addr-tags all)"
