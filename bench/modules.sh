#!/usr/bin/env bash
# Module BTF as a kernel build makes it: 50 of Debian's debug modules, each
# encoded by its own process as split BTF over vmlinux, written into the
# module in place, by pahole and by btfkit run as `pahole` (the default
# encode: every function instance), with the same command line:
# `$(PAHOLE) -J $(PAHOLE_FLAGS) --btf_base vmlinux MODULE.ko` (6.1's
# Makefile.modfinal; 7.2's gen-btf.sh writes detached BTF instead, the same
# encode). The peer and PAHOLE_FLAGS are bench/peer.sh's: PEER=1.32 (the
# default) is sid's pahole in the sid chroot with 7.2's flags, PEER=1.24
# the host's with 6.1's.
#
# The modules: all .ko of dbg-modules/ (scripts/fetch-debian-kernel.sh)
# sorted by file size, then the 50 at evenly spaced ranks (the smallest,
# the largest and 48 between): a kernel build's mix, where most modules are
# small and the base's cost weighs, and a few are large.
#
# Each round copies the 50 modules afresh (not timed), then for each module
# runs pahole and btfkit back to back (which goes first alternates), both
# pinned to the same JOBS cores, each under GNU time (CPU, peak RSS) with
# its wall time taken to the microsecond by bench/measure.py (GNU time's %e
# truncates to 10 ms, half of a small module's encode), less the wrappers'
# own time (GNU time and taskset running `true`, measured at the start).
# The machine is shared and drifts in speed; a pair is two runs seconds
# apart, so the ratios are taken per pair: the median of the per-module
# ratios, and per round the ratio of the total wall times; the reported
# total ratio is the median over rounds.
# Targets (issue 31, pahole 1.32): total wall <= 0.3 of pahole's; no
# module's peak RSS above pahole's.
#
# Usage: bench/modules.sh [VMLINUX] [MODULES_DIR] [JOBS]   (RUNS=3 rounds;
# PEER=1.32|1.24; BTFKIT=path: another btfkit binary, e.g. an older build,
# instead of this tree's; KEEP=file: keep the per-run figures)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/peer.sh

cache=${BTFKIT_CACHE:-$HOME/.cache/btfkit}
vmlinux=$(realpath "${1:-$cache/vmlinux}")
mods=$(realpath "${2:-$cache/dbg-modules}")
jobs=${3:-2}
runs=${RUNS:-3}
count=50
if [ -z "${BTFKIT:-}" ]; then
  cargo build --release -q -p btfkit
  BTFKIT=$(realpath "${CARGO_TARGET_DIR:-target}/release/btfkit")
fi
peer_enter bench/modules.sh "$vmlinux" "$mods" "$BTFKIT" -- "$vmlinux" "$mods" "$jobs"

