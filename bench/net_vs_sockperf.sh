#!/usr/bin/env bash
# net_vs_sockperf.sh - side-by-side loopback round-trip benchmark:
#   `cauda net` + `cauda serve`  vs  `sockperf` (client + server), qperf for reference
#
# 1. Ping-pong, 64-byte messages, TCP then UDP. Rounds alternate which tool
#    goes first. sockperf prints half the round trip: its p50/p99 are doubled
#    here to compare with cauda's full-RTT `rtt` series. qperf prints only a
#    mean of half round trips: doubled, for reference.
# 2. Rate mode, 1000 msg/s, with the responder frozen (SIGSTOP) for 300 ms:
#    cauda must account for every message and show the backlog (p99 >= 100 ms);
#    sockperf under-load (--reply-every 1) is run the same way for contrast.
#
# Every server and client is pinned with taskset (the same layout for both
# tools; -p). The report goes to stdout, progress to stderr.
#
# Needs: sockperf, qperf (apt-get install sockperf qperf), python3, taskset.

set -euo pipefail

DURATION_S=${DURATION_S:-5}
ROUNDS=${ROUNDS:-3}
PLACEMENT=${PLACEMENT:-same}
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
CAUDA=${CAUDA:-$REPO_ROOT/target/release/cauda}
ENGINE=${ENGINE:-}

usage() {
    cat <<EOF
Usage: $0 [options]
  -d SECONDS   duration of each ping-pong run          [DURATION_S=$DURATION_S]
  -r N         rounds                                  [ROUNDS=$ROUNDS]
  -p MODE      CPU placement: same (server and client on CPU 1),
               split (server CPU 0, client CPU 1), none  [PLACEMENT=$PLACEMENT]
  -b PATH      cauda binary                            [CAUDA=$CAUDA]
  -e ENGINE    cauda serve --engine (threads or epoll) [ENGINE=default]
EOF
}

while getopts "d:r:p:b:e:h" opt; do
    case $opt in
    d) DURATION_S=$OPTARG ;;
    r) ROUNDS=$OPTARG ;;
    p) PLACEMENT=$OPTARG ;;
    b) CAUDA=$OPTARG ;;
    e) ENGINE=$OPTARG ;;
    *) usage; exit 2 ;;
    esac
done

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
for tool in sockperf qperf python3 taskset; do
    command -v "$tool" >/dev/null || { echo "$tool not found (apt-get install sockperf qperf)" >&2; exit 2; }
done
if [[ ! -x $CAUDA ]]; then
    log "building cauda (release)"
    (cd "$REPO_ROOT" && cargo build --release --locked --quiet)
fi

case $PLACEMENT in
same) SRV=(taskset -c 1); CLI=(taskset -c 1); CLI_CPUS=(--cpus 1) ;;
split) SRV=(taskset -c 0); CLI=(taskset -c 1); CLI_CPUS=(--cpus 1) ;;
none) SRV=(); CLI=(); CLI_CPUS=() ;;
*) usage; exit 2 ;;
esac
ENGINE_ARGS=()
[[ -n $ENGINE ]] && ENGINE_ARGS=(--engine "$ENGINE")

WORK=$(mktemp -d)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill -CONT "$pid" 2>/dev/null || true; kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
start_bg() { local name=$1; shift; "$@" >"$WORK/$name.log" 2>&1 & LAST_PID=$!; PIDS+=("$LAST_PID"); }

# cauda run file -> "p50_us p99_us count max_us"
cauda_figures() {
    python3 - "$1" "${2:-rtt}" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = next(x["summary"] for x in d["summary"] if x["tag"] == sys.argv[2])
p = s["percentiles"]
print(f'{p["50"]/1e3:.3f} {p["99"]/1e3:.3f} {s["count"]} {s["max"]/1e3:.3f}')
PY
}
# sockperf stdout -> "2*p50_us 2*p99_us" (sockperf prints RTT/2)
sockperf_figures() {
    python3 - "$1" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
def pct(q):
    m = re.search(r"percentile %s = +([0-9.]+)" % re.escape(q), t)
    return 2 * float(m.group(1)) if m else float("nan")
print(f'{pct("50.000"):.3f} {pct("99.000"):.3f}')
PY
}
median() { python3 -c 'import sys,statistics; v=[float(x) for x in sys.argv[1:]]; print(f"{statistics.median(v):.3f}")' "$@"; }

