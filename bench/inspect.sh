#!/usr/bin/env bash
# `btfkit inspect` (BTF + the kallsyms tables in the dump) against drgn 0.3
# (Debian's DWARF vmlinux) on the same dump: open it and print 1,000
# expressions (global variables of vmlinux, one name each, printed in
# drgn's text form by both). Each tool runs RUNS times in alternation under
# GNU time (wall, peak RSS); the ratio is the median of per-round ratios.
# Target (issue 12): btfkit/drgn wall <= 0.1.
#
# Usage: bench/inspect.sh [VMCORE]   (default: the cached QEMU ELF dump the
# inspect tests make, see crates/testkit/src/dumps.rs; needs drgn,
# GNU time, bpftool)
set -euo pipefail
cd "$(dirname "$0")/.."

. bench/paired.sh
drgn_dump_setup "$@"
command -v bpftool >/dev/null || { echo "missing bpftool" >&2; exit 1; }
[ -n "${KEEP:-}" ] && trap - EXIT && echo "work dir: $tmp"
"$ours" encode "$vmlinux" --vars all -o "$tmp/vars.btf"

# 1,000 global variables of .data and .bss whose names kallsyms has once.
awk '{print $3}' "$cache/System.map" | sort | uniq -u > "$tmp/unique"
bpftool btf dump file "$tmp/vars.btf" |
  awk "/VAR '.*' type_id=.*linkage=global/ { gsub(\"'\", \"\", \$3); print \$3 }" |
  sort -u | comm -12 - "$tmp/unique" > "$tmp/all-names"
head -1000 "$tmp/all-names" > "$tmp/names"
n=$(wc -l < "$tmp/names")

cat > "$tmp/bench_drgn.py" <<'PY'
import sys, drgn
prog = drgn.Program()
prog.set_core_dump(sys.argv[1])
prog.load_debug_info([sys.argv[2]])
for name in sys.stdin:
    try:
        print(prog[name.strip()])
    except Exception as e:
        print("error:", e, file=sys.stderr)
PY

echo "dump: $dump ($(stat -c %s "$dump") bytes); $n expressions"
echo "drgn: $(python3 -c 'import drgn; print(drgn.__version__)'); btfkit: $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "machine: $(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo

export tmp dump vmlinux ours
ours() { "$ours" inspect "$dump" --btf "$tmp/vars.btf" < "$tmp/names"; }
theirs() { python3 "$tmp/bench_drgn.py" "$dump" "$vmlinux" < "$tmp/names"; }
paired_rounds btfkit drgn
echo "lines printed: btfkit $(wc -l < "$tmp/ours.out") (errors $(wc -l < "$tmp/ours.err")), drgn $(wc -l < "$tmp/theirs.out") (errors $(wc -l < "$tmp/theirs.err"))"
