#!/usr/bin/env bash
# `btfkit inspect DUMP log` (the printk ring read with the dump's own BTF
# and kallsyms tables) against drgn 0.3's get_dmesg() (Debian's DWARF
# vmlinux) on the same dump: open it and print the whole kernel log. Each
# tool runs RUNS times in alternation under GNU time (wall, peak RSS); the
# ratio is the median of per-round ratios; the outputs must be equal.
#
# Usage: bench/log.sh [VMCORE]   (default: the cached QEMU ELF dump the
# inspect tests make, see crates/kmem/tests/support/dumps.rs; needs drgn
# and GNU time)
set -euo pipefail
cd "$(dirname "$0")/.."

cache=${BTFKIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/btfkit}
dump=${1:-$(ls "$cache"/dumps/*/vmcore.elf | head -1)}
vmlinux=$cache/vmlinux
runs=${RUNS:-5}
for t in /usr/bin/time python3 bc; do
  command -v "$t" >/dev/null || { echo "missing $t" >&2; exit 1; }
done
python3 -c 'import drgn' || { echo "missing drgn (pip install drgn)" >&2; exit 1; }

cargo build --release -q -p btfkit
ours="${CARGO_TARGET_DIR:-target}/release/btfkit"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat > "$tmp/bench_drgn.py" <<'PY'
import sys, drgn
from drgn.helpers.linux.printk import get_dmesg
prog = drgn.Program()
prog.set_core_dump(sys.argv[1])
prog.load_debug_info([sys.argv[2]])
sys.stdout.buffer.write(get_dmesg(prog))
PY

echo "dump: $dump ($(stat -c %s "$dump") bytes)"
echo "drgn: $(python3 -c 'import drgn; print(drgn.__version__)'); btfkit: $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "machine: $(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo

run() { # name, command...
  local name=$1; shift
  /usr/bin/time -q -f "%e %M" -o "$tmp/$name.time" "$@" > "$tmp/$name.out" 2> "$tmp/$name.err"
  tail -1 "$tmp/$name.time"
}
ratios=()
printf '%-6s %-18s %-18s %s\n' round "btfkit wall s/KiB" "drgn wall s/KiB" "wall ratio"
for r in $(seq 0 "$runs"); do
  read -r dw dm < <(run drgn python3 "$tmp/bench_drgn.py" "$dump" "$vmlinux")
  read -r ow om < <(run ours "$ours" inspect "$dump" log)
  ratio=$(echo "scale=4; $ow / $dw" | bc)
  if [ "$r" -gt 0 ]; then ratios+=("$ratio"); fi
  printf '%-6s %-18s %-18s %s%s\n' "$r" "$ow / $om" "$dw / $dm" "$ratio" "$([ "$r" = 0 ] && echo ' (warm-up)')"
done
median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
echo
echo "btfkit/drgn wall, median of $runs rounds: $median; peak RSS btfkit/drgn: $(echo "scale=3; $om / $dm" | bc)"
if cmp -s "$tmp/ours.out" "$tmp/drgn.out"; then
  echo "outputs equal: $(wc -l < "$tmp/ours.out") lines"
else
  echo "outputs differ" >&2
  exit 1
fi
