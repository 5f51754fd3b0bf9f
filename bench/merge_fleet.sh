#!/usr/bin/env bash
# merge_fleet.sh - what merging a fleet's runs costs, timed by hyperfine
# (3 warm-ups, 10 runs). Prints the inputs' size, the merged file's size
# and hyperfine's mean ± σ.
#
# Issue 19's figure: 10 hosts × 1 hour in ≤ 0.2 s. Two ways to give it:
#   bench/merge_fleet.sh hour.json 10          # N copies of one run
#   bench/merge_fleet.sh h1.json … h10.json    # distinct runs, as a fleet makes
# Copies merge into histograms of the same buckets as one input's; distinct
# hosts' runs fill more buckets, so their merged histograms are larger and
# take longer to encode. Ten distinct hours, started together:
#   at=$(( $(date +%s) + 15 )); for i in $(seq 10); do
#     cauda timer --runtime 1h --start-at $at --label host=h$i -o h$i.json & done; wait
#
# Needs: hyperfine (apt-get install hyperfine).
set -euo pipefail
[[ $# -ge 1 ]] || { echo "usage: bench/merge_fleet.sh RUN.json [N=10] | RUN.json RUN.json..." >&2; exit 2; }
if [[ $# -le 2 && ${2:-10} =~ ^[0-9]+$ ]]; then
    copies=${2:-10} runs=("$(realpath "$1")")
else
    copies= runs=()
    for run in "$@"; do runs+=("$(realpath "$run")"); done
fi
cd "$(dirname "$0")/.."
cauda=${CAUDA:-target/release/cauda}
[[ -x $cauda ]] || cargo build --release --locked --quiet
cauda=$(realpath "$cauda")
command -v hyperfine >/dev/null || { echo "hyperfine not found (apt-get install hyperfine)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ -n $copies ]]; then
    for ((i = 1; i <= copies; i++)); do cp "${runs[0]}" "$tmp/host$(printf %03d $i).json"; done
    what="$copies copies of ${runs[0]}"
else
    i=0
    for run in "${runs[@]}"; do i=$((i + 1)); cp "$run" "$tmp/host$(printf %03d $i).json"; done
    what="${#runs[@]} distinct runs (${runs[0]} …)"
fi
size=$(cat "$tmp"/host*.json | wc -c)
intervals=$(python3 -c 'import json,sys; print(sum(len(s["intervals"]) for f in sys.argv[1:] for s in json.load(open(f))["series"]))' "$tmp"/host*.json)
echo "# cauda $("$cauda" --version | cut -d' ' -f2); $what: $size bytes, $intervals series-intervals in all; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$cauda" merge "$tmp"/host*.json -o "$tmp/fleet.json" 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
echo "# merged: $(stat -c %s "$tmp/fleet.json") bytes"
hyperfine --warmup 3 --runs 10 --export-json "$tmp/h.json" \
    "$cauda merge $tmp/host*.json -o $tmp/fleet.json" 2>&1 | grep -E "Time|Range"
