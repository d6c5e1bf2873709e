# Paired timing for the bench scripts that compare btfkit with another tool:
# source it (from the repository's root), call `drgn_dump_setup "$@"`, define `ours` and `theirs` (each runs its tool once, stdout and
# stdin as the script sets them up), set `tmp` and `runs`, then call
# `paired_rounds`. Rounds alternate the two under GNU time (wall s, peak
# KiB) after a warm-up round and print the median of per-round wall ratios
# (ours/theirs); their last outputs stay in $tmp/ours.out and $tmp/theirs.out.

timed() { # name: runs the function of that name once under GNU time
  /usr/bin/time -q -f "%e %M" -o "$tmp/$1.time" bash -c "$(declare -f "$1"); $1" > "$tmp/$1.out" 2> "$tmp/$1.err" || true
  tail -1 "$tmp/$1.time"
}

paired_rounds() { # label of ours, label of theirs
  local ratios=() r ow om tw tm ratio median
  printf '%-6s %-18s %-18s %s\n' round "$1 wall s/KiB" "$2 wall s/KiB" "wall ratio"
  for r in $(seq 0 "$runs"); do
    read -r tw tm < <(timed theirs)
    read -r ow om < <(timed ours)
    ratio=$(echo "scale=4; $ow / $tw" | bc)
    if [ "$r" -gt 0 ]; then ratios+=("$ratio"); fi
    printf '%-6s %-18s %-18s %s%s\n' "$r" "$ow / $om" "$tw / $tm" "$ratio" "$([ "$r" = 0 ] && echo ' (warm-up)')"
  done
  median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  echo
  echo "$1/$2 wall, median of $runs rounds: $median; peak RSS $1/$2: $(echo "scale=3; $om / $tm" | bc)"
}

# The setup of a comparison with drgn on a dump: dump ($1, default the
# cached QEMU ELF dump the inspect tests make), vmlinux (Debian's DWARF),
# runs ($RUNS, default 5), ours (btfkit, built), tmp (removed at exit).
drgn_dump_setup() {
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
}
