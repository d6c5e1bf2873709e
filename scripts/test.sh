#!/usr/bin/env bash
# README's test command. Tests that need an oracle, Debian's kernel or root
# skip with a message here; under BTFKIT_STRICT=1 (CI) they fail instead.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --release --workspace "$@"