for t in pahole python3 /usr/bin/time taskset; do
  command -v "$t" >/dev/null || { echo "missing $t (apt-get install dwarves python3 time util-linux)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# btfkit takes pahole's command line when it runs as `pahole`.
mkdir "$tmp/bin"
ln -s "$BTFKIT" "$tmp/bin/pahole"

find "$mods" -name '*.ko' -printf '%s %p\n' | sort -n -k1,1 -k2,2 | awk '{ print $2 }' >"$tmp/all"
total=$(wc -l <"$tmp/all")
((total >= count)) || { echo "only $total modules in $mods" >&2; exit 1; }
awk -v n="$total" -v k="$count" 'BEGIN { for (i = 0; i < k; i++) pick[int(i * (n - 1) / (k - 1)) + 1] = 1 }
  pick[NR]' "$tmp/all" >"$tmp/list"

echo "base: $vmlinux; $count of $total modules of $mods ($(xargs du -cb <"$tmp/list" | tail -1 | cut -f1) bytes)"
echo "pahole: $(pahole --version) ${peer_flags[*]}"
echo "btfkit: ${BENCH_REV:-$(git rev-parse --short HEAD 2>/dev/null || echo '?')} ($BTFKIT)"
echo "machine: $(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo

cores="0-$((jobs - 1))"
flags=("${peer_flags[@]}" --btf_base "$vmlinux")
overhead=$(python3 bench/measure.py calibrate taskset -c "$cores")
echo "wall times less $(awk -v o="$overhead" 'BEGIN { printf "%.2f", o * 1000 }') ms per run: GNU time and taskset running true"
echo
# One line per run in $tmp/runs: tool round module wall cpu rss_kib.
run() { # tool round index file
  local exe=pahole
  [[ $1 == ours ]] && exe=$tmp/bin/pahole
  LLVM_OBJCOPY=objcopy python3 bench/measure.py run "$tmp/time" "$overhead" \
    taskset -c "$cores" "$exe" "${flags[@]}" "$4" >/dev/null 2>"$tmp/err" ||
    { echo "$1 failed on $4:"; cat "$tmp/err"; exit 1; } >&2
  awk -v t="$1" -v r="$2" -v m="$3" '{ print t, r, m, $1, $2 + $3, $4 }' "$tmp/time" >>"$tmp/runs"
}
: >"$tmp/runs"
for ((r = 0; r <= runs; r++)); do
  rm -rf "$tmp/p" "$tmp/o" && mkdir "$tmp/p" "$tmp/o"
  i=0
  while read -r ko; do
    i=$((i + 1))
    cp "$ko" "$tmp/p/$i.ko" && cp "$ko" "$tmp/o/$i.ko"
  done <"$tmp/list"
  # Which tool goes first alternates: each pays for the memory the
  # other just freed (a virtual machine may have handed it back to its
  # host) equally often.
  for ((i = 1; i <= count; i++)); do
    if (((i + r) % 2)); then
      run pahole "$r" "$i" "$tmp/p/$i.ko"
      run ours "$r" "$i" "$tmp/o/$i.ko"
    else
      run ours "$r" "$i" "$tmp/o/$i.ko"
      run pahole "$r" "$i" "$tmp/p/$i.ko"
    fi
  done
done
# Round 0 warmed the page cache.
awk '$2 > 0' "$tmp/runs" >"$tmp/timed"

median() { # [printf format]
  sort -n | awk -v f="${1:-%.3f}" '{ v[NR] = $1 } END { printf f, (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
for t in pahole ours; do
  printf '%-7s total wall %6.2f s, total CPU %6.2f s (mean of %d rounds); peak RSS per module: max %d KiB, median %d KiB\n' "$t" \
    "$(awk -v t="$t" -v n="$runs" '$1 == t { s += $4 } END { print s / n }' "$tmp/timed")" \
    "$(awk -v t="$t" -v n="$runs" '$1 == t { s += $5 } END { print s / n }' "$tmp/timed")" "$runs" \
    "$(awk -v t="$t" '$1 == t && $6 > m { m = $6 } END { print m }' "$tmp/timed")" \
    "$(awk -v t="$t" '$1 == t { print $6 }' "$tmp/timed" | median %d)"
done
echo
# Per round: total wall and CPU ratios; per module: wall and RSS ratios.
rounds() { # column
  awk -v c="$1" '$1 == "pahole" { p[$2] += $c } $1 == "ours" { o[$2] += $c }
    END { for (r in o) print o[r] / p[r] }' "$tmp/timed"
}
pairs() { # column
  awk -v c="$1" '$1 == "pahole" { p[$2 " " $3] = $c } $1 == "ours" { o[$2 " " $3] = $c }
    END { for (k in o) if (p[k] > 0) print o[k] / p[k] }' "$tmp/timed"
}
echo "ours/pahole: total wall $(rounds 4 | median) (median of $runs rounds: $(rounds 4 | sort -n | xargs printf '%.3f ')), total CPU $(rounds 5 | median)"
echo "per module (median of $((runs * count)) pairs): wall $(pairs 4 | median), peak RSS $(pairs 6 | median);" \
  "modules whose RSS exceeds pahole's in a pair: $(pairs 6 | awk '$1 > 1' | wc -l) of $((runs * count))"
# Each module's highest peak RSS over the rounds, ours/pahole; the top 3.
echo "highest per-module peak RSS ratios (each tool's maximum over the rounds):"
awk '$1 == "pahole" && $6 > p[$3] { p[$3] = $6 } $1 == "ours" && $6 > o[$3] { o[$3] = $6 }
  END { for (m in o) printf "%.3f %d %d %d\n", o[m] / p[m], m, o[m], p[m] }' "$tmp/timed" | sort -rn | head -3 |
  while read -r ratio m o p; do
    printf '  %s %s: %d KiB vs %d KiB\n' "$ratio" "$(sed -n "${m}p" "$tmp/list" | xargs basename)" "$o" "$p"
  done
echo "(issue 31, vs pahole 1.32: total wall <= 0.3, no module's peak RSS above pahole's)"
if [[ -n ${KEEP:-} ]]; then cp "$tmp/runs" "$KEEP"; fi
