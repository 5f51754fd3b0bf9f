#!/usr/bin/env bash
# Fuzz every reader of untrusted input with libFuzzer (cargo-fuzz), one
# target after another, each for a set time — minutes, not in CI (CI replays
# the committed corpus: tests/fuzz_corpus.rs).
#
#   bench/fuzz.sh [--asan] [SECONDS_PER_TARGET] [TARGET...]
#
#   SECONDS_PER_TARGET  default 600
#   TARGET              default all: one per format cauda reads (the
#                       importers' table, src/formats/import/mod.rs),
#                       detect, journal and broker_reply — the files of
#                       fuzz/fuzz_targets/
#   --asan              build with AddressSanitizer instead of no sanitizer
#
# Runs on stable Rust: RUSTC_BOOTSTRAP=1 lets cargo-fuzz pass its -Z flags.
# Installs cargo-fuzz when missing. Each target's corpus is seeded from the
# real-tools' fixtures in tests/fixtures (those of its format; all of them
# for `detect` and for a format without a rule of its own in `seeds`); the run grows a working corpus in fuzz/work/TARGET, which
# `cargo fuzz cmin` shrinks again and later runs start from. What is
# committed is smaller still: fuzz/corpus/TARGET, the inputs (cut to 512
# bytes) that cover every edge the working corpus covers, replayed by
# `cargo test` (tests/fuzz_corpus.rs). A crash stops its target; the input
# is in fuzz/artifacts/TARGET/ — minimise it (`cargo fuzz tmin`), put it in
# fuzz/regressions/TARGET/ and fix the cause.
#
# Progress and libFuzzer's output (also kept in fuzz/logs/TARGET.log) go to
# stderr; stdout is a Markdown table for bench/RESULTS.md. Run it niced on
# a shared machine: `nice -n 19 bench/fuzz.sh`.
set -euo pipefail
cd "$(dirname "$0")/.."

ALL=()
for f in fuzz/fuzz_targets/*.rs; do ALL+=("$(basename "$f" .rs)"); done
sanitizer=none
seconds=600
targets=()
for arg; do
    case $arg in
        --asan) sanitizer=address ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) echo "fuzz.sh: unknown option $arg (try --help)" >&2; exit 2 ;;
        *[!0-9]*) targets+=("$arg") ;;
        *) seconds=$arg ;;
    esac
done
((${#targets[@]})) || targets=("${ALL[@]}")
for t in "${targets[@]}"; do
    [[ -f fuzz/fuzz_targets/$t.rs ]] || { echo "fuzz.sh: no target $t (one of: ${ALL[*]})" >&2; exit 2; }
done

command -v cargo-fuzz >/dev/null || cargo install --locked cargo-fuzz
export RUSTC_BOOTSTRAP=1
# The fuzz crate builds into its own fuzz/target: its compiler flags differ.
unset CARGO_TARGET_DIR
# -a: debug assertions and overflow checks, so an overflow is a crash.
# Each sanitizer builds in its own folder, so switching rebuilds nothing.
build=(--sanitizer "$sanitizer" --debug-assertions)
target_dir=fuzz/target
if [[ $sanitizer != none ]]; then
    target_dir=fuzz/target/$sanitizer
    build+=(--target-dir "$PWD/$target_dir")
fi
binaries=$target_dir/$(rustc -vV | sed -n 's/^host: //p')/release
# The committed corpus: inputs cut to this many bytes, enough to cover each
# edge once (-use_counters=0) — a few hundred KiB for all targets.
replay_max_len=512
# Inputs up to 16 KiB: past the 8 KiB detection reads, several fio
# histogram lines; bigger inputs only slow every execution down.
libfuzzer=(-max_len=16384 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1)

# seeds TARGET DIR: the fixtures made by the real tool of TARGET's format.
seeds() {
    local f=tests/fixtures
    case $1 in
        runfile) make_run_files "$2" ;;
        hlog) cp $f/hdr/*.hlog "$2" ;;
        hgrm) cp $f/hdr/*.hgrm "$2" ;;
        fio_json) cp $f/fio/*.json $f/fio/*.jsonplus "$2" ;;
        fio_lat) cp $f/fio/lat_*.log $f/fio/avg_*.log "$2" ;;
        fio_hist) cp $f/fio/hist_*.log "$2" ;;
        sockperf) cp $f/sockperf/*.csv $f/sockperf/*.stdout.txt "$2" ;;
        cyclictest_hist) cp $f/cyclictest/*.txt "$2" ;;
        cyclictest_json) cp $f/cyclictest/*.json "$2" ;;
        numbers) seq 1000 37 9000 >"$2/seq"; cp $f/sockperf/*.csv $f/fio/lat_rw_lat.1.log "$2" ;;
        journal) make_journal "$2/tune.journal" ;;
        broker_reply) python3 bench/hostile_broker.py --seeds "$2" ;;
        *)
            for g in $f/*/*; do
                [[ -f $g && $g != *.expected.json && $g != *.md ]] && cp "$g" "$2"
            done
            make_run_files "$2"
            ;;
    esac
}

