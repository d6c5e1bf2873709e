#!/usr/bin/env bash
# `btfkit inspect DUMP 'bt -a'` (the kernel's ORC tables, kallsyms tables and
# BTF in the dump, prototypes from `btfkit encode`'s addr= tags) against drgn
# 0.3 with Debian's DWARF vmlinux (a Python loop over for_each_task printing
# each prog.stack_trace) on the same dump: every task's backtrace. Each tool
# runs RUNS times in alternation under GNU time (wall, peak RSS), after a
# warm-up round; the ratio is the median of per-round ratios.
#
# Usage: bench/bt.sh [VMCORE]   (default: the cached QEMU ELF dump the
# inspect tests make, see crates/kmem/tests/support/dumps.rs; needs drgn and
# GNU time)
set -euo pipefail
cd "$(dirname "$0")/.."

cache=${BTFKIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/btfkit}
dump=${1:-$(ls "$cache"/dumps/*/vmcore.elf | head -1)}
vmlinux=$cache/vmlinux
runs=${RUNS:-5}
command -v /usr/bin/time >/dev/null || { echo "missing GNU time" >&2; exit 1; }
python3 -c 'import drgn' || { echo "missing drgn (pip install drgn)" >&2; exit 1; }

cargo build --release -q -p btfkit
ours="${CARGO_TARGET_DIR:-target}/release/btfkit"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$ours" encode "$vmlinux" -o "$tmp/vmlinux.btf"

cat > "$tmp/bench_drgn.py" <<'PY'
import sys, drgn
from drgn.helpers.linux.pid import for_each_task
prog = drgn.Program()
prog.set_core_dump(sys.argv[1])
prog.load_debug_info([sys.argv[2]])
for t in for_each_task(prog):
    print(t.pid.value_(), t.comm.string_().decode())
    print(prog.stack_trace(t))
PY

echo "dump: $dump ($(stat -c %s "$dump") bytes)"
echo "drgn: $(python3 -c 'import drgn; print(drgn.__version__)'); btfkit: $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "machine: $(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo

run() { # name, command...
  local name=$1; shift
  /usr/bin/time -q -f "%e %M" -o "$tmp/$name.time" "$@" > "$tmp/$name.out" 2> "$tmp/$name.err" || true
  tail -1 "$tmp/$name.time"
}
ratios=()
printf '%-6s %-18s %-18s %s\n' round "btfkit wall s/KiB" "drgn wall s/KiB" "wall ratio"
for r in $(seq 0 "$runs"); do
  read -r dw dm < <(run drgn python3 "$tmp/bench_drgn.py" "$dump" "$vmlinux")
  read -r ow om < <(run ours "$ours" inspect "$dump" --btf "$tmp/vmlinux.btf" 'bt -a')
  ratio=$(echo "scale=4; $ow / $dw" | bc)
  if [ "$r" -gt 0 ]; then ratios+=("$ratio"); fi
  printf '%-6s %-18s %-18s %s%s\n' "$r" "$ow / $om" "$dw / $dm" "$ratio" "$([ "$r" = 0 ] && echo ' (warm-up)')"
done
median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
echo
echo "btfkit/drgn wall, median of $runs rounds: $median; peak RSS btfkit/drgn: $(echo "scale=3; $om / $dm" | bc)"
echo "tasks: btfkit $(grep -c '^PID:' "$tmp/ours.out"), drgn $(grep -c '^[0-9]' "$tmp/drgn.out"); frames: btfkit $(grep -c '^ #' "$tmp/ours.out"), drgn $(grep -c '^#' "$tmp/drgn.out")"
