#!/usr/bin/env bash
# bpf/build.sh - compile cauda's BPF programs into bpf/cauda.bpf.o, the
# object embedded in the binary (so `cargo build` needs no clang).
# Needs Debian's clang (14) and libbpf-dev (the bpf/*.h helper headers).
# The build is reproducible: .ci/run rebuilds it and fails when the result
# differs from the committed object (`bpf/build.sh --check`).
set -euo pipefail
cd "$(dirname "$0")"
out=cauda.bpf.o
if [[ ${1:-} == --check ]]; then
    out=$(mktemp --suffix=.o)
    trap 'rm -f "$out"' EXIT
fi
for tool in clang llvm-strip; do
    command -v "$tool" >/dev/null || { echo "bpf/build.sh: $tool not found (apt-get install clang llvm)" >&2; exit 2; }
done
[[ -f /usr/include/bpf/bpf_helpers.h ]] || { echo "bpf/build.sh: bpf_helpers.h not found (apt-get install libbpf-dev)" >&2; exit 2; }
# -mcpu=v3: atomic compare-and-exchange for the exact min and max.
# -fdebug-prefix-map: BTF line info names source files; keep the checkout path
# out of them so every clone builds the same bytes.
clang -O2 -g -target bpf -mcpu=v3 -Wall -Werror -fdebug-prefix-map="$PWD"=. -c cauda.bpf.c -o "$out"
# Keep BTF (.BTF, .BTF.ext: CO-RE needs them), drop DWARF.
llvm-strip -g "$out"
if [[ ${1:-} == --check ]]; then
    if ! cmp -s "$out" cauda.bpf.o; then
        echo "bpf/build.sh --check: bpf/cauda.bpf.o is not what bpf/*.c builds; run bpf/build.sh and commit it" >&2
        exit 1
    fi
    echo "bpf/cauda.bpf.o matches its sources"
fi
