#!/usr/bin/env bash
# `btfkit inspect DUMP 'bt -a'` (the kernel's ORC tables, kallsyms tables and
# BTF in the dump, prototypes from `btfkit encode`'s addr= tags) against drgn
# 0.3 with Debian's DWARF vmlinux (a Python loop over for_each_task printing
# each prog.stack_trace) on the same dump: every task's backtrace. Each tool
# runs RUNS times in alternation under GNU time (wall, peak RSS), after a
# warm-up round (bench/paired.sh); the ratio is the median of per-round ratios.
#
# Usage: bench/bt.sh [VMCORE]   (default: the cached QEMU ELF dump the
# inspect tests make, see crates/testkit/src/dumps.rs; needs drgn and
# GNU time)
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/paired.sh
drgn_dump_setup "$@"
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

export tmp dump vmlinux ours
ours() { "$ours" inspect "$dump" --btf "$tmp/vmlinux.btf" 'bt -a'; }
theirs() { python3 "$tmp/bench_drgn.py" "$dump" "$vmlinux"; }
paired_rounds btfkit drgn
echo "tasks: btfkit $(grep -c '^PID:' "$tmp/ours.out"), drgn $(grep -c '^[0-9]' "$tmp/theirs.out"); frames: btfkit $(grep -c '^ #' "$tmp/ours.out"), drgn $(grep -c '^#' "$tmp/theirs.out")"
