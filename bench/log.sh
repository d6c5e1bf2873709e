#!/usr/bin/env bash
# `btfkit inspect DUMP log` (the printk ring read with the dump's own BTF
# and kallsyms tables) against drgn 0.3's get_dmesg() (Debian's DWARF
# vmlinux) on the same dump: open it and print the whole kernel log. Each
# tool runs RUNS times in alternation under GNU time (wall, peak RSS); the
# ratio is the median of per-round ratios; the outputs must be equal.
#
# Usage: bench/log.sh [VMCORE]   (default: the cached QEMU ELF dump the
# inspect tests make, see crates/testkit/src/dumps.rs; needs drgn
# and GNU time; the rounds are bench/paired.sh's)
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/paired.sh
drgn_dump_setup "$@"

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

export tmp dump vmlinux ours
ours() { "$ours" inspect "$dump" log; }
theirs() { python3 "$tmp/bench_drgn.py" "$dump" "$vmlinux"; }
paired_rounds btfkit drgn
if cmp -s "$tmp/ours.out" "$tmp/theirs.out"; then
  echo "outputs equal: $(wc -l < "$tmp/ours.out") lines"
else
  echo "outputs differ" >&2
  exit 1
fi
