#!/usr/bin/env bash
# blame_cost.sh - what `--kernel blame`'s programs cost each operation, by
# the kernel's own accounting rather than by throughput.
#
# The throughput ratios of `COMPARE=blame bench/observer_effect.sh` drift
# with this VM's disk and scheduler by more than the 3 % they judge. This
# script asks the kernel instead: with `kernel.bpf_stats_enabled` on (put
# back as it was on every exit), it runs each configuration with
# `--kernel blame`, reads every attached program's run count and run time
# from the process's fdinfo one second into the run and one second before
# its end, and prints per configuration: the program runs and their time
# per operation, that time as a share of the operation's median latency,
# and the busiest programs. The statistics add two clock reads to each
# program run (about 45 ns here), which the last column takes out again.
#
# Configurations (bench/lab_configs.sh; by default timer-1ms, hiccup,
# disk-randread-qd1, net-tcp-same-cpu, net-tcp-two-cpus, net-udp-same-cpu,
# net-udp-two-cpus). Needs root and 2 CPUs; writes a 256 MiB file in
# $TMPDIR.
#
# usage: bench/blame_cost.sh [SECONDS=6] [CONFIG...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-6}
shift || true
((seconds >= 3)) || { echo "blame_cost.sh: SECONDS is at least 3" >&2; exit 2; }
cauda=${CAUDA:-target/release/cauda}
[[ -x $cauda ]] || cargo build --release --locked --quiet
cauda=$(realpath "$cauda")
stats_ns=${STATS_NS:-45}
tmp=$(mktemp -d)
serve_pid=
was=$(sysctl -n kernel.bpf_stats_enabled)
cleanup() {
    sysctl -q kernel.bpf_stats_enabled="$was"
    [[ -n $serve_pid ]] && kill "$serve_pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
port=7493
# shellcheck source=bench/lab_configs.sh
. bench/lab_configs.sh
if (($# == 0)); then
    set -- timer-1ms hiccup disk-randread-qd1 net-tcp-same-cpu net-tcp-two-cpus \
        net-udp-same-cpu net-udp-two-cpus
fi
keep_configs "$@"

# Every attached program of process $1: "id name run_time_ns run_cnt".
# One grep reads every fdinfo at once (each process started meanwhile
# would fault pages, which blame's fault programs count), then the names.
snapshot() {
    grep -H -E '^(prog_id|run_time_ns|run_cnt):' /proc/"$1"/fdinfo/* 2>/dev/null |
        awk -F'[:\t ]+' '{v[$1, $2] = $3; fds[$1] = 1}
            END {for (f in fds) if ((f, "run_cnt") in v) print v[f, "prog_id"], v[f, "run_time_ns"], v[f, "run_cnt"]}' |
        sort -u | while read -r id t c; do
            echo "$id $(bpftool prog show id "$id" 2>/dev/null | awk 'NR==1 {print $4}') $t $c"
        done
}

sysctl -q kernel.bpf_stats_enabled=1
printf '%-20s %10s %9s %10s %9s %9s  %s\n' config "ops/s" "runs/op" "ns/op" "p50" "share" "share less the statistics' clock reads; busiest programs (ns/op)"
for c in "${configs[@]}"; do
    IFS='|' read -r name tag serve cpus args <<<"$c"
    # shellcheck disable=SC2086
    [[ -n $serve ]] && start_serve $serve
    run="$tmp/$name.json"
    # shellcheck disable=SC2086
    taskset -c "$cpus" "$cauda" $args --kernel blame --runtime "${seconds}s" -q -o "$run" >/dev/null 2>&1 &
    pid=$!
    sleep 1
    t0=$(date +%s%N)
    snapshot "$pid" >"$tmp/a"
    sleep $((seconds - 2))
    snapshot "$pid" >"$tmp/b"
    t1=$(date +%s%N)
    wait "$pid"
    stop_serve
    python3 - "$name" "$tag" "$run" "$tmp/a" "$tmp/b" "$((t1 - t0))" "$stats_ns" <<'PY'
import json, sys
name, tag, path, a, b, span, stats_ns = sys.argv[1:8]
run = json.load(open(path))
s = next(x for x in run["summary"] if x["tag"] == tag)["summary"]
rate = s["count"] / (run["duration_ns"] / 1e9)
ops = rate * int(span) / 1e9
def read(p):
    out = {}
    for line in open(p):
        pid, prog, t, c = line.split()
        out[pid] = (prog, int(t), int(c))
    return out
before, after = read(a), read(b)
progs = []
for pid, (prog, t, c) in after.items():
    if pid in before:
        progs.append((prog, t - before[pid][1], c - before[pid][2]))
ns = sum(p[1] for p in progs) / ops
runs = sum(p[2] for p in progs) / ops
net = ns - runs * int(stats_ns)
busiest = sorted(progs, key=lambda p: -p[1])[:4]
print("%-20s %10.0f %9.2f %10.0f %9.1f %8.2f%%  %.2f%%; %s" % (
    name, rate, runs, ns, s["median"] / 1e3, 100 * ns / s["median"], 100 * net / s["median"],
    ", ".join("%s %.0f" % (p[0], p[1] / ops) for p in busiest)))
PY
done
