#!/usr/bin/env bash
# sweep_vs_fio.sh - capacity at a latency objective, against fio's
# latency_target (issue 30): on the same file, the queue depth each finds
# for the same p99 target (4k random reads, O_DIRECT, io_uring), the IOPS
# and p99 fio measures at each of those depths, and the time each took to
# answer. Rounds alternate the order (odd: fio first; even: cauda first).
#
#   fio:   latency_target=TARGET latency_percentile=99 latency_window=2s,
#          iodepth up to 64, time_based for FIO_RUNTIME_S; its answer is
#          latency_depth in the JSON.
#   cauda: sweep --objective 'p99<=TARGET' --vary iodepth --to 64, in its
#          default configuration otherwise; its answer is the highest depth
#          whose p99 interval lies wholly under the target (and the one
#          above it, which missed).
#   Then fio measures each answer for CHECK_S at that depth: IOPS and p99,
#   so both answers are judged by the same instrument.
#
# Usage: bench/sweep_vs_fio.sh [DIR]   (DIR holds the file; default /var/tmp)
# Environment: TARGET (2ms), ROUNDS (2), FIO_RUNTIME_S (60), CHECK_S (10),
# SIZE (256M), CAUDA, FIO.

set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
DIR=${1:-/var/tmp}
TARGET=${TARGET:-2ms}
ROUNDS=${ROUNDS:-2}
FIO_RUNTIME_S=${FIO_RUNTIME_S:-60}
CHECK_S=${CHECK_S:-10}
SIZE=${SIZE:-256M}
CAUDA=${CAUDA:-$REPO_ROOT/target/release/cauda}
FIO=${FIO:-fio}

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
die() { printf 'sweep_vs_fio.sh: error: %s\n' "$*" >&2; exit 2; }

command -v "$FIO" >/dev/null || die "fio not found: apt-get install fio"
[[ -x $CAUDA ]] || die "$CAUDA not found: cargo build --release"
command -v python3 >/dev/null || die "python3 not found"

WORK=$(mktemp -d -p "$DIR" cauda-sweep-vs-fio.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
FILE=$WORK/data
target_ns=$(python3 -c "
import re,sys
m=re.fullmatch(r'([0-9.]+)(us|ms|s)','$TARGET') or sys.exit('TARGET: e.g. 2ms')
print(int(float(m[1])*{'us':1e3,'ms':1e6,'s':1e9}[m[2]]))")

# The file, laid out once by cauda (its mark lets every later run reuse it).
"$CAUDA" disk --file "$FILE" --size "$SIZE" --rw randread --runtime 1s -q -o "$WORK/layout.json" 2>/dev/null

fio_search() {
    local t0 t1
    t0=$(date +%s.%N)
    "$FIO" --name=search --filename="$FILE" --size="$SIZE" --rw=randread --bs=4k --direct=1 \
        --ioengine=io_uring --iodepth=64 --latency_target="$TARGET" --latency_window=2s \
        --latency_percentile=99 --time_based --runtime="$FIO_RUNTIME_S" \
        --output-format=json --output="$WORK/fio-search.json" >/dev/null
    t1=$(date +%s.%N)
    python3 -c "
import json; j=json.load(open('$WORK/fio-search.json'))['jobs'][0]
print(j['latency_depth'], '%.1f' % ($t1 - $t0))"
}

cauda_search() {
    local t0 t1 d
    rm -rf "$WORK/sweeps" && mkdir "$WORK/sweeps"
    t0=$(date +%s.%N)
    "$CAUDA" sweep --objective "p99<=$TARGET" --vary iodepth --to 64 --quiet --dir "$WORK/sweeps" \
        -- disk --file "$FILE" --size "$SIZE" --rw randread --engine io_uring >/dev/null
    t1=$(date +%s.%N)
    d=$(ls -d "$WORK"/sweeps/cauda-sweep-*)
    python3 -c "
import json; c=json.load(open('$d/sweep.json'))['capacity']
f=lambda v: '-' if v is None else str(int(v))
print(f(c['below']), f(c['above']), c['ending'], '%.1f' % ($t1 - $t0))"
}

# IOPS and p99 (ns) that fio measures at a depth.
fio_check() {
    "$FIO" --name=check --filename="$FILE" --size="$SIZE" --rw=randread --bs=4k --direct=1 \
        --ioengine=io_uring --iodepth="$1" --time_based --runtime="$CHECK_S" \
        --percentile_list=99 --output-format=json --output="$WORK/fio-check.json" >/dev/null
    python3 -c "
import json; r=json.load(open('$WORK/fio-check.json'))['jobs'][0]['read']
print('%.0f' % r['iops'], int(list(r['lat_ns'].get('percentile', r['clat_ns']['percentile']).values())[0]))"
}

printf '# sweep_vs_fio.sh: 4k randread, O_DIRECT, io_uring, p99 <= %s; %s, %s, %s\n' \
    "$TARGET" "$("$FIO" --version)" "$("$CAUDA" --version)" "$(date -u +%F)"
printf '%-5s %-5s %-28s %-10s %-16s %-16s\n' round tool "depth found (met / missed)" "time (s)" "fio IOPS there" "fio p99 there"
for round in $(seq 1 "$ROUNDS"); do
    order=(fio cauda)
    ((round % 2 == 0)) && order=(cauda fio)
    for tool in "${order[@]}"; do
        log "round $round: $tool"
        if [[ $tool == fio ]]; then
            read -r depth secs < <(fio_search)
            found="$depth"
        else
            read -r depth above ending secs < <(cauda_search)
            found="$depth / $above ($ending)"
        fi
        if [[ $depth == - ]]; then
            printf '%-5s %-5s %-28s %-10s %-16s %-16s\n' "$round" "$tool" "$found" "$secs" - -
            continue
        fi
        read -r iops p99 < <(fio_check "$depth")
        verdict=$([[ $p99 -le $target_ns ]] && echo "(meets)" || echo "(misses)")
        printf '%-5s %-5s %-28s %-10s %-16s %-16s\n' "$round" "$tool" "$found" "$secs" "$iops" \
            "$(python3 -c "print('%.0f us' % ($p99/1e3))") $verdict"
    done
done
