# Paired timing for the bench scripts that compare btfkit with another tool:
# source it, define `ours` and `theirs` (each runs its tool once, stdout and
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
