#!/usr/bin/env bash
# bench/blame_vs_bpftrace.sh - the run-queue component of `--kernel blame`
# against bpftrace measuring the same thread's run-queue waits in the same
# run (rtla's timerlat tracer is not in this machine's kernel).
#
# A SCHED_FIFO hog (busy 3 ms in every 10 ms) on CPU 1 makes the timer's
# wake-ups wait on the run queue; bpftrace records, for the timer's thread,
# each wait from sched_waking (and sched_wakeup) to the sched_switch that
# runs it; cauda (default configuration, plus --kernel blame) keeps the 100
# slowest wake-ups' vectors. For each of them, the run-queue waits
# (woken or preempted -> running) bpftrace saw end inside its window,
# clamped to it, are added up, and the script prints how far cauda's wait
# lies from them, and how many are within 2 us (a wake-up due while an
# earlier one still waited has no wait of its own: a backlog, counted
# apart). cauda's wait is the operation's `runnable_ns`, the whole time
# it was runnable, which its vector splits into `run_queue` and what ran
# on the CPU meanwhile (interrupts, the idle exit, steal); the net
# `run_queue` is compared too.
#
# A third reference is the kernel's own accounting of the same waits:
# the growth of the thread's `sched_info.run_delay` (what
# /proc/PID/schedstat and delay accounting report) from one switch out to
# the next, read by bpftrace at the switch out; the kernel stamps a wait
# with its run-queue clock at the enqueue and at the start of the switch,
# where the two tools stamp when their programs run. The gap between two
# of bpftrace's own programs on one switch is printed too: the resolution
# of its stamps.
#
# Usage: bench/blame_vs_bpftrace.sh [CAUDA] [RUNTIME]; needs root, bpftrace,
# python3, chrt, taskset. Prints the figures; writes nothing outside a
# temporary directory.
set -euo pipefail
cauda=${1:-target/release/cauda}
runtime=${2:-15s}
command -v bpftrace >/dev/null || { echo "needs bpftrace (apt-get install bpftrace)" >&2; exit 2; }
[[ $(id -u) == 0 ]] || { echo "needs root" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'kill $hog $trace 2>/dev/null || true; [[ -n ${KEEP:-} ]] || rm -rf "$tmp"' EXIT
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing

cat >"$tmp/hog.py" <<'EOF'
import time
end = time.monotonic() + 120
while time.monotonic() < end:
    busy = time.monotonic() + 0.003
    while time.monotonic() < busy: pass
    time.sleep(0.007)
EOF
cat >"$tmp/runq.bt" <<'EOF'
tracepoint:sched:sched_waking /args->comm == "cauda-timer-0"/ { @waking[args->pid] = nsecs; }
tracepoint:sched:sched_wakeup /args->comm == "cauda-timer-0"/ { @wakeup[args->pid] = nsecs; }
tracepoint:sched:sched_switch /args->prev_comm == "cauda-timer-0" && args->prev_state == 0/ {
    @waking[args->prev_pid] = nsecs; @wakeup[args->prev_pid] = nsecs;
}
tracepoint:sched:sched_switch /args->next_comm == "cauda-timer-0" && @waking[args->next_pid]/ {
    @wait[nsecs] = (@waking[args->next_pid], @wakeup[args->next_pid]);
    delete(@waking[args->next_pid]); delete(@wakeup[args->next_pid]);
}
tracepoint:sched:sched_switch /args->next_comm == "cauda-timer-0"/ { @lastin[args->next_pid] = nsecs; }
tracepoint:sched:sched_switch /args->prev_comm == "cauda-timer-0"/ {
    $delay = curtask->sched_info.run_delay;
    if (@delay[args->prev_pid] > 0) {
        @kernel[@lastin[args->prev_pid]] = $delay - @delay[args->prev_pid];
    }
    @delay[args->prev_pid] = $delay;
}
EOF
taskset -c 1 chrt -f 10 python3 "$tmp/hog.py" & hog=$!
# cauda first, bpftrace a second later: programs on one tracepoint run in
# the order they were attached, and each stamps its time when it runs, so
# the later one's stamps come after the earlier one's work. cauda's
# programs take a fraction of a microsecond; bpftrace's (string compares,
# hash maps of tuples) about 3 us, which attached first put into every
# wait cauda measured. Only wake-ups due after bpftrace's first recorded
# wait are compared.
"$cauda" timer --cpus 1 --runtime "$runtime" --kernel blame -q -o "$tmp/run.json" & run=$!
sleep 1
BPFTRACE_MAP_KEYS_MAX=200000 bpftrace "$tmp/runq.bt" >"$tmp/waits.txt" 2>"$tmp/bpftrace.err" & trace=$!
wait $run
kill -INT $trace; wait $trace 2>/dev/null || true
kill $hog 2>/dev/null || true

python3 - "$tmp/run.json" "$tmp/waits.txt" <<'EOF'
import bisect, json, statistics, sys
run = json.load(open(sys.argv[1]))
blame = run["blame"]
waits, kernel = [], []
import re
for line in open(sys.argv[2]):
    # @wait[SWITCH]: (WAKING, WAKEUP), printed when bpftrace ends: nothing is
    # printed per event, so bpftrace's own cost stays out of the timings.
    m = re.match(r"@wait\[(\d+)\]: \((\d+), (\d+)\)", line)
    if m:
        switch, waking, wakeup = (int(g) for g in m.groups())
        waits.append((waking, wakeup, switch))
    m = re.match(r"@kernel\[(\d+)\]: (\d+)", line)
    if m:
        kernel.append((int(m.group(1)), int(m.group(2))))
waits.sort(key=lambda w: w[2])
switches = [w[2] for w in waits]
kernel.sort()
kernel_at = [k[0] for k in kernel]
gaps = []


def kernel_wait(switch):
    """The kernel's wait for the switch bpftrace stamped at `switch` (its
    other program stamped the same switch a little later)."""
    i = bisect.bisect_left(kernel_at, switch)
    if i == len(kernel_at) or kernel_at[i] - switch > 50_000:
        return None
    gaps.append(kernel_at[i] - switch)
    return kernel[i][1]
t0 = blame["monotonic_start_ns"]
single, backlog, unmatched, diffs_waking, diffs_wakeup, diffs_with = 0, 0, 0, [], [], []
diffs_runnable, diffs_runnable_waking = [], []
diffs_kernel, diffs_bpftrace_kernel = [], []
rows = []
attached = switches[0] if switches else float("inf")
before = 0
for op in blame["slowest"]:
    start = t0 + op["start_ns"]
    end = start + op["latency_ns"]
    if start <= attached:
        before += 1
        continue
    # The run-queue waits (woken or preempted -> running) that ended
    # inside the operation's window, clamped to it.
    lo, hi = bisect.bisect_left(switches, start), bisect.bisect_right(switches, end)
    inside = waits[lo:hi]
    if not inside:
        # Due while the thread still ran for an earlier wake-up.
        backlog += 1
        continue
    waking = sum(w[2] - max(w[0], start) for w in inside)
    wakeup = sum(w[2] - max(w[1], start) for w in inside)
    ours = op["causes"].get("run_queue", 0)
    waited = op.get("runnable_ns", 0)
    # What interrupted the wait is its own cause in a vector, but part of
    # bpftrace's wait.
    interrupted = sum(v for k, v in op["causes"].items()
                      if k.split(".")[0] in ("irq", "softirq", "steal"))
    kernel_waits = [kernel_wait(w[2]) for w in inside]
    if None not in kernel_waits:
        theirs = sum(min(k, w[2] - start) for k, w in zip(kernel_waits, inside))
        diffs_kernel.append(abs(waited - theirs))
        diffs_bpftrace_kernel.append(abs(wakeup - theirs))
    single += 1
    diffs_waking.append(abs(ours - waking))
    diffs_wakeup.append(abs(ours - wakeup))
    diffs_with.append(abs(ours + interrupted - wakeup))
    diffs_runnable_waking.append(abs(waited - waking))
    diffs_runnable.append(abs(waited - wakeup))
    rows.append((op["latency_ns"], waited, ours, interrupted, waking, wakeup))
print(f"slowest kept: {len(blame['slowest'])}; before bpftrace attached: {before}; compared: {single}; "
      f"backlog (due while an earlier wake-up still waited or ran, no wait of their own): "
      f"{backlog}")
if single:
    within = lambda d: sum(1 for x in d if x <= 2000)
    print(f"runnable_ns (the whole wait) vs bpftrace sched_waking->switch: within 2 us "
          f"{within(diffs_runnable_waking)}/{single}, median |diff| "
          f"{statistics.median(diffs_runnable_waking)/1000:.2f} us, max {max(diffs_runnable_waking)/1000:.2f} us")
    print(f"runnable_ns (the whole wait) vs bpftrace sched_wakeup->switch: within 2 us "
          f"{within(diffs_runnable)}/{single}, median |diff| "
          f"{statistics.median(diffs_runnable)/1000:.2f} us, max {max(diffs_runnable)/1000:.2f} us")
    print(f"run_queue vs bpftrace sched_waking->switch: within 2 us {within(diffs_waking)}/{single}, "
          f"median |diff| {statistics.median(diffs_waking)/1000:.2f} us, max {max(diffs_waking)/1000:.2f} us")
    print(f"run_queue vs bpftrace sched_wakeup->switch: within 2 us {within(diffs_wakeup)}/{single}, "
          f"median |diff| {statistics.median(diffs_wakeup)/1000:.2f} us, max {max(diffs_wakeup)/1000:.2f} us")
    print(f"run_queue + the wait's interrupts (irq, softirq, steal) vs sched_wakeup->switch: "
          f"within 2 us {within(diffs_with)}/{single}, median |diff| "
          f"{statistics.median(diffs_with)/1000:.2f} us, max {max(diffs_with)/1000:.2f} us")
    if diffs_kernel:
        print(f"runnable_ns vs the kernel's own accounting (sched_info.run_delay): within 2 us "
              f"{within(diffs_kernel)}/{len(diffs_kernel)}, median |diff| "
              f"{statistics.median(diffs_kernel)/1000:.2f} us, max {max(diffs_kernel)/1000:.2f} us")
        print(f"bpftrace sched_wakeup->switch vs the kernel's own accounting: within 2 us "
              f"{within(diffs_bpftrace_kernel)}/{len(diffs_bpftrace_kernel)}, median |diff| "
              f"{statistics.median(diffs_bpftrace_kernel)/1000:.2f} us, "
              f"max {max(diffs_bpftrace_kernel)/1000:.2f} us")
        print(f"bpftrace's two programs on one switch stamp it {min(gaps)/1000:.2f}-{max(gaps)/1000:.2f} us "
              f"apart (median {statistics.median(gaps)/1000:.2f} us)")
    print("slowest five (latency, runnable, run_queue, interrupts, bpftrace waking->switch, wakeup->switch), us:")
    for r in sorted(rows, reverse=True)[:5]:
        print("  " + "  ".join(f"{x/1000:9.1f}" for x in r))
EOF
