#!/usr/bin/env bash
# `btfkit dump` against `bpftool btf dump file`, side by side in one run:
# raw and C formats on the same BTF (default: the running kernel's), wall
# time with hyperfine (release build, warm cache) and peak RSS with
# /usr/bin/time -v. Prints ours/bpftool ratios; targets: raw <= 0.25, C <= 0.5.
#
# Usage: bench/dump.sh [BTF_FILE]     (needs bpftool, hyperfine, GNU time)
# Output goes to /dev/null ("null") and through a pipe to a reader ("pipe"):
# the first is the tools' own work, the second adds what a consumer sees.
set -euo pipefail
cd "$(dirname "$0")/.."

file=${1:-/sys/kernel/btf/vmlinux}
runs=${RUNS:-20}
for t in bpftool hyperfine /usr/bin/time; do
  command -v "$t" >/dev/null || { echo "missing $t (apt-get install bpftool hyperfine time)" >&2; exit 1; }
done

cargo build --release -q -p btfkit
ours="${CARGO_TARGET_DIR:-target}/release/btfkit"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "input: $file ($(stat -c %s "$file") bytes)"
echo "bpftool: $(bpftool version | head -1); btfkit: $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "machine: $(nproc) cores, $(uname -r)"
echo

formats=()
for fmt in raw c; do
  bpftool btf dump file "$file" format "$fmt" >"$tmp/bpftool.$fmt"
  "$ours" dump "$file" --format "$fmt" >"$tmp/ours.$fmt" 2>"$tmp/ours.$fmt.err" || true
  if cmp -s "$tmp/bpftool.$fmt" "$tmp/ours.$fmt"; then
    formats+=("$fmt")
  else
    echo "$fmt: output differs from bpftool's, not timed ($(head -c 200 "$tmp/ours.$fmt.err"))"
  fi
done

# hyperfine's CSV: command,mean,stddev,median,user,system,min,max (seconds).
mean() { awk -F, -v cmd="$2" 'NR > 1 && $1 == cmd { print $2 }' "$1"; }
cpu() { awk -F, -v cmd="$2" 'NR > 1 && $1 == cmd { print $5 + $6 }' "$1"; }
rss() { /usr/bin/time -v "$@" 2>&1 >/dev/null | awk -F': ' '/Maximum resident/ { print $2 }'; }

# "cpu ratio" (user+system) is steadier than wall time on a busy machine.
printf '%-6s %-5s %10s %12s %8s %10s %14s %16s\n' format out "ours ms" "bpftool ms" ratio "cpu ratio" "ours RSS KiB" "bpftool RSS KiB"
for fmt in "${formats[@]}"; do
  a="$ours dump $file --format $fmt"
  b="bpftool btf dump file $file format $fmt"
  for out in null pipe; do
    hyperfine -N -w 3 -r "$runs" --output="$out" --export-csv "$tmp/$fmt.$out.csv" "$a" "$b" >/dev/null 2>&1
    ma=$(mean "$tmp/$fmt.$out.csv" "$a")
    mb=$(mean "$tmp/$fmt.$out.csv" "$b")
    ca=$(cpu "$tmp/$fmt.$out.csv" "$a")
    cb=$(cpu "$tmp/$fmt.$out.csv" "$b")
    printf '%-6s %-5s %10.1f %12.1f %8.3f %10.3f %14s %16s\n' "$fmt" "$out" \
      "$(echo "$ma * 1000" | bc -l)" "$(echo "$mb * 1000" | bc -l)" "$(echo "$ma / $mb" | bc -l)" \
      "$(echo "$ca / $cb" | bc -l)" "$(rss $a)" "$(rss $b)"
  done
done