# Short timer and hiccup runs: cauda writes the only run files there are.
make_run_files() {
    cargo run --quiet --locked -- timer --interval 1ms --runtime 1s -o "$1/timer.json" >/dev/null
    cargo run --quiet --locked -- hiccup --runtime 1s -o "$1/hiccup.json" >/dev/null
}

# A journal of every record kind, each line JSON, a tab and its CRC-32, as
# host tune --apply --persist writes it.
make_journal() {
    python3 - "$1" <<'EOF'
import json, sys, zlib
records = [
    {"kind": "header", "schema": "cauda.journal/1", "host": "vm", "boot_id": "b0", "root": "/",
     "profile": "latency", "cauda": "0.1.0", "created_unix": 1763900000},
    {"kind": "change", "seq": 1, "id": "vm.swappiness", "path": "/proc/sys/vm/swappiness",
     "old": "60\n", "new": "10"},
    {"kind": "done", "seq": 1},
    {"kind": "file", "seq": 2, "path": "/etc/sysctl.d/90-cauda-tune.conf", "old": None,
     "new": "vm.swappiness = 10\n"},
    {"kind": "done", "seq": 2},
    {"kind": "rolled-back", "reason": "verify failed", "at_unix": 1763900060},
]
with open(sys.argv[1], "w") as out:
    for r in records:
        text = json.dumps(r, separators=(",", ":"))
        out.write(f"{text}\t{zlib.crc32(text.encode()):08x}\n")
    out.write('{"kind":"done"')  # a torn last line
EOF
}

# final_stat NAME LOG: libFuzzer's final figure NAME.
final_stat() { sed -n "s/^stat::$1: *//p" "$2" | tail -1; }

mkdir -p fuzz/logs
seed_dir=
trap 'rm -rf "$seed_dir"' EXIT
printf '| target | sanitizer | executions | seconds | exec/s | committed corpus (files, KiB) | working corpus (files) | crashes |\n'
printf '|---|---|---:|---:|---:|---:|---:|---:|\n'
for t in "${targets[@]}"; do
    seed_dir=$(mktemp -d)
    seeds "$t" "$seed_dir"
    mkdir -p "fuzz/work/$t" "fuzz/corpus/$t" "fuzz/artifacts/$t"
    before=$(find "fuzz/artifacts/$t" -type f | wc -l)
    log=fuzz/logs/$t.log
    echo "== $t: ${seconds}s, sanitizer $sanitizer, $(ls "$seed_dir" | wc -l) seeds" >&2
    start=$(date +%s)
    status=0
    cargo fuzz run "${build[@]}" "$t" "fuzz/work/$t" "fuzz/corpus/$t" "$seed_dir" -- \
        "${libfuzzer[@]}" -max_total_time="$seconds" 2>&1 | tee "$log" >&2 || status=$?
    elapsed=$(($(date +%s) - start))
    crashes=$(($(find "fuzz/artifacts/$t" -type f | wc -l) - before))
    ((status == 0 || crashes > 0)) || { echo "fuzz.sh: cargo fuzz failed for $t (exit $status)" >&2; exit 1; }
    cargo fuzz cmin "${build[@]}" "$t" "fuzz/work/$t" -- -max_len=16384 >>"$log" 2>&1 ||
        echo "fuzz.sh: cmin of $t failed; fuzz/work/$t is not minimised (see $log)" >&2
    rm -rf "$seed_dir"
    mv "fuzz/corpus/$t" "$seed_dir"
    mkdir "fuzz/corpus/$t"
    "$binaries/$t" -merge=1 -use_counters=0 -max_len=$replay_max_len \
        "fuzz/corpus/$t" "fuzz/work/$t" "$seed_dir" >>"$log" 2>&1 || {
        echo "fuzz.sh: merging $t's committed corpus failed; kept the old one (see $log)" >&2
        rm -rf "fuzz/corpus/$t"
        mv "$seed_dir" "fuzz/corpus/$t"
    }
    rm -rf "$seed_dir"
    files=$(find "fuzz/corpus/$t" -type f | wc -l)
    kib=$(find "fuzz/corpus/$t" -type f -printf '%s\n' | awk '{ s += $1 } END { printf "%.0f", s / 1024 }')
    execs=$(final_stat number_of_executed_units "$log")
    rate=$(final_stat average_exec_per_sec "$log")
    work=$(find "fuzz/work/$t" -type f | wc -l)
    printf '| %s | %s | %s | %s | %s | %s, %s | %s | %s |\n' \
        "$t" "$sanitizer" "${execs:-?}" "$elapsed" "${rate:-?}" "$files" "$kib" "$work" "$crashes"
done
