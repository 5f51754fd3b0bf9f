#!/usr/bin/env bash
# counters_overhead.sh - what observing the host costs a timer run.
#
# Runs `cauda timer` side by side in three modes, alternating the order each
# round so drift of the machine favours none:
#   on        the default: host counters sampled each interval + the `self` heartbeat
#   counters  host counters only (--no-self-thread: no `self` heartbeat)
#   off       neither (--no-host-counters --no-self-thread)
# and prints per round and as medians: the process's CPU time (user+sys,
# from /usr/bin/time) as a share of one CPU over the wall time, and the
# timer's p50, p99 and max wake-up latency (cauda analyze --json).
#
# The counters' own cost is `counters` minus `off`; the `self` heartbeat's is
# `on` minus `counters`.
#
# usage: bench/counters_overhead.sh [ROUNDS=5] [DURATION=10s] [INTERVAL=1ms]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
duration=${2:-10s}
interval=${3:-1ms}
cauda=${CAUDA:-target/release/cauda}
[[ -x $cauda ]] || cargo build --release --locked --quiet
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

declare -A flags=(
    [on]=""
    [counters]="--no-self-thread"
    [off]="--no-host-counters --no-self-thread"
)
modes=(on counters off)

one() { # mode round → "mode round cpu% p50us p99us maxus"
    local mode=$1 round=$2 run="$tmp/$1-$2.json"
    # shellcheck disable=SC2086
    /usr/bin/time -f "%U %S %e" -o "$tmp/time" \
        "$cauda" timer --interval "$interval" --runtime "$duration" -q -o "$run" ${flags[$mode]} >/dev/null 2>&1
    read -r user sys wall <"$tmp/time"
    "$cauda" analyze "$run" --json --percentiles 50,99 | python3 -c '
import json, sys
mode, rnd, user, sys_, wall = sys.argv[1:6]
doc = json.load(sys.stdin)
s = next(x for x in doc["inputs"][0]["series"] if x["tag"] == "wakeup")["summary"]
cpu = (float(user) + float(sys_)) / float(wall) * 100
p = s["percentiles"]
print(mode, rnd, "%.3f" % cpu, "%.2f" % (p["50"] / 1e3), "%.2f" % (p["99"] / 1e3), "%.1f" % (s["max"] / 1e3))
' "$mode" "$round" "$user" "$sys" "$wall"
}

echo "# cauda timer --interval $interval --runtime $duration, $rounds rounds, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# mode round cpu% p50_us p99_us max_us"
for ((r = 1; r <= rounds; r++)); do
    if ((r % 2)); then order=("${modes[@]}"); else order=(off counters on); fi
    for mode in "${order[@]}"; do
        one "$mode" "$r" | tee -a "$tmp/all"
    done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$tmp/all" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
med = {}
for mode in ("on", "counters", "off"):
    r = [x for x in rows if x[0] == mode]
    med[mode] = [statistics.median(float(x[i]) for x in r) for i in (2, 3, 4, 5)]
    print(f"median {mode:8s} cpu {med[mode][0]:.3f} %  p50 {med[mode][1]:.2f} us  p99 {med[mode][2]:.2f} us  max {med[mode][3]:.1f} us")
c, o, n = med["counters"], med["off"], med["on"]
print(f"host counters: +{c[0]-o[0]:.3f} % of a CPU; p50 ratio {c[1]/o[1]:.3f}, p99 ratio {c[2]/o[2]:.3f} (counters/off)")
print(f"self heartbeat: +{n[0]-c[0]:.3f} % of a CPU; p50 ratio {n[1]/c[1]:.3f}, p99 ratio {n[2]/c[2]:.3f} (on/counters)")
PY
