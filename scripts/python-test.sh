#!/usr/bin/env bash
# The drgn plugin's tests: builds the wheel of python/ (btfkit-drgn, a PyO3
# extension) with maturin, installs it, and runs python/tests with pytest
# against the cached QEMU dumps (made by the kernel tier of scripts/test.sh,
# which CI runs first) and drgn with Debian's DWARF vmlinux.
# Tests that lack a dump, drgn or the btfkit binary skip with a message;
# under BTFKIT_STRICT=1 (CI) they fail instead. As in scripts/test.sh, the
# kernel tier (the dumps, the live guest) runs unless BTFKIT_KERNEL_TESTS=0
# is set. Arguments go to pytest.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ "${BTFKIT_KERNEL_TESTS:-}" != 0 ]; then
  export BTFKIT_KERNEL_TESTS=1
fi
# The tests encode a BTF with every variable with this binary.
cargo build --release -q -p btfkit || exit 1
# The extension is a workspace of its own: the top-level fmt and clippy miss it.
(cd python/btfkit-drgn && cargo fmt --check && cargo clippy -q --release -- -D warnings) || exit 1
wheels=$(mktemp -d)
trap 'rm -rf "$wheels"' EXIT
maturin=(maturin)
command -v maturin >/dev/null || maturin=(python3 -m maturin)
(cd python && "${maturin[@]}" build --release --quiet --out "$wheels") || exit 1
python3 -m pip install --quiet --force-reinstall --no-deps "$wheels"/*.whl || exit 1
python3 -m pytest python/tests -rs "$@"
status=$?
# 5: pytest collected no test; that is a failure in CI.
if [ "$status" -eq 5 ] && [ "${BTFKIT_STRICT:-}" != 1 ]; then
  status=0
fi
exit "$status"
