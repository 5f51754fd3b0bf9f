#!/usr/bin/env bash
# Fuzz every importer with cargo-fuzz (libFuzzer) for a while — minutes, not
# in CI. Seeds the corpus with the real-tool fixtures.
#
#   bench/fuzz_importers.sh [SECONDS]      (default 300)
#
# Needs a nightly toolchain (rustup toolchain install nightly) and
# cargo-fuzz (cargo install cargo-fuzz). Crashes land in fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-300}
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz
corpus=fuzz/corpus/importers
mkdir -p "$corpus"
# One seed per fixture and forced format byte 0 (= detect).
for f in tests/fixtures/*/*; do
    case $f in *.expected.json|*.md) continue ;; esac
    { printf '\0'; cat "$f"; } > "$corpus/$(basename "$f").seed"
done
cargo +nightly fuzz run importers "$corpus" -- -max_total_time="$seconds" -max_len=65536
