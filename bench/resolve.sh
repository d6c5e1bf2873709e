#!/usr/bin/env bash
# Loading kallsyms and resolving 100k addresses, side by side in one run:
#   ours      ksyms: one read, a byte scanner, Table::lookup (binary search)
#   naive     Rust as first written: a String per line, split_whitespace, sort, binary search
#   python    the straightforward script: split lines, sort, bisect
#   blazesym  blazesym 0.2.7's kernel symbolizer on the same kallsyms file
# Every mode reads the same copy of /proc/kallsyms (a regular file, so that
# the kernel's cost of generating /proc/kallsyms, the same for all, is left
# out; `live` below measures it) and the same addresses: N random addresses
# inside functions, fixed seed. Times are CPU time (user + system) of the
# process, median of RUNS runs, because on a shared machine wall time
# measures the neighbours; peak RSS from GNU time. Prints ours/peer ratios.
#
# Usage: bench/resolve.sh            (env: RUNS=7 N=100000 KALLSYMS=/proc/kallsyms)
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${RUNS:-7}
n=${N:-100000}
src=${KALLSYMS:-/proc/kallsyms}
for t in python3 /usr/bin/time; do
  command -v "$t" >/dev/null || { echo "missing $t (apt-get install python3 time)" >&2; exit 1; }
done

target=${KSYMS_BENCH_TARGET:-${CARGO_TARGET_DIR:-target}/ksyms-bench}
CARGO_TARGET_DIR=$target cargo build --release -q --manifest-path bench/ksyms-bench/Cargo.toml
bench="$target/release/ksyms-bench"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$src" "$tmp/kallsyms"
if [ "$(head -c 16 "$tmp/kallsyms")" = "0000000000000000" ]; then
  echo "$src: addresses are hidden (kptr_restrict/perf_event_paranoid): run as root" >&2
  exit 1
fi
"$bench" gen "$tmp/kallsyms" "$n" "$tmp/addrs"

cat > "$tmp/naive.py" <<'PY'
import bisect, sys, time
def cpu_ms(): return time.process_time() * 1e3
kallsyms, addrs = sys.argv[1], [int(l, 16) for l in open(sys.argv[2])]
t0 = cpu_ms()
syms = []
for line in open(kallsyms):
    f = line.split()
    syms.append((int(f[0], 16), f[2]))
syms.sort(key=lambda s: s[0])
starts = [s[0] for s in syms]
t1 = cpu_ms()
n = total = 0
for a in addrs:
    i = bisect.bisect_right(starts, a) - 1
    if i >= 0:
        n += 1
        total += a - starts[i]
        len(syms[i][1])
t2 = cpu_ms()
print(f"python {t1 - t0:.2f} {t2 - t1:.2f} {n} {total}")
PY

modes="ours naive python blazesym"
: > "$tmp/results"
for run in $(seq "$runs"); do
  for mode in $modes; do
    if [ "$mode" = python ]; then
      cmd=(python3 "$tmp/naive.py" "$tmp/kallsyms" "$tmp/addrs")
    else
      cmd=("$bench" "$mode" "$tmp/kallsyms" "$tmp/addrs")
    fi
    line=$(/usr/bin/time -f "rss %M" -o "$tmp/rss" "${cmd[@]}")
    echo "$line $(awk '/^rss/ {print $2}' "$tmp/rss")" >> "$tmp/results"
  done
done

# Columns: mode load_ms resolve_ms resolved offset_sum rss_kb.
# The offset sums must agree: each mode found the same symbol starts.
sums=$(awk '{print $5}' "$tmp/results" | sort -u | wc -l)
[ "$sums" = 1 ] || { echo "modes disagree on offsets:" >&2; sort -u -k1,1 -k5,5 "$tmp/results" >&2; exit 1; }

median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
for mode in $modes; do
  col() { awk -v m="$mode" -v c="$1" '$1==m {print $c}' "$tmp/results" | median; }
  echo "$mode $(col 2) $(col 3) $(col 6)" >> "$tmp/medians"
done
echo "kallsyms: $(wc -l < "$tmp/kallsyms") lines from $src; $n addresses; median of $runs runs (CPU ms)"
awk '
  { mode[NR] = $1; load[NR] = $2; res[NR] = $3; rss[NR] = $4 }
  END {
    printf "%-9s %9s %10s %9s %9s\n", "mode", "load_ms", "resolve_ms", "total_ms", "rss_MB"
    for (i = 1; i <= NR; i++)
      printf "%-9s %9.1f %10.1f %9.1f %9.1f\n", mode[i], load[i], res[i], load[i] + res[i], rss[i] / 1024
    printf "\nratios ours/peer (below 1: ours is faster or smaller)\n"
    printf "%-9s %9s %10s %9s %9s\n", "peer", "load", "resolve", "total", "rss"
    for (i = 2; i <= NR; i++)
      printf "%-9s %9.2f %10.2f %9.2f %9.2f\n", mode[i], load[1] / load[i], res[1] / res[i],
        (load[1] + res[1]) / (load[i] + res[i]), rss[1] / rss[i]
  }' "$tmp/medians"
echo
echo "live: ours reading $src itself (the kernel generates it on each read)"
"$bench" ours "$src" "$tmp/addrs" | awk '{printf "ours      load %.1f ms CPU (kernel time included), resolve %.1f ms\n", $2, $3}'
