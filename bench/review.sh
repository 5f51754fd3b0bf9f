#!/usr/bin/env bash
# Issue 20's review: cauda under attack and fault. Repeats every class of the
# issue against a cauda binary and prints a table per class and the summary
# counts against the issue's targets. Root is needed for the device, loop,
# mount and netns cases (they are skipped, with the reason, otherwise).
#
#   bench/review.sh [CAUDA_BINARY] [--only 1,2,6] [--keep]
#
# CAUDA_BINARY defaults to target/release/cauda. Scratch lives under
# ${TMPDIR:-/tmp} and is removed at the end (--keep keeps it).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="$here/../target/release/cauda"
if [[ $# -gt 0 && "$1" != --* ]]; then
    bin="$1"
    shift
fi
if [[ ! -x "$bin" ]]; then
    echo "review.sh: no cauda binary at $bin (cargo build --release first)" >&2
    exit 2
fi
exec python3 "$here/review.py" --bin "$(realpath "$bin")" "$@"
