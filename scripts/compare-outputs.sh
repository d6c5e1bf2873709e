#!/usr/bin/env bash
# compare-outputs.sh: do two btfkit binaries print, write and exit the same?
#
# What: runs a fixed set of btfkit commands (encode, dump, dedup, the pahole
# drop-in, funcs, check, layout, resolve, diff, and a few error paths) with
# each of two binaries on the same real inputs, and compares byte for byte
# what each run produced: its exit code, stdout, stderr, every file it wrote
# and, for the ELF files `pahole -J` rewrites, their .BTF and .BTF.base
# sections. One line per case:
#
#   identical  NAME
#   DIFFERENT NAME (first difference: WHAT)
#
# then `N identical, M different`.
#
# Why: the crates are being restructured (issue 43) under the rule that no
# command changes what it prints or exits with. The tests check properties
# of the output; this checks that the output itself did not move, on a
# whole kernel (Debian's 6.1 cloud vmlinux with DWARF and its modules), for
# a restructuring commit against the one before it.
#
# Usage:
#   scripts/compare-outputs.sh [--keep] OLD_BTFKIT NEW_BTFKIT
#       compare two built binaries (paths)
#   scripts/compare-outputs.sh [--keep] --rev REV
#       build REV (a `git worktree add` of it in a temporary directory under
#       the cache, `cargo build --release -p btfkit` with a target directory
#       of its own, $CACHE/compare-outputs/target, kept between runs so that
#       only btfkit's own crates rebuild) as OLD, and this work tree's
#       target/release/btfkit (built first, uncommitted changes included) as
#       NEW
#   --keep  keep the work directory (every case's outputs of both binaries,
#           under old/ and new/) and print its path, to look at a difference
#
# Exit: 0 when every case is identical, 1 when some differ, 2 on a usage or
# setup error (a missing input, a failed build, OLD failing to make an
# input that later cases read).
#
# Inputs: the cache scripts/fetch-debian-kernel.sh fills (run it first; this
# script fetches nothing): $CACHE = ${BTFKIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/btfkit},
# with vmlinux, System.map, dbg-modules/ (debug modules with DWARF) and
# image-modules/ (the shipped modules, with split .BTF).
#
# How the runs are made comparable:
#   - Both binaries run every case with the same command line, environment,
#     stdin (/dev/null unless the case feeds one) and working directory: each
#     run happens in $WORK/run/cwd, which is then moved aside to
#     $WORK/old/NAME or $WORK/new/NAME. The binary is reached through
#     $WORK/bin on PATH (btfkit and pahole, symlinks re-pointed for each
#     side), so argv[0] is `btfkit` or `pahole` for both.
#   - Later cases read what an earlier case made (the encoded vmlinux BTF,
#     the encoded module BTF): both binaries read OLD's copy of it, under
#     $WORK/in, so a difference shows in the case that made it and does not
#     spread to every reader.
#   - RUST_BACKTRACE=0: a panic prints its message, not addresses.
#   - Each command runs under `timeout` (COMPARE_TIMEOUT seconds, default
#     900): a hang is a difference (exit 124), not a stuck script.
#
# Cost: the cases of a binary run one after the other, OLD's then NEW's for
# each case (the machine has 2 cores and is shared; encode uses both).
# 40 to 70 s for the whole set on Debian's 6.1 kernel (about 26 s of CPU),
# depending on the machine's load; --rev adds the two builds (about 6
# minutes when neither target directory has been built, much less after).
set -euo pipefail

me=compare-outputs.sh
die() { echo "$me: $*" >&2; exit 2; }
usage() {
  echo "usage: $0 [--keep] OLD_BTFKIT NEW_BTFKIT" >&2
  echo "       $0 [--keep] --rev REV" >&2
  exit 2
}

