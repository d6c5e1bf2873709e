#!/usr/bin/env bash
# `btfkit encode` against `pahole -J` (1.24), side by side in one run, on the
# same ELF (default: Debian's vmlinux from scripts/fetch-debian-kernel.sh).
# pahole gets the flags Debian's kernel build gives it (-j --btf_gen_floats
# --lang_exclude=rust) and writes detached BTF, as we do. Both are pinned to
# the same JOBS cores (pahole 1.24's -j takes no count: it uses every core).
#
# The tools run in alternation (pahole; ours --funcs pahole; ours with the
# default --funcs exact; ours --vars all --addr-tags all; RUNS times, after
# one warm-up round), each under GNU time: wall, CPU and peak RSS of every
# run. A shared machine drifts in speed over a minute; pairing each of our
# runs with the pahole run just before it cancels the drift, so the ratio
# reported is the median of the per-round ratios (means shown too).
# Targets (2 cores): issue 3, --funcs pahole wall <= 0.33 of pahole's, peak
# RSS <= 0.5; issue 14, the default wall <= 0.25 and peak RSS <= 0.4,
# --vars all --addr-tags all wall <= 0.3.
#
# Usage: [RUNS=5] [BTFKIT=path] bench/encode.sh [ELF] [JOBS]   (needs pahole, GNU time)
set -euo pipefail
cd "$(dirname "$0")/.."

elf=${1:-${BTFKIT_CACHE:-$HOME/.cache/btfkit}/vmlinux}
jobs=${2:-2}
runs=${RUNS:-5}
for t in pahole /usr/bin/time taskset; do
  command -v "$t" >/dev/null || { echo "missing $t (apt-get install dwarves time util-linux)" >&2; exit 1; }
done

# BTFKIT=path measures another build (e.g. the commit before a change).
if [ -z "${BTFKIT:-}" ]; then
  cargo build --release -q -p btfkit
fi
ours=${BTFKIT:-${CARGO_TARGET_DIR:-target}/release/btfkit}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "input: $elf ($(stat -c %s "$elf") bytes)"
echo "pahole: $(pahole --version); btfkit: ${BTFKIT:-$(git rev-parse --short HEAD 2>/dev/null || echo '?')}"
echo "machine: $(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo

cores="0-$((jobs - 1))"
declare -A cmd=(
  [pahole]="pahole -J -j --btf_gen_floats --lang_exclude=rust --btf_encode_detached=$tmp/pahole.btf $elf"
  [ours]="$ours encode $elf -o $tmp/ours.btf -j $jobs --funcs pahole"
  [exact]="$ours encode $elf -o $tmp/exact.btf -j $jobs"
  [all]="$ours encode $elf -o $tmp/all.btf -j $jobs --vars all --addr-tags all"
)
order=(pahole ours exact all)

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

col() { awk -v t="$1" -v c="$2" '$1 == t { s += $c; n++ } END { printf "%.2f", s / n }' "$tmp/runs"; }
maxrss() { awk -v t="$1" '$1 == t && $5 > m { m = $5 } END { print m }' "$tmp/runs"; }
printf '%-24s %9s %9s %14s\n' tool "wall s" "cpu s" "peak RSS KiB"
for t in ours exact all pahole; do
  printf '%-24s %9s %9s %14s\n' "$t" "$(col "$t" 3)" "$(col "$t" 4)" "$(maxrss "$t")"
done
echo
# Per-round ratios ours/pahole (column 3 wall, 4 cpu), and their median.
median_ratio() { # tool column
  awk -v t="$1" -v c="$2" '$1 == "pahole" { p[$2] = $c } $1 == t { o[$2] = $c }
    END { for (r in o) print o[r] / p[r] }' "$tmp/runs" | sort -n |
    awk '{ v[NR] = $1 } END { printf "%.3f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
rss_ratio() { echo "$(maxrss "$1") / $(maxrss pahole)" | bc -l | xargs printf '%.3f'; }
echo "tool/pahole, median of $runs paired rounds:"
printf '  %-8s wall %s, cpu %s, peak RSS %s  %s\n' \
  ours "$(median_ratio ours 3)" "$(median_ratio ours 4)" "$(rss_ratio ours)" "(--funcs pahole; issue 3: wall <= 0.33, RSS <= 0.5)" \
  exact "$(median_ratio exact 3)" "$(median_ratio exact 4)" "$(rss_ratio exact)" "(default; issue 14: wall <= 0.25, RSS <= 0.4)" \
  all "$(median_ratio all 3)" "$(median_ratio all 4)" "$(rss_ratio all)" "(--vars all --addr-tags all; issue 14: wall <= 0.3)"
