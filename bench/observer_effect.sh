#!/usr/bin/env bash
# observer_effect.sh - does cauda's own observing move what it measures?
#
# For each configuration the lab runs, a run with cauda's observers as they
# are by default (the observer thread: host counters and the `self`
# heartbeat) and one with it off (the hidden --no-self-thread
# --no-host-counters; the collector always runs), alternating the order each round so drift of
# the machine favours neither. Each round gives a pair (default, off) run
# back to back; per configuration the script prints the medians over the
# rounds of p50, p99, p99.9 and throughput (values recorded per second) in
# both modes, and the median of the per-round ratios (default / off) with
# its distribution-free 95 % confidence interval, so the noise of this
# machine is shown beside the effect. It also prints where every thread
# ran — the probe's CPUs (taskset) and the observers' (the run file's
# `observers`) — and how often the observers woke per second.
#
# Configurations: timer 1 ms; hiccup; disk 4k randread QD1 and randwrite
# QD32; disk randread at 2000/s; net TCP and UDP ping-pong with client and
# server on the same CPU and on different CPUs; net TCP --gap 500us; net TCP
# at 10000/s. Needs 2 CPUs (0 and 1) and writes a 256 MiB file in $TMPDIR.
#
# Issue 16's goal for every row: p50 within 2 %, p99 within 5 %, p99.9
# within 10 % of observers-off; throughput within 1 %. The verdict per row:
# "within goal" when every median ratio is inside its band; "outside goal"
# when a ratio's whole CI lies outside its band; "unresolved" when a median
# is outside but its CI reaches into the band (this machine's run-to-run
# noise is larger than the effect).
#
# COMPARE=metrics measures the metrics endpoint instead (issue 19: at most
# 1 % of throughput and nothing in p99): "default" is then a run with
# --metrics-listen and a scraper asking for the protobuf page every second
# (curl; fifteen times as often as Prometheus's common 15 s),
# "off" the same run without the endpoint; the observers stay on in both.
# A "cost" row per configuration gives the CPU cauda's own threads used per
# second of run (the run files' `observers`) with and without it, and the
# endpoint's server thread alone: a probe cannot lose more throughput to
# the endpoint than the CPU it takes.
#
# COMPARE=blame measures `--kernel blame` (issue 33: throughput at least
# 0.97x, p50 within 2 %, p99 within 5 %): "default" is a run with it, "off"
# the same run without; COMPARE=block measures `--kernel block` the same
# way. Blame refuses disk at QD32 (several operations in flight on one
# thread): that row is left out of its runs.
#
# COMPARE=peers prices blame against the peers a user would run instead to
# see part of what it sees, on the same host in the same rounds: "default"
# is a run with --kernel blame, "off" the same run without it while
# libbpf-tools' runqslower -P, hardirqs and softirqs (system-wide, as
# their users run them; started before the run and attached, stopped
# after) watch the run queue, the interrupts and the softirqs. A ratio of
# 1 means blame costs what those three cost together; blame's goal bands
# are shown. COMPARE=peers-alone prices the peers themselves: "default"
# is the run under them, "off" the run alone.
#
# usage: [COMPARE=observers|metrics|blame|block|peers|peers-alone] bench/observer_effect.sh [ROUNDS=10] [RUNTIME=3s] [CONFIG...]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-10}
runtime=${2:-3s}
shift 2 || shift $#
cauda=${CAUDA:-target/release/cauda}
[[ -x $cauda ]] || cargo build --release --locked --quiet
cauda=$(realpath "$cauda")
tmp=$(mktemp -d)
serve_pid=
compare=${COMPARE:-observers}
metrics_port=7492
scraper_pid=
peer_pids=()
cleanup() {
    [[ -n $serve_pid ]] && kill "$serve_pid" 2>/dev/null
    [[ -n $scraper_pid ]] && kill "$scraper_pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
port=7491
# shellcheck source=bench/lab_configs.sh
. bench/lab_configs.sh
peers=(runqslower hardirqs softirqs)
if [[ $compare == peers* ]]; then
    for p in "${peers[@]}"; do
        command -v "$p" >/dev/null || { echo "$p not found (apt-get install libbpf-tools)" >&2; exit 2; }
    done
    command -v bpftool >/dev/null || { echo "bpftool not found (apt-get install bpftool)" >&2; exit 2; }
fi
# Starts the peers and waits until bpftool lists a program of each by
# name (up to 100 tries); a peer that exited or never attached stops the
# script (exit 2) with its output.
start_peers() {
    runqslower -P >"$tmp/runqslower.out" 2>&1 &
    peer_pids+=($!)
    hardirqs >"$tmp/hardirqs.out" 2>&1 &
    peer_pids+=($!)
    softirqs >"$tmp/softirqs.out" 2>&1 &
    peer_pids+=($!)
    # (`one` runs in a pipeline's subshell: its own exit stops them.)
    trap stop_peers EXIT
    local names=(sched_switch irq_handler_exit_btf softirq_exit_btf) listed attached
    for _ in $(seq 100); do
        listed=$(bpftool prog list 2>/dev/null || true)
        attached=0
        for n in "${names[@]}"; do
            grep -q " name $n " <<<"$listed" && attached=$((attached + 1))
        done
        ((attached == ${#names[@]})) && break
        sleep 0.1
    done
    for i in "${!peers[@]}"; do
        kill -0 "${peer_pids[$i]}" 2>/dev/null && continue
        echo "observer_effect.sh: ${peers[$i]} exited (root?): $(head -c 300 "$tmp/${peers[$i]}.out")" >&2
        exit 2
    done
    if ((attached < ${#names[@]})); then
        echo "observer_effect.sh: bpftool did not list the programs of ${peers[*]} (${names[*]}) after 100 tries" >&2
        exit 2
    fi
    sleep 0.3
}
stop_peers() {
    ((${#peer_pids[@]})) || return 0
    kill -INT "${peer_pids[@]}" 2>/dev/null || true
    wait "${peer_pids[@]}" 2>/dev/null || true
    peer_pids=()
}
if [[ $compare == blame || $compare == peers* ]]; then
    kept=()
    for c in "${configs[@]}"; do [[ $c == *"--iodepth 32"* ]] || kept+=("$c"); done
    configs=("${kept[@]}")
fi
keep_configs "$@"

one() { # config mode round → one line of figures
    local name tag serve cpus args run
    IFS='|' read -r name tag serve cpus args <<<"$1"
    local mode=$2 round=$3 off=
    if [[ $compare == metrics ]]; then
        [[ $mode == default ]] && off="--metrics-listen 127.0.0.1:$metrics_port"
    elif [[ $compare == blame || $compare == block ]]; then
        [[ $mode == default ]] && off="--kernel $compare"
    elif [[ $compare == peers ]]; then
        [[ $mode == default ]] && off="--kernel blame"
        [[ $mode == off ]] && start_peers
    elif [[ $compare == peers-alone ]]; then
        [[ $mode == default ]] && start_peers
    else
        [[ $mode == off ]] && off="--no-self-thread --no-host-counters"
    fi
    run="$tmp/${name//\//_}-$mode-$round.json"
    # shellcheck disable=SC2086
    taskset -c "$cpus" "$cauda" $args --runtime "$runtime" -q -o "$run" $off >/dev/null 2>&1
    stop_peers
    "$cauda" analyze "$run" --json --percentiles 50,99,99.9 | python3 -c '
import json, sys
name, tag, mode, rnd, serve, cpus, path = sys.argv[1:8]
doc = json.load(sys.stdin)
run = json.load(open(path))
s = next(x for x in doc["inputs"][0]["series"] if x["tag"] == tag)["summary"]
p = s["percentiles"]
rate = s["count"] / (run["duration_ns"] / 1e9)
where = "probe@" + cpus + (",serve@" + serve.split()[0] if serve else "")
obs = ",".join("%s@%s" % (o["thread"].removeprefix("cauda-"), "+".join(map(str, o["cpus"])))
               for o in run.get("observers", []))
seconds = run["duration_ns"] / 1e9
wakeups = sum(o.get("wakeups", 0) for o in run.get("observers", [])) / seconds
cpu = lambda os: sum(o["cpu_ns"] for o in os) / 1e6 / seconds
endpoint = [o for o in run.get("observers", []) if o["thread"] == "cauda-metrics"]
print(name, mode, rnd, "%.3f" % (p["50"] / 1e3), "%.3f" % (p["99"] / 1e3),
      "%.3f" % (p["99.9"] / 1e3), "%.1f" % rate, where, obs or "-", "%.1f" % wakeups,
      "%.4f" % cpu(run.get("observers", [])), "%.4f" % cpu(endpoint))
' "$name" "$tag" "$mode" "$round" "$serve" "$cpus" "$run"
}

if [[ $compare == metrics ]]; then
    command -v curl >/dev/null || { echo "curl not found (apt-get install curl)" >&2; exit 2; }
    # Every second, whether or not a run is listening (a refused connection
    # costs the machine next to nothing, in both modes alike).
    while :; do
        curl -s -o /dev/null -m 2 -H 'Accept: application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited' \
            "http://127.0.0.1:$metrics_port/metrics" || true
        sleep 1
    done &
    scraper_pid=$!
fi
echo "# cauda $("$cauda" --version | cut -d' ' -f2), $rounds rounds of $runtime, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); comparing: $compare ($(case $compare in peers) echo "default = --kernel blame, off = without it under ${peers[*]}" ;; peers-alone) echo "default = under ${peers[*]}, off = alone" ;; *) echo "default = with it, off = without" ;; esac))"
echo "# config mode round p50_us p99_us p99.9_us values/s placement observers wakeups/s observers_cpu_ms/s endpoint_cpu_ms/s"
for c in "${configs[@]}"; do
    serve=$(cut -d'|' -f3 <<<"$c")
    [[ -n $serve ]] && start_serve $serve
    for ((r = 1; r <= rounds; r++)); do
        if ((r % 2)); then order=(default off); else order=(off default); fi
        for mode in "${order[@]}"; do
            one "$c" "$mode" "$r" | tee -a "$tmp/all"
        done
    done
    stop_serve
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$tmp/all" "$compare" <<'PY'
import math, statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
compare = sys.argv[2]
configs = list(dict.fromkeys(r[0] for r in rows))
metrics = ["p50", "p99", "p99.9", "values/s"]
goal = {"p50": 0.02, "p99": 0.05, "p99.9": 0.10, "values/s": 0.01}
if compare in ("blame", "block", "peers", "peers-alone"):
    # Issue 33: throughput at least 0.97x, p50 within 2 %, p99 within 5 %;
    # p99.9 is not part of its goal (shown against 10 %).
    goal["values/s"] = 0.03

def median_ci(xs, level=0.95):
    """The median and a distribution-free CI: order statistics k and n+1-k."""
    xs = sorted(xs)
    n = len(xs)
    k = 0
    for j in range(1, n // 2 + 1):
        tail = sum(math.comb(n, i) for i in range(j)) / 2 ** n
        if 1 - 2 * tail >= level:
            k = j
    lo, hi = (xs[k - 1], xs[n - k]) if k else (float("nan"), float("nan"))
    return statistics.median(xs), lo, hi

print()
print("%-22s %-8s %19s %19s %19s %19s  %s" % ("config", "mode", "p50 µs", "p99 µs", "p99.9 µs", "values/s", "placement / observers (wake-ups/s)"))
verdicts = {}
for c in configs:
    pairs = {}
    for r in rows:
        if r[0] == c:
            pairs.setdefault(r[2], {})[r[1]] = r
    pairs = [p for p in pairs.values() if len(p) == 2]
    for mode in ("default", "off"):
        rs = [p[mode] for p in pairs]
        med = [statistics.median(float(r[i]) for r in rs) for i in range(3, 7)]
        wake = statistics.median(float(r[9]) for r in rs)
        print("%-22s %-8s %19.2f %19.2f %19.2f %19.0f  %s %s (%.1f/s)" % (c, mode, *med, rs[-1][7], rs[-1][8], wake))
    cells, verdict = [], "within goal"
    for i, m in enumerate(metrics):
        ratios = [float(p["default"][3 + i]) / float(p["off"][3 + i]) for p in pairs if float(p["off"][3 + i])]
        med, lo, hi = median_ci(ratios)
        cells.append("%.3f [%.3f-%.3f]" % (med, lo, hi))
        band = (1 - goal[m], 1 + goal[m])
        if not band[0] <= med <= band[1]:
            outside = hi < band[0] or lo > band[1]
            if outside:
                verdict = "OUTSIDE goal"
            elif verdict == "within goal":
                verdict = "unresolved"
    verdicts[c] = verdict
    print("%-22s %-8s %19s %19s %19s %19s  %s" % (c, "ratio", *cells, verdict))
    # What cauda's own threads used, per second of run: the endpoint's
    # server, and all of them (the collector builds the pages) with and
    # without it. A probe cannot lose more throughput to them than the
    # CPU they take from it.
    if compare != "metrics":
        continue
    use = {m: statistics.median(float(p[m][10]) for p in pairs) for m in ("default", "off")}
    served = statistics.median(float(p["default"][11]) for p in pairs)
    print("%-22s %-8s threads' CPU %.3f ms/s with, %.3f without (%+.3f); the endpoint's thread %.3f ms/s (%.4f %% of one CPU)" % (
        c, "cost", use["default"], use["off"], use["default"] - use["off"], served, served / 10))
print()
print("rounds per row: %d; ratio = median of per-round default/off [95%% CI]" % min(
    sum(1 for r in rows if r[0] == c and r[1] == "off") for c in configs))
print("within goal: %d of %d rows; unresolved: %d; outside: %d" % (
    sum(v == "within goal" for v in verdicts.values()), len(verdicts),
    sum(v == "unresolved" for v in verdicts.values()),
    sum(v == "OUTSIDE goal" for v in verdicts.values())))
PY