# --- Arguments -------------------------------------------------------------
keep=
rev=
args=()
while [ "$#" -gt 0 ]; do
  case $1 in
    --keep) keep=1; shift ;;
    --rev) [ "$#" -ge 2 ] || usage; rev=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    --) shift; args+=("$@"); break ;;
    -*) echo "$me: unknown option $1" >&2; usage ;;
    *) args+=("$1"); shift ;;
  esac
done
if [ -n "$rev" ]; then
  [ "${#args[@]}" -eq 0 ] || usage
else
  [ "${#args[@]}" -eq 2 ] || usage
fi

for tool in cmp objcopy timeout; do
  command -v "$tool" >/dev/null || die "$tool is not installed (needed to compare outputs)"
done

# --- Inputs ----------------------------------------------------------------
cache="${BTFKIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/btfkit}"
vmlinux=$cache/vmlinux
sysmap=$cache/System.map
dbg=$cache/dbg-modules/kernel
img=$cache/image-modules/kernel
# The debug modules (DWARF) encoded over vmlinux, and the shipped module
# whose split .BTF is dumped and diffed.
modules=(fs/fat/fat.ko fs/isofs/isofs.ko fs/configfs/configfs.ko)
need=("$vmlinux" "$sysmap" "$cache/dbg-modules" "$cache/image-modules"
  "${modules[@]/#/$dbg/}" "$img/fs/fat/fat.ko")
for f in "${need[@]}"; do
  [ -e "$f" ] || die "missing input: $f (run scripts/fetch-debian-kernel.sh to fill $cache)"
done

