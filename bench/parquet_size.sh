#!/usr/bin/env bash
# parquet_size.sh - what `cauda convert --to parquet` costs on one run file:
# the time to write both tables (hyperfine: 1 warm-up, 5 runs; or GNU time,
# 5 runs, when hyperfine is missing) and the size of intervals.parquet and
# buckets.parquet against the run file's.
#
# Issue 19's figure: a 1-hour 1 kHz run in <= 1 s, <= 2x the run file.
#   cauda timer --interval 1ms --runtime 1h -o hour.json
#   bench/parquet_size.sh hour.json
#
# Needs: hyperfine (apt-get install hyperfine) or GNU time (/usr/bin/time).
set -euo pipefail
cd "$(dirname "$0")/.."
run=${1:?usage: bench/parquet_size.sh RUN.json}
cauda=${CAUDA:-target/release/cauda}
[[ -x $cauda ]] || cargo build --release --locked --quiet
cauda=$(realpath "$cauda")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$tmp/tables
echo "# cauda $("$cauda" --version | cut -d' ' -f2); $run ($(stat -c %s "$run") bytes); $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
convert="$cauda convert $run --to parquet -o $out"
if command -v hyperfine >/dev/null; then
    hyperfine --warmup 1 --runs 5 --prepare "rm -rf $out" "$convert" 2>&1 | grep -E "Time|Range"
else
    [[ -x /usr/bin/time ]] || { echo "neither hyperfine nor GNU time found" >&2; exit 2; }
    for i in 1 2 3 4 5; do
        rm -rf "$out"
        /usr/bin/time -f "  run $i: %e s (user %U s, system %S s, max RSS %M KB)" $convert 2>&1 | grep "run $i"
    done
fi
rm -rf "$out"
$convert 2>/dev/null
run_bytes=$(stat -c %s "$run")
total=0
for table in intervals buckets; do
    bytes=$(stat -c %s "$out/$table.parquet")
    total=$((total + bytes))
    awk -v n="$table.parquet" -v b="$bytes" -v r="$run_bytes" 'BEGIN { printf "  %-18s %10d bytes  %.2fx the run file\n", n, b, b / r }'
done
awk -v b="$total" -v r="$run_bytes" 'BEGIN { printf "  %-18s %10d bytes  %.2fx the run file\n", "both", b, b / r }'
