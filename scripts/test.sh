#!/usr/bin/env bash
# README's test command: every tier (docs/testing.md). Tests that need an
# oracle, Debian's kernel or root skip with a message here; under
# BTFKIT_STRICT=1 (CI) they fail instead. The kernel tier (kernel builds,
# QEMU boots and dumps, root with bpf and perf) runs unless
# BTFKIT_KERNEL_TESTS=0 is set.
# Ends with one line totalling every test binary's results, since cargo's own
# last line is only that of the last binary (often doc tests, 0 of them).
set -uo pipefail
cd "$(dirname "$0")/.."
if [ "${BTFKIT_KERNEL_TESTS:-}" != 0 ]; then
  export BTFKIT_KERNEL_TESTS=1
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test --release --workspace --no-fail-fast "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
# A test that skips (testkit::skip prints "SKIP: why") passes in cargo's
# count; here it is counted as skipped, together with ignored tests. The
# marker is counted wherever it lands: stderr and libtest's "test NAME ..."
# share the pipe, so it can follow that on the same line.
awk '/^test result:/ { p += $4; f += $6; i += $8 } { k += gsub(/SKIP: /, "") }
     END { printf "tests: %d passed, %d failed, %d skipped\n", p - k, f, i + k }' "$log"
exit "$status"