echo "cauda net vs sockperf (loopback)"
echo "================================"
echo "date:        $(date -u '+%F %T') UTC"
echo "host kernel: $(uname -r)"
echo "cpu model:   $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') ($(nproc) CPUs online)"
echo "load avg:    $(cut -d' ' -f1-3 /proc/loadavg) at start"
echo "sockperf:    $(sockperf --version 2>&1 | head -1), $(qperf --version 2>&1 | head -1)"
echo "cauda:       $("$CAUDA" --version) ($CAUDA)${ENGINE:+, serve --engine $ENGINE}"
echo "placement:   $PLACEMENT; ${DURATION_S} s per run, $ROUNDS round(s), 64-byte messages both ways"
echo "commands:    cauda serve --listen A [--udp]; cauda net --connect A --proto P --size 64 --runtime ${DURATION_S}s ${CLI_CPUS[*]}"
echo "             sockperf server -i 127.0.0.1 -p N [--tcp]; sockperf ping-pong -i 127.0.0.1 -p N [--tcp] -m 64 -t $DURATION_S"
echo "             qperf 127.0.0.1 -m 64 -t $DURATION_S tcp_lat udp_lat"
echo

# --- 1. ping-pong -------------------------------------------------------------
declare -A PORT
for proto in tcp udp; do
    PORT[cauda_$proto]=$(free_port)
    PORT[sockperf_$proto]=$(free_port)
    udp_flag=(); sp_flag=(--tcp)
    [[ $proto == udp ]] && { udp_flag=(--udp); sp_flag=(); }
    start_bg "cauda-serve-$proto" "${SRV[@]}" "$CAUDA" serve --listen "127.0.0.1:${PORT[cauda_$proto]}" "${udp_flag[@]}" "${ENGINE_ARGS[@]}"
    start_bg "sockperf-server-$proto" "${SRV[@]}" sockperf server -i 127.0.0.1 -p "${PORT[sockperf_$proto]}" "${sp_flag[@]}"
done
start_bg qperf-server "${SRV[@]}" qperf
sleep 1

echo "Per run, microseconds, full round trip (sockperf and qperf doubled):"
printf '%-6s %-5s %-9s %10s %10s\n' round proto tool p50 p99
declare -A P50 P99
for round in $(seq 1 "$ROUNDS"); do
    for proto in tcp udp; do
        if (( round % 2 )); then order=(cauda sockperf); else order=(sockperf cauda); fi
        for tool in "${order[@]}"; do
            log "round $round $proto $tool"
            if [[ $tool == cauda ]]; then
                "${CLI[@]}" "$CAUDA" net --connect "127.0.0.1:${PORT[cauda_$proto]}" --proto "$proto" \
                    --size 64 --runtime "${DURATION_S}s" -q -o "$WORK/run.json" --force 2>/dev/null
                read -r p50 p99 _ _ < <(cauda_figures "$WORK/run.json")
            else
                sp_flag=(--tcp); [[ $proto == udp ]] && sp_flag=()
                "${CLI[@]}" sockperf ping-pong -i 127.0.0.1 -p "${PORT[sockperf_$proto]}" "${sp_flag[@]}" \
                    -m 64 -t "$DURATION_S" >"$WORK/sp.txt" 2>&1
                read -r p50 p99 < <(sockperf_figures "$WORK/sp.txt")
            fi
            printf '%-6s %-5s %-9s %10s %10s\n' "$round" "$proto" "$tool" "$p50" "$p99"
            P50[$proto,$tool]+=" $p50"; P99[$proto,$tool]+=" $p99"
        done
    done
done
"${CLI[@]}" qperf 127.0.0.1 -m 64 -t "$DURATION_S" tcp_lat udp_lat >"$WORK/qperf.txt" 2>&1 || true
echo
echo "Medians over rounds (us):"
printf '%-5s %12s %12s %8s %12s %12s %8s\n' proto "cauda p50" "sockperf p50" ratio "cauda p99" "sockperf p99" ratio
for proto in tcp udp; do
    c50=$(median ${P50[$proto,cauda]}); s50=$(median ${P50[$proto,sockperf]})
    c99=$(median ${P99[$proto,cauda]}); s99=$(median ${P99[$proto,sockperf]})
    printf '%-5s %12s %12s %8s %12s %12s %8s\n' "$proto" "$c50" "$s50" \
        "$(python3 -c "print(f'{$c50/$s50:.3f}')")" "$c99" "$s99" "$(python3 -c "print(f'{$c99/$s99:.3f}')")"
