#!/usr/bin/env bash
# Runs every cargo-fuzz target in fuzz/ for a bounded time each:
#   bash scripts/fuzz.sh [SECONDS]     (default 60 per target)
# The machine has stable Rust only: RUSTC_BOOTSTRAP=1 lets cargo-fuzz use the
# nightly flags it needs. Seeds are small BTFs built here from C with cc and
# pahole, so the fuzzer starts from valid blobs of every common kind.
# Every target runs; crashes land in fuzz/artifacts/<target>/ and make this
# script fail at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
export RUSTC_BOOTSTRAP=1

command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked --version 0.13.2

seeds=fuzz/corpus/seeds
mkdir -p "$seeds"
if command -v pahole >/dev/null 2>&1 && command -v cc >/dev/null 2>&1; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  cat > "$work/a.c" <<'C'
struct list { struct list *next, *prev; };
enum color { RED, GREEN = 5, BLUE = -1 };
typedef unsigned long ulong_t;
struct s {
  int a; char b[3]; unsigned x:3, y:5; struct list l; enum color c;
  const volatile ulong_t *p; float f; double d;
  union { int i; long l; } u; void (*fn)(int, char *);
};
int f1(struct s *s, int n) { return s->a + n; }
struct s global_s;
C
  cat > "$work/b.c" <<'C'
#include <stdarg.h>
enum big { HUGE = 1ULL << 40 };
struct __attribute__((packed)) p { char c; long l; unsigned long long bits:33; };
typedef struct fwd fwd_t;
struct outer { struct { int x; } anon; fwd_t *f; enum big e; struct p arr[2][3]; _Bool b; };
int vf(const char *fmt, ...) { va_list ap; va_start(ap, fmt); va_end(ap); return 0; }
long g(struct outer *o, struct p p) { return o->anon.x + p.c; }
C
  for src in a b; do
    cc -g -O1 -c "$work/$src.c" -o "$work/$src.o"
    pahole -J "$work/$src.o"
    objcopy --dump-section .BTF="$seeds/$src.btf" "$work/$src.o"
  done
fi
# BTF with bpf-next's layout section and location kinds (a kind read through
# the layout section, vlen past 16 bits), built with testkit's fixtures.
cargo run -q --release -p testkit --example layout_and_location_seeds -- "$seeds"
# The reader also takes ELF files: one small object as a seed. The encoder
# starts from objects with DWARF only (-O0 keeps them small).
dwarf_seeds=fuzz/corpus/dwarf-seeds
mkdir -p "$dwarf_seeds"
if [ -n "${work:-}" ] && [ -f "$work/a.o" ]; then
  cp "$work/a.o" "$seeds/a.o"
  for src in a b; do cc -g -O0 -c "$work/$src.c" -o "$dwarf_seeds/$src.o"; done
  # A kfunc set as resolve_btfids leaves it (ids written and sorted: with
  # pahole 1.24, kf_b is FUNC 3 and kf_a FUNC 4, so each symbol marks the
  # other's pair), with the object's own .BTF, and the same with a
  # .BTF.base (a module's distilled base): the encoder reads the flags by
  # id through them.
  cat > "$work/k.c" <<'C'
int kf_a(int x) { return x + 1; }
int kf_b(int x) { return x * 3; }
asm(".pushsection .BTF_ids,\"a\"\n.p2align 2\n__BTF_ID__set8__kset:\n.long 2\n.long 1\n"
    "__BTF_ID__func__kf_a__1:\n.long 3\n.long 0\n"
    "__BTF_ID__func__kf_b__2:\n.long 4\n.long 0x1000\n"
    ".size __BTF_ID__set8__kset, .-__BTF_ID__set8__kset\n.popsection\n");
C
  cc -g -O0 -c "$work/k.c" -o "$work/k.o"
  pahole -J "$work/k.o"
  cp "$work/k.o" "$dwarf_seeds/kfuncs.o"
  objcopy --add-section .BTF.base="$seeds/a.btf" "$work/k.o" "$dwarf_seeds/kfuncs-base.o"
fi

# Every target in fuzz/ runs, as many at once as there are cores (a
# libFuzzer run takes one), each with its output kept until it ends. Each
# keeps its own corpus (the first directory, where libFuzzer adds what it
# finds); the BTF ones also start from the seeds above.
cargo fuzz build -O
logs="$(mktemp -d)"
trap 'rm -rf "${work:-}" "$logs"' EXIT
run_target() {
  local target=$1 max_len=8192
  local dirs=("fuzz/corpus/$target")
  case "$target" in
    read | dump | attach | drgn_types) dirs+=("$seeds") ;;
    layout)
      dirs+=("$seeds" "$dwarf_seeds")
      max_len=65536
      ;;
    encode)
      dirs+=("$dwarf_seeds")
      max_len=65536
      ;;
  esac
  mkdir -p "${dirs[@]}"
  local status=0
  cargo fuzz run "$target" "${dirs[@]}" -O -- \
    -max_total_time="$seconds" -max_len="$max_len" -timeout=10 -print_final_stats=1 \
    >"$logs/$target.log" 2>&1 || status=$?
  cat "$logs/$target.log"
  return "$status"
}
# A target that did not run to its end, for whatever reason, is a failure.
for target in $(cargo fuzz list); do
  while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do wait -n || true; done
  { run_target "$target" || touch "$logs/$target.failed"; } &
done
wait
failed=()
for f in "$logs"/*.failed; do
  [ -e "$f" ] && failed+=("$(basename "$f" .failed)")
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz: findings in: ${failed[*]} (inputs in fuzz/artifacts/)" >&2
  exit 1
fi
