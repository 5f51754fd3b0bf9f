#!/usr/bin/env bash
# merge_fleet.sh - what merging a fleet's runs costs: N copies of one run
# file (as from N hosts that ran the same hour), merged by `cauda merge`,
# timed by hyperfine (3 warm-ups, 10 runs). Prints the input size, the
# merged file's size and hyperfine's mean ± σ.
#
# Issue 19's figure: 10 hosts × 1 hour in ≤ 0.2 s. Give it a 1-hour run:
#   cauda timer --runtime 1h -o hour.json      # one hour, 1 s intervals
#   bench/merge_fleet.sh hour.json 10
#
# Needs: hyperfine (apt-get install hyperfine).
set -euo pipefail
cd "$(dirname "$0")/.."
run=${1:?usage: bench/merge_fleet.sh RUN.json [N=10]}
n=${2:-10}
cauda=${CAUDA:-target/release/cauda}
[[ -x $cauda ]] || cargo build --release --locked --quiet
cauda=$(realpath "$cauda")
command -v hyperfine >/dev/null || { echo "hyperfine not found (apt-get install hyperfine)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for ((i = 1; i <= n; i++)); do cp "$run" "$tmp/host$i.json"; done
intervals=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(len(s["intervals"]) for s in d["series"]))' "$run")
echo "# cauda $("$cauda" --version | cut -d' ' -f2); $n copies of $run ($(stat -c %s "$run") bytes, $intervals series-intervals each); $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$cauda" merge "$tmp"/host*.json -o "$tmp/fleet.json" 2>/dev/null
echo "# merged: $(stat -c %s "$tmp/fleet.json") bytes"
hyperfine --warmup 3 --runs 10 --export-json "$tmp/h.json" \
    "$cauda merge $tmp/host*.json -o $tmp/fleet.json" 2>&1 | grep -E "Time|Range"