# --- Work directory (removed at the end unless --keep) ----------------------
mkdir -p "$cache"
work=$(mktemp -d "$cache/.compare-outputs.XXXXXX")
top=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
rev_tree=
cleanup() {
  if [ -n "$rev_tree" ] && [ -d "$rev_tree" ]; then
    git -C "$top" worktree remove --force "$rev_tree" >/dev/null 2>&1 || rm -rf "$rev_tree"
    git -C "$top" worktree prune >/dev/null 2>&1 || true
  fi
  if [ -n "$keep" ]; then
    echo "$me: outputs kept in $work" >&2
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT
# Interrupted: exit, so that the EXIT trap cleans up.
trap 'exit 130' INT
trap 'exit 143' TERM
mkdir -p "$work/bin" "$work/in" "$work/old" "$work/new"

# An executable's absolute path, or a setup error naming it.
binary() {
  local p=$1
  [ -f "$p" ] && [ -x "$p" ] || die "not an executable file: $p"
  case $p in /*) echo "$p" ;; *) echo "$PWD/$p" ;; esac
}

# --- The two binaries --------------------------------------------------------
if [ -n "$rev" ]; then
  git -C "$top" rev-parse --verify -q "$rev^{commit}" >/dev/null || die "not a commit: $rev"
  commit=$(git -C "$top" rev-parse "$rev^{commit}")
  # OLD: REV in a worktree of its own. Its target directory is kept in the
  # cache: the dependencies build once, then only btfkit's crates rebuild.
  rev_tree=$work/rev-tree
  echo "$me: building $rev ($commit) as OLD" >&2
  git -C "$top" worktree add -q --detach "$rev_tree" "$commit" >&2 ||
    die "git worktree add of $rev failed"
  rev_target=$cache/compare-outputs/target
  mkdir -p "$rev_target"
  (cd "$rev_tree" && cargo build --release -p btfkit --target-dir "$rev_target") >&2 ||
    die "the build of $rev failed"
  # Copies: another build may replace the binaries while the cases run.
  cp "$rev_target/release/btfkit" "$work/old-btfkit"
  echo "$me: building the current tree ($top) as NEW" >&2
  (cd "$top" && env -u CARGO_TARGET_DIR cargo build --release -p btfkit) >&2 ||
    die "the build of the current tree failed"
  cp "$top/target/release/btfkit" "$work/new-btfkit"
  old_bin=$work/old-btfkit new_bin=$work/new-btfkit
  old_label="$rev ($commit)" new_label="current tree ($top)"
else
  # One assignment each: in `a=$(x) b=$(y)` a failing x would go unnoticed.
  old_bin=$(binary "${args[0]}")
  new_bin=$(binary "${args[1]}")
  old_label=$old_bin new_label=$new_bin
fi
echo "$me: OLD = $old_label" >&2
echo "$me: NEW = $new_label" >&2
echo "$me: inputs: $cache ($(cat "$cache/VERSION" 2>/dev/null || echo 'no VERSION file'))" >&2

# --- Running a case --------------------------------------------------------
export PATH="$work/bin:$PATH" RUST_BACKTRACE=0 RUST_LIB_BACKTRACE=0
timeout_s=${COMPARE_TIMEOUT:-900}
n_same=0 n_diff=0

# Points btfkit (and pahole, its kernel-build name) on PATH at side $1's binary.
use_side() {
  local bin
  if [ "$1" = old ]; then bin=$old_bin; else bin=$new_bin; fi
  ln -sfn "$bin" "$work/bin/btfkit"
  ln -sfn "$bin" "$work/bin/pahole"
}

# run_side SIDE NAME: runs the current case's command ("${cmd[@]}") for one
# side in $work/run/cwd, then moves the run to $work/SIDE/NAME:
#   cwd/      what the command wrote (and the copies it was given)
#   stdout, stderr, rc
#   sections/FILE.SECTION   .BTF / .BTF.base of each --section FILE
run_side() {
  local side=$1 name=$2 run=$work/run src f sec
  rm -rf "$run"
  mkdir -p "$run/cwd" "$run/sections"
  for src in "${copies[@]}"; do cp "${src%%:*}" "$run/cwd/${src#*:}"; done
  use_side "$side"
  local rc=0
  (cd "$run/cwd" && exec timeout --kill-after=10 "$timeout_s" "${cmd[@]}") \
    <"$stdin" >"$run/stdout" 2>"$run/stderr" || rc=$?
  echo "$rc" >"$run/rc"
  # Sections are read from a scratch copy: objcopy without an output file
  # would rewrite the input in place.
  for f in "${sections[@]}"; do
    [ -f "$run/cwd/$f" ] || continue
    for sec in .BTF .BTF.base; do
      objcopy --dump-section "$sec=$run/sections/$f$sec" "$run/cwd/$f" "$run/scratch.o" \
        >/dev/null 2>&1 || true
      rm -f "$run/scratch.o"
    done
  done
  rm -rf "${work:?}/$side/$name"
  mv "$run" "$work/$side/$name"
}

# differ WHAT OLDFILE NEWFILE: 0 (and nothing printed) when the files are the
# same bytes; else 1, printing where they first differ.
differ() {
  local what=$1 a=$2 b=$3 msg
  msg=$(LC_ALL=C cmp -- "$a" "$b" 2>&1) && return 1
  local line=
  case $msg in
    *" differ: "*)
      # "A B differ: byte|char N, line L"
      local at=${msg##*differ: }
      at=${at/#char/byte}
      line=${at##*line }
      printf '%s: %s' "$what" "$at"
      ;;
    *"EOF on "*" after byte "*)
      # "cmp: EOF on A after byte N, [in ]line L": A is a prefix of the other
      local short=OLD
      case $msg in *"EOF on $b "*) short=NEW ;; esac
      local at=${msg##* after byte }
      printf '%s: %s ends after byte %s' "$what" "$short" "${at/in line/line}"
      ;;
    *"EOF on "*" which is empty"*)
      local empty=OLD
      case $msg in *"EOF on $b "*) empty=NEW ;; esac
      printf '%s: empty in %s only' "$what" "$empty"
      ;;
    *) printf '%s: %s' "$what" "${msg//"$work"\//}" ;;
  esac
  # For text, the differing line of each side (shortened).
  case $what in
    stdout | stderr)
      if [ -n "$line" ] && [ "$line" -eq "$line" ] 2>/dev/null; then
        local la lb
        la=$(sed -n "${line}{p;q}" "$a" | cut -c1-60 | tr -cd '[:print:]')
        lb=$(sed -n "${line}{p;q}" "$b" | cut -c1-60 | tr -cd '[:print:]')
        printf '; OLD: "%s" NEW: "%s"' "$la" "$lb"
      fi
      ;;
  esac
  return 0
}

# first_difference NAME: prints the first difference between the two runs
# of case NAME (exit code, stdout, stderr, sections, then every file the
# commands left in cwd); 1 when there is none.
first_difference() {
  local o=$work/old/$1 n=$work/new/$1 f d
  if [ "$(cat "$o/rc")" != "$(cat "$n/rc")" ]; then
    echo "exit code: OLD $(cat "$o/rc"), NEW $(cat "$n/rc")"
    return 0
  fi
  differ stdout "$o/stdout" "$n/stdout" && return 0
  differ stderr "$o/stderr" "$n/stderr" && return 0
  local lo ln
  for d in sections cwd; do
    lo=$(cd "$o/$d" && LC_ALL=C find . -type f | LC_ALL=C sort)
    ln=$(cd "$n/$d" && LC_ALL=C find . -type f | LC_ALL=C sort)
    if [ "$lo" != "$ln" ]; then
      f=$(LC_ALL=C comm -3 <(echo "$lo") <(echo "$ln") | head -n1)
      case $f in
        $'\t'*) echo "${d/cwd/file} ${f#$'\t'./} written by NEW only" ;;
        *) echo "${d/cwd/file} ${f#./} written by OLD only" ;;
      esac
      return 0
    fi
    while IFS= read -r f; do
      [ -n "$f" ] || continue
      if [ "$d" = sections ]; then
        differ "section ${f#./}" "$o/$d/$f" "$n/$d/$f" && return 0
      else
        differ "file ${f#./}" "$o/$d/$f" "$n/$d/$f" && return 0
      fi
    done <<<"$lo"
  done
  return 1
}

# case_ NAME [--copy SRC:DEST]... [--section FILE]... [--stdin FILE]
#       [--export FILE]... -- CMD ARG...
# Runs CMD (btfkit ... or pahole ...) with OLD, then NEW, and prints the
# case's line.
#   --copy SRC:DEST  copy SRC into the working directory as DEST first (a
#                    file the command rewrites in place)
#   --section FILE   also compare FILE's .BTF and .BTF.base sections
#   --stdin FILE     the command's standard input (default /dev/null)
#   --export FILE    OLD's FILE becomes $work/in/FILE, an input of later
#                    cases; OLD failing to make it is a setup error
case_() {
  local name=$1; shift
  copies=() sections=() exports=() stdin=/dev/null cmd=()
  while [ "$#" -gt 0 ]; do
    case $1 in
      --copy) copies+=("$2"); shift 2 ;;
      --section) sections+=("$2"); shift 2 ;;
      --stdin) stdin=$2; shift 2 ;;
      --export) exports+=("$2"); shift 2 ;;
      --) shift; cmd=("$@"); break ;;
      *) die "case $name: bad option $1 (a bug in $0)" ;;
    esac
  done
  run_side old "$name"
  run_side new "$name"
  local f diff
  for f in "${exports[@]}"; do
    [ -s "$work/old/$name/cwd/$f" ] ||
      die "case $name: OLD did not write $f (exit $(cat "$work/old/$name/rc")), which later cases read; its stderr: $(head -c 500 "$work/old/$name/stderr")"
    cp "$work/old/$name/cwd/$f" "$work/in/$f"
  done
  if diff=$(first_difference "$name"); then
    echo "DIFFERENT $name (first difference: $diff)"
    n_diff=$((n_diff + 1))
  else
    echo "identical  $name"
    n_same=$((n_same + 1))
  fi
  [ -n "$keep" ] || rm -rf "${work:?}/old/$name" "${work:?}/new/$name"
}

start=$(date +%s)
enc=$work/in/vmlinux.btf
fat=$dbg/fs/fat/fat.ko

# --- encode: the vmlinux, default and with every variable and addr tag -----
case_ encode-vmlinux --export vmlinux.btf -- btfkit encode "$vmlinux" -o vmlinux.btf
case_ encode-vmlinux-vars-all-addr-tags-all -- \
  btfkit encode "$vmlinux" --vars all --addr-tags all -o vmlinux-all.btf

# --- dump: the encoded BTF and Debian's own .BTF (pahole's, in the vmlinux) --
for fmt in raw c json; do
  case_ "dump-encoded-$fmt" -- btfkit dump "$enc" --format "$fmt"
  case_ "dump-debian-$fmt" -- btfkit dump "$vmlinux" --format "$fmt"
done
# A shipped module's split .BTF over Debian's vmlinux BTF.
case_ dump-shipped-module-fat -- btfkit dump "$img/fs/fat/fat.ko" --base "$vmlinux"

# --- dedup -------------------------------------------------------------------
case_ dedup-encoded -- btfkit dedup "$enc" -o dedup.btf

# --- module BTF: encode over vmlinux, and the pahole drop-in of kbuild -------
for m in "${modules[@]}"; do
  b=$(basename "$m" .ko)
  case_ "encode-module-$b" --export "$b.btf" -- \
    btfkit encode "$dbg/$m" --base "$vmlinux" -o "$b.btf"
done
# What 6.1's scripts/Makefile.modfinal runs for a module (the kernel of
# scripts/kernel/build.sh 6.1): `$(PAHOLE) -J $(PAHOLE_FLAGS) --btf_base
# vmlinux`, with the flags 6.1's scripts/pahole-flags.sh gives a pahole
# >= 1.25 (btfkit answers 1.32), and btfkit reached as `pahole` (a symlink,
# as make PAHOLE=... does).
case_ pahole-J-6.1-flags-fat --copy "$fat:fat.ko" --section fat.ko -- \
  env LLVM_OBJCOPY=objcopy pahole -J --btf_gen_floats -j --lang_exclude=rust \
  --skip_encoding_btf_inconsistent_proto --btf_gen_optimized --btf_base "$vmlinux" fat.ko
# 7.2's scripts/Makefile.btf flags for pahole >= 1.31 (scripts/kernel/build.sh
# 7.2; crates/btfkit/tests/kernel_boot.rs's FLAGS_7_2), as `btfkit pahole`.
# shellcheck disable=SC2054 # the commas belong to the flag
flags_7_2=(-j --btf_features=encode_force,var,float,enum64,decl_tag,type_tag,optimized_func,consistent_func,decl_tag_kfuncs,attributes,layout
  --lang_exclude=rust)
case_ pahole-J-7.2-flags-fat --copy "$fat:fat.ko" --section fat.ko -- \
  btfkit pahole -J "${flags_7_2[@]}" --btf_base "$vmlinux" fat.ko
# An out-of-tree module's build (`make M=`, scripts/kernel/extmod) adds a
# distilled base: .BTF over .BTF.base.
case_ pahole-J-7.2-flags-distilled-base-isofs --copy "$dbg/fs/isofs/isofs.ko:isofs.ko" \
  --section isofs.ko -- \
  btfkit pahole -J "${flags_7_2[@]}" --btf_features=distilled_base --btf_base "$vmlinux" isofs.ko
case_ pahole-version -- pahole --version

# --- funcs -------------------------------------------------------------------
case_ funcs-vmlinux-json -- btfkit funcs "$vmlinux" --json
case_ funcs-module-fat -- btfkit funcs "$fat" --base "$vmlinux"
case_ funcs-module-fat-encoded-btf -- btfkit funcs "$fat" "$work/in/fat.btf" --base "$vmlinux"

# --- check -------------------------------------------------------------------
case_ check-attach-encoded-json -- btfkit check --attach "$enc" "$vmlinux" --json
case_ check-attach-encoded -- btfkit check --attach "$enc" "$vmlinux"
case_ check-encoded -- btfkit check "$enc"
case_ check-debian -- btfkit check "$vmlinux"

# --- layout (pahole's view) ------------------------------------------------
classes=task_struct,sk_buff,file
case_ layout-classes-btf -- btfkit layout "$vmlinux" -C "$classes" -F btf
case_ layout-classes-dwarf -- btfkit layout "$vmlinux" -C "$classes" -F dwarf
case_ layout-classes-default-source -- btfkit layout "$vmlinux" -C "$classes"
case_ layout-encoded-all -- btfkit layout "$enc"

# --- resolve: addresses of System.map ----------------------------------------
# 20 inputs picked by position (the same ones on every run of these inputs):
# 12 function starts and 3 addresses 5 bytes into a function, spread over
# the text; 3 data symbols; 2 names (one in the oops form name+0xOFF).
pick() { # pick KIND_REGEX COUNT: COUNT addresses of those symbol kinds, evenly spaced
  awk -v kinds="$1" -v n="$2" '$2 ~ kinds && $1 ~ /^ffffffff/ { a[c++] = $1 }
    END { for (i = 0; i < n && c > 0; i++) print a[int((i + 0.5) * c / n)] }' "$sysmap"
}
mapfile -t text < <(pick '^[Tt]$' 15)
mapfile -t data < <(pick '^[DdBb]$' 3)
[ "${#text[@]}" -eq 15 ] && [ "${#data[@]}" -eq 3 ] || die "too few symbols in $sysmap"
addrs=("${text[@]:0:12}")
for a in "${text[@]:12:3}"; do addrs+=("$(printf '%016x' $((16#$a + 5)))"); done
addrs+=("${data[@]}" vfs_read __x64_sys_openat+0x10)
printf '%s\n' "${addrs[@]}" >"$work/in/addresses"
case_ resolve-elf -- btfkit resolve --elf "$vmlinux" "${addrs[@]}"
case_ resolve-elf-json -- btfkit resolve --elf "$vmlinux" --json "${addrs[@]}"
case_ resolve-elf-stdin --stdin "$work/in/addresses" -- btfkit resolve --elf "$vmlinux"
case_ resolve-system-map -- btfkit resolve --system-map "$sysmap" --btf "$vmlinux" "${addrs[@]}"
# A kallsyms file (System.map has its format: address, kind, name).
case_ resolve-kallsyms-file-json -- \
  btfkit resolve --kallsyms "$sysmap" --btf "$vmlinux" --json "${addrs[@]}"

# --- diff --------------------------------------------------------------------
case_ diff-debian-vs-encoded-json -- btfkit diff "$vmlinux" "$enc" --json
case_ diff-debian-vs-encoded -- btfkit diff "$vmlinux" "$enc"
case_ diff-shipped-vs-encoded-module-fat-json -- \
  btfkit diff --base "$vmlinux" "$img/fs/fat/fat.ko" "$work/in/fat.btf" --json

# --- errors: the message and exit code of a failure are output too ---------
case_ error-usage-encode-no-input -- btfkit encode
case_ error-dump-not-btf -- btfkit dump "$sysmap"
case_ error-encode-missing-file -- btfkit encode no-such-file.ko -o x.btf

echo "$n_same identical, $n_diff different"
echo "$me: $((n_same + n_diff)) cases in $(($(date +%s) - start)) s" >&2
[ "$n_diff" -eq 0 ] || { [ -n "$keep" ] || echo "$me: rerun with --keep to look at the outputs" >&2; exit 1; }
