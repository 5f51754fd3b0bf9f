#!/usr/bin/env bash
# How long `cauda report` takes, and how big the page is, for 10 runs of
# 3,600 intervals each (goal: <= 2 s and <= 5 MB).
#
# The runs are real: `cauda timer` with 10 ms intervals for 36 s (3,600
# intervals of ~100 wake-ups each), made once and cached in the data
# directory. With -H FILE, a second case reports 10 copies of that file (for
# example a real 1-hour run at 1 s intervals: heavier intervals).
#
# Usage: bench/report_speed.sh [-b CAUDA] [-d DATADIR] [-r RUNS] [-H HOUR_RUN]
set -euo pipefail
cd "$(dirname "$0")/.."

cauda=target/release/cauda
data="${TMPDIR:-/tmp}/cauda-report-bench"
rounds=5
hour=""
while getopts "b:d:r:H:h" opt; do
    case "$opt" in
        b) cauda="$OPTARG" ;;
        d) data="$OPTARG" ;;
        r) rounds="$OPTARG" ;;
        H) hour="$OPTARG" ;;
        *) sed -n '2,12p' "$0"; exit 2 ;;
    esac
done
if [[ ! -x "$cauda" ]]; then
    cargo build --release --locked
fi
mkdir -p "$data"

echo "cauda report speed"
echo "=================="
echo "date:    $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "host:    $(uname -r), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "cauda:   $("$cauda" --version) ($cauda)"

runs=()
for i in $(seq 1 10); do
    f="$data/timer-$i.json"
    if [[ ! -s "$f" ]]; then
        echo "making $f (cauda timer, 36 s)…" >&2
        "$cauda" timer --interval 100us --interval-length 10ms --runtime 36s -q -o "$f" >/dev/null
    fi
    runs+=("$f")
done
intervals=$("$cauda" analyze "${runs[0]}" --json | python3 -c \
    'import json,sys; print(json.load(sys.stdin)["inputs"][0]["series"][0]["intervals"])')
echo "inputs:  10 cauda timer runs, $intervals intervals each, $(du -ch "${runs[@]}" | tail -1 | cut -f1) in total"

measure() {
    local name="$1"; shift
    local out="$data/$name.html"
    echo
    echo "case: $name"
    if command -v hyperfine >/dev/null; then
        hyperfine --style basic --warmup 1 --runs "$rounds" \
            "$cauda report $* -o $out --force" 2>&1 | grep -E "Time|Range"
    else
        for _ in $(seq 1 "$rounds"); do
            /usr/bin/time -f "%e s, %M KB max RSS" "$cauda" report "$@" -o "$out" --force 2>&1 | tail -1
        done
    fi
    /usr/bin/time -f "peak RSS: %M KB" "$cauda" report "$@" -o "$out" --force 2>&1 | grep RSS || true
    local bytes
    bytes=$(stat -c %s "$out")
    echo "page size: $bytes bytes ($(python3 -c "print(round($bytes/1e6, 2))") MB)"
}

measure timer-10x3600 "${runs[@]}"
if [[ -n "$hour" ]]; then
    copies=()
    for i in $(seq 1 10); do
        cp -f "$hour" "$data/hour-$i.json"
        copies+=("$data/hour-$i.json")
    done
    measure hour-10x "${copies[@]}"
fi
echo done
