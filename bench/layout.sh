#!/usr/bin/env bash
# `btfkit layout` against pahole 1.24's layout view, side by side in one run:
# every struct and union of a BTF (default: the running kernel's) and, if
# Debian's debug vmlinux is cached, of its DWARF. Wall time with hyperfine
# (release build, warm cache, output to /dev/null), peak RSS with
# /usr/bin/time -v. A case is timed only if the outputs are byte-identical.
#
# Usage: bench/layout.sh [BTF_FILE]     (needs pahole, hyperfine, GNU time)
set -euo pipefail
cd "$(dirname "$0")/.."

btf=${1:-/sys/kernel/btf/vmlinux}
vmlinux=${VMLINUX:-${XDG_CACHE_HOME:-$HOME/.cache}/btfkit/vmlinux}
runs=${RUNS:-10}
for t in pahole hyperfine /usr/bin/time; do
  command -v "$t" >/dev/null || { echo "missing $t (apt-get install dwarves hyperfine time)" >&2; exit 1; }
done

cargo build --release -q -p btfkit
ours="${CARGO_TARGET_DIR:-target}/release/btfkit"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "pahole: $(pahole --version); btfkit: $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "machine: $(nproc) cores, $(uname -r), load $(cut -d' ' -f1 /proc/loadavg)"
echo

mean() { awk -F, -v cmd="$2" 'NR > 1 && $1 == cmd { print $2 }' "$1"; }
cpu() { awk -F, -v cmd="$2" 'NR > 1 && $1 == cmd { print $5 + $6 }' "$1"; }
rss() { /usr/bin/time -v "$@" 2>&1 >/dev/null | awk -F': ' '/Maximum resident/ { print $2 }'; }

cases=("btf $btf")
[ -f "$vmlinux" ] && cases+=("dwarf $vmlinux")
printf '%-6s %-34s %10s %11s %8s %10s %13s %15s\n' from input "ours ms" "pahole ms" ratio "cpu ratio" "ours RSS KiB" "pahole RSS KiB"
for c in "${cases[@]}"; do
  set -- $c
  fmt=$1 file=$2
  a="$ours layout -F $fmt $file"
  b="pahole -F $fmt $file"
  $a >"$tmp/ours" 2>/dev/null
  $b >"$tmp/pahole" 2>/dev/null
  if ! cmp -s "$tmp/ours" "$tmp/pahole"; then
    echo "$fmt $file: output differs from pahole's, not timed"
    continue
  fi
  r=$runs
  [ "$fmt" = dwarf ] && r=$(( runs < 3 ? runs : 3 ))
  hyperfine -N -i -w 1 -r "$r" --output=null --export-csv "$tmp/$fmt.csv" "$a" "$b" >/dev/null 2>&1
  ma=$(mean "$tmp/$fmt.csv" "$a") mb=$(mean "$tmp/$fmt.csv" "$b")
  ca=$(cpu "$tmp/$fmt.csv" "$a") cb=$(cpu "$tmp/$fmt.csv" "$b")
  printf '%-6s %-34s %10.1f %11.1f %8.3f %10.3f %13s %15s\n' "$fmt" "$file" \
    "$(echo "$ma * 1000" | bc -l)" "$(echo "$mb * 1000" | bc -l)" "$(echo "$ma / $mb" | bc -l)" \
    "$(echo "$ca / $cb" | bc -l)" "$(rss $a)" "$(rss $b)"
done
