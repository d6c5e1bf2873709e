#!/usr/bin/env bash
# Module BTF over a vmlinux base that another encoder made (issue 35): every
# 5th module of Debian 6.1's fs/ and net/ (60 by default) encoded over BASE by
# btfkit and by a pahole, each split BTF's size and the base types it
# re-emits (`btfkit check --base`).
#
#   bench/split-base.sh 1.24 [N]   base: Debian's vmlinux (its .BTF is pahole
#                                  1.24's); peer: Debian's pahole 1.24, with
#                                  Debian 6.1's module flags
#   bench/split-base.sh 1.32 [N]   base: Debian's vmlinux encoded by sid's
#                                  pahole 1.32 with 7.2's flags; peer: pahole
#                                  1.32 with 7.2's flags (scripts/sid-chroot.sh)
#
# One line per module, then the totals and the ratio ours / pahole in bytes.
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:?usage: bench/split-base.sh 1.24|1.32 [N]}
count=${2:-60}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/btfkit
btfkit=$PWD/target/release/btfkit
[ -x "$btfkit" ] || cargo build --release -q -p btfkit
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mapfile -t modules < <(find "$cache/dbg-modules/kernel/fs" "$cache/dbg-modules/kernel/net" -name '*.ko' |
  sort | awk 'NR % 5 == 0' | head -n "$count")
for ko in "${modules[@]}"; do cp "$ko" "$work/"; done

case $which in
  1.24)
    flags=(--btf_gen_floats)
    base=$cache/vmlinux
    pahole() { command pahole "$@"; }
    ;;
  1.32)
    flags=(--btf_features=encode_force,var,float,enum64,decl_tag,type_tag,optimized_func,consistent_func,decl_tag_kfuncs,attributes,layout)
    cp "$cache/vmlinux" "$work/vmlinux"
    base=$work/vmlinux.btf
    pahole() { bash scripts/sid-chroot.sh run --bind "$work" -- pahole "$@"; }
    pahole -J -j "${flags[@]}" --lang_exclude=rust --btf_encode_detached "$base" "$work/vmlinux" >/dev/null
    rm "$work/vmlinux"
    ;;
  *) echo "bench/split-base.sh: 1.24 or 1.32, not $which" >&2; exit 2 ;;
esac

# The number of base types `check --base` finds re-emitted (it exits 1 then).
dups() {
  local report n
  report=$("$btfkit" check --base "$base" "$1" 2>&1 || true)
  n=$(sed -n 's/.*duplicates \([0-9]*\) base types.*/\1/p' <<<"$report")
  echo "${n:-0}"
}
ours_total=0 theirs_total=0 ours_dups=0 theirs_dups=0
printf '%-24s %10s %10s %6s %10s %10s\n' module btfkit pahole ratio re-emitted "(pahole)"
for ko in "${modules[@]}"; do
  m=$(basename "$ko" .ko)
  "$btfkit" pahole -J -j1 "${flags[@]}" --lang_exclude=rust --btf_base "$base" \
    --btf_encode_detached "$work/$m.ours" "$work/$m.ko"
  pahole -J -j1 "${flags[@]}" --lang_exclude=rust --btf_base "$base" \
    --btf_encode_detached "$work/$m.theirs" "$work/$m.ko" >/dev/null
  o=$(stat -c %s "$work/$m.ours") t=$(stat -c %s "$work/$m.theirs")
  od=$(dups "$work/$m.ours") td=$(dups "$work/$m.theirs")
  ours_total=$((ours_total + o)) theirs_total=$((theirs_total + t))
  [ "$od" = 0 ] || ours_dups=$((ours_dups + 1))
  [ "$td" = 0 ] || theirs_dups=$((theirs_dups + 1))
  printf '%-24s %10d %10d %6.2f %10d %10d\n' "$m" "$o" "$t" "$(echo "$o / $t" | bc -l)" "$od" "$td"
done
printf 'modules %d: btfkit %d bytes, pahole %s %d bytes, ratio %.3f; modules re-emitting base types: btfkit %d, pahole %d\n' \
  "${#modules[@]}" "$ours_total" "$which" "$theirs_total" "$(echo "$ours_total / $theirs_total" | bc -l)" "$ours_dups" "$theirs_dups"
