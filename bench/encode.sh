#!/usr/bin/env bash
# `btfkit encode` against `pahole -J` (1.24), side by side in one run, on the
# same ELF (default: Debian's vmlinux from scripts/fetch-debian-kernel.sh):
# wall and CPU time with hyperfine, peak RSS with /usr/bin/time -v. pahole
# gets the flags Debian's kernel build gives it (-j --btf_gen_floats
# --lang_exclude=rust) and writes detached BTF, as we do.
# Targets (issue 3, 2 cores): ours/pahole wall <= 0.33, peak RSS <= 0.5.
#
# Usage: bench/encode.sh [ELF] [JOBS]     (needs pahole, hyperfine, GNU time)
set -euo pipefail
cd "$(dirname "$0")/.."

elf=${1:-${BTFKIT_CACHE:-$HOME/.cache/btfkit}/vmlinux}
jobs=${2:-2}
runs=${RUNS:-5}
for t in pahole hyperfine /usr/bin/time; do
  command -v "$t" >/dev/null || { echo "missing $t (apt-get install dwarves hyperfine time)" >&2; exit 1; }
done

cargo build --release -q -p btfkit
ours="${CARGO_TARGET_DIR:-target}/release/btfkit"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "input: $elf ($(stat -c %s "$elf") bytes)"
echo "pahole: $(pahole --version); btfkit: $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "machine: $(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo

# pahole -j takes no thread count in 1.24: it uses every core; taskset
# gives both tools the same $jobs cores.
cores="0-$((jobs - 1))"
a="taskset -c $cores $ours encode $elf -o $tmp/ours.btf -j $jobs --funcs pahole"
b="taskset -c $cores pahole -J -j --btf_gen_floats --lang_exclude=rust --btf_encode_detached=$tmp/pahole.btf $elf"
c="taskset -c $cores $ours encode $elf -o $tmp/exact.btf -j $jobs"

hyperfine -N -w 1 -r "$runs" --export-csv "$tmp/t.csv" "$a" "$b" "$c" >/dev/null 2>&1
# hyperfine's CSV: command,mean,stddev,median,user,system,min,max (seconds).
mean() { awk -F, -v cmd="$1" 'NR > 1 && $1 == cmd { print $2 }' "$tmp/t.csv"; }
cpu() { awk -F, -v cmd="$1" 'NR > 1 && $1 == cmd { print $5 + $6 }' "$tmp/t.csv"; }
rss() { /usr/bin/time -v "$@" 2>&1 >/dev/null | awk -F': ' '/Maximum resident/ { print $2 }'; }

ra=$(rss $a); rb=$(rss $b); rc=$(rss $c)
printf '%-28s %9s %9s %12s\n' tool "wall s" "cpu s" "peak RSS KiB"
printf '%-28s %9.2f %9.2f %12s\n' "btfkit --funcs pahole" "$(mean "$a")" "$(cpu "$a")" "$ra"
printf '%-28s %9.2f %9.2f %12s\n' "btfkit (--funcs exact)" "$(mean "$c")" "$(cpu "$c")" "$rc"
printf '%-28s %9.2f %9.2f %12s\n' "pahole -J -j" "$(mean "$b")" "$(cpu "$b")" "$rb"
echo
printf 'ours/pahole: wall %.3f, cpu %.3f, RSS %.3f (targets: wall <= 0.33, RSS <= 0.5)\n' \
  "$(echo "$(mean "$a") / $(mean "$b")" | bc -l)" \
  "$(echo "$(cpu "$a") / $(cpu "$b")" | bc -l)" \
  "$(echo "$ra / $rb" | bc -l)"