done
python3 - "$WORK/qperf.txt" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
for test in ("tcp_lat", "udp_lat"):
    m = re.search(test + r":\s*latency\s*=\s*([0-9.]+)\s*(us|ms|ns)", t)
    if m:
        v = float(m.group(1)) * {"us": 1, "ms": 1e3, "ns": 1e-3}[m.group(2)]
        print(f"qperf {test}: mean {v:.2f} us as printed (RTT/2) -> {2*v:.2f} us round trip (reference)")
    else:
        print(f"qperf {test}: no figure (see qperf output)")
PY
for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
wait 2>/dev/null || true
PIDS=()

# --- 2. rate mode with a frozen responder --------------------------------------
echo
echo "Rate mode: 1000 msg/s for 5 s, responder frozen (SIGSTOP) 300 ms at t = 2 s"
freeze() { # freeze PID: at 2 s, stop it for 300 ms
    sleep 2; kill -STOP "$1"; sleep 0.3; kill -CONT "$1"
}
for proto in tcp udp; do
    port=$(free_port)
    udp_flag=(); [[ $proto == udp ]] && udp_flag=(--udp)
    start_bg "cauda-serve-rate-$proto" "${SRV[@]}" "$CAUDA" serve --listen "127.0.0.1:$port" "${udp_flag[@]}" "${ENGINE_ARGS[@]}"
    server=$LAST_PID
    sleep 0.5
    freeze "$server" &
    freezer=$!
    "${CLI[@]}" "$CAUDA" net --connect "127.0.0.1:$port" --proto "$proto" --size 64 --rate 1000/s \
        --runtime 5s -q -o "$WORK/rate.json" --force 2>/dev/null
    wait "$freezer" 2>/dev/null || true
    kill "$server"; wait "$server" 2>/dev/null || true
    python3 - "$WORK/rate.json" "$proto" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
f = d["faults"]
s = {x["tag"]: x["summary"] for x in d["summary"]}
r, sv = s["rtt"], s["service"]
ok_acc = f["answered"] + f["lost"] + f["in_flight"] == f["sent"] and r["count"] == f["sent"]
ok_p99 = r["percentiles"]["99"] >= 100e6
print(f'cauda {sys.argv[2]}: sent {f["sent"]}, answered {f["answered"]}, lost {f["lost"]}, in flight {f["in_flight"]}; '
      f'rtt n={r["count"]} p50 {r["percentiles"]["50"]/1e3:.1f} us, p99 {r["percentiles"]["99"]/1e6:.1f} ms, '
      f'max {r["max"]/1e6:.1f} ms; service p99 {sv["percentiles"]["99"]/1e3:.1f} us, max {sv["max"]/1e6:.1f} ms')
print(f'  every message accounted for: {"yes" if ok_acc else "NO"}; p99 >= 100 ms: {"yes" if ok_p99 else "NO"}')
PY
    port=$(free_port)
    sp_flag=(--tcp); [[ $proto == udp ]] && sp_flag=()
    start_bg "sockperf-rate-$proto" "${SRV[@]}" sockperf server -i 127.0.0.1 -p "$port" "${sp_flag[@]}"
    server=$LAST_PID
    sleep 0.5
    freeze "$server" &
    freezer=$!
    "${CLI[@]}" sockperf under-load -i 127.0.0.1 -p "$port" "${sp_flag[@]}" -m 64 --mps 1000 \
        --reply-every 1 -t 5 >"$WORK/ul.txt" 2>&1 || true
    wait "$freezer" 2>/dev/null || true
    kill "$server"; wait "$server" 2>/dev/null || true
    python3 - "$WORK/ul.txt" "$proto" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
g = lambda pat: (re.search(pat, t) or [None, "?"])[1]
sent = g(r"\[Valid Duration\].*?SentMessages=(\d+)")
received = g(r"\[Valid Duration\].*?ReceivedMessages=(\d+)")
observations = g(r"Total (\d+) observations")
dropped = g(r"(# dropped messages = \d+)")
p50 = g(r"percentile 50.000 = +([0-9.]+)")
p99 = g(r"percentile 99.000 = +([0-9.]+)")
mx = g(r"<MAX> observation = +([0-9.]+)")
print(f"sockperf under-load {sys.argv[2]}: valid sent {sent}, received {received}, observations {observations}, "
      f"{dropped}; printed (RTT/2) p50 {p50} us, p99 {p99} us, max {mx} us")
PY
done
echo
echo "load avg:    $(cut -d' ' -f1-3 /proc/loadavg) at end"
