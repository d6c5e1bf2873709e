#!/usr/bin/env bash
# The btf crate's unsafe containers under checkers that fail on memory
# errors, with their unit tests as the workload. Exits non-zero on a finding.
#
#   Miri      undefined behaviour (use after free, out-of-bounds, misaligned
#             or aliasing-violating accesses, leaks) in records.rs: Records
#             and Arena. Miri exists on nightly only, pinned here as
#             rust-toolchain.toml pins CI's stable toolchain. It has no
#             madvise and cannot unmap part of a mapping, so hugepages.rs is
#             not under it.
#   memcheck  valgrind's: reads and writes of freed, unmapped or undefined
#             memory, on the real system calls: hugepages.rs (ZeroedWords,
#             vec) and records.rs again (.ci/packages.d/sanitize).
#
#   scripts/sanitize.sh [miri|memcheck]    both when not told
set -euo pipefail
cd "$(dirname "$0")/.."

miri_toolchain=nightly-2026-05-20
tests=(records:: hugepages::)

miri() {
  if ! rustup run "$miri_toolchain" cargo miri --version >/dev/null 2>&1; then
    rustup toolchain install "$miri_toolchain" --profile minimal --component miri,rust-src >&2
  fi
  cargo "+$miri_toolchain" miri test -q -p btfkit-btf --lib -- records::
}

memcheck() {
  local bin
  bin=$(cargo test -q --release -p btfkit-btf --lib --no-run --message-format=json |
    python3 -c 'import json, sys
for m in map(json.loads, sys.stdin):
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["lib"]:
        print(m["executable"])')
  [ -x "$bin" ] || { echo "sanitize.sh: no unit test binary of btfkit-btf" >&2; exit 1; }
  valgrind -q --error-exitcode=1 --leak-check=full \
    --show-leak-kinds=definite --errors-for-leak-kinds=definite \
    "$bin" -q --test-threads=1 "${tests[@]}"
}

case "${1:-all}" in
  miri) miri ;;
  memcheck) memcheck ;;
  all) miri; memcheck ;;
  *) echo "usage: $0 [miri|memcheck]" >&2; exit 2 ;;
esac
