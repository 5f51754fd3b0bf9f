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
# earlier one still ran, with no switch to the thread inside its window,
# has no wait of its own: counted apart as "backlog"). cauda's wait is the
# operation's `runnable_ns`, the whole time it was runnable, which its
# vector splits into `run_queue` and what ran on the CPU meanwhile
# (interrupts, the idle exit, steal); the net `run_queue` is compared too.
#
# A third reference is the kernel's own accounting of the same waits:
# the growth of the thread's `sched_info.run_delay` (what
# /proc/PID/schedstat and delay accounting report) from one switch out to
# the next, read by bpftrace at the switch out; the kernel stamps a wait
# with its run-queue clock at the enqueue and at the start of the switch,
# where the two tools stamp when their programs run.
#
# bpftrace's script is one program per tracepoint that reads the clock
# first and then compares the thread id (given as $1, read from /proc once
# cauda has started its thread): several programs on one tracepoint, or
# string compares of comm before the clock, put microseconds between its
# stamps of one event (earlier versions of this script: 0.8-9.4 us).
# A switch out is a wait when the thread was preempted or still runnable:
# the tracepoint reports a preempted task's state as TASK_REPORT_MAX
# (0x100, "R+"), so a state of 0 in its low eight bits (earlier versions
# asked for 0 and missed every preemption).
#
# The wake-ups whose wait lies more than 2 us from bpftrace's are listed
# with their vectors, bpftrace's waits and the kernel's.
#
# Usage: bench/blame_vs_bpftrace.sh [CAUDA] [RUNTIME]; needs root, bpftrace,
# python3, chrt, taskset. RUNTIME (default 45s) long enough for 100 slow
# wake-ups after bpftrace attached. FIRST=bpftrace attaches bpftrace first
# (matching the thread by name): cauda's stamps then come after bpftrace's
# programs. Prints the figures; writes nothing outside a temporary
# directory (KEEP=1 keeps it).
set -euo pipefail
cauda=${1:-target/release/cauda}
runtime=${2:-45s}
command -v bpftrace >/dev/null || { echo "needs bpftrace (apt-get install bpftrace)" >&2; exit 2; }
[[ $(id -u) == 0 ]] || { echo "needs root" >&2; exit 2; }
tmp=$(mktemp -d)
hog= trace= run=
trap 'kill $hog $trace $run 2>/dev/null || true; [[ -n ${KEEP:-} ]] || rm -rf "$tmp"' EXIT
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
tracepoint:sched:sched_waking { $t = nsecs; if (WOKEN_IS) { @waking = $t; } }
tracepoint:sched:sched_wakeup { $t = nsecs; if (WOKEN_IS) { @wakeup = $t; } }
tracepoint:sched:sched_switch {
    $t = nsecs;
    if (PREV_IS) {
        if ((args->prev_state & 0xff) == 0) { @waking = $t; @wakeup = $t; }
        $delay = curtask->sched_info.run_delay;
        if (@delay > 0) { @kernel[@lastin] = $delay - @delay; }
        @delay = $delay;
    }
    if (NEXT_IS) {
        if (@waking > 0) { @wait[$t] = (@waking, @wakeup); @waking = 0; @wakeup = 0; }
        @lastin = $t;
    }
}
EOF
taskset -c 1 chrt -f 10 python3 "$tmp/hog.py" & hog=$!
if [[ ${FIRST:-cauda} == bpftrace ]]; then
    # bpftrace first (FIRST=bpftrace), matching the thread by its name
    # (after the clock read): its programs then run before cauda's, and
    # its stamps come first at both ends of a wait.
    sed -e 's/WOKEN_IS/args->comm == "cauda-timer-0"/' -e 's/PREV_IS/args->prev_comm == "cauda-timer-0"/' \
        -e 's/NEXT_IS/args->next_comm == "cauda-timer-0"/' "$tmp/runq.bt" >"$tmp/runq-first.bt"
    BPFTRACE_MAP_KEYS_MAX=200000 bpftrace "$tmp/runq-first.bt" >"$tmp/waits.txt" 2>"$tmp/bpftrace.err" & trace=$!
    for _ in $(seq 200); do grep -q Attaching "$tmp/waits.txt" && break; sleep 0.05; done
    sleep 0.5
    "$cauda" timer --cpus 1 --runtime "$runtime" --kernel blame -q -o "$tmp/run.json" & run=$!
else
    # cauda first, bpftrace once cauda's timer thread exists (matched by
    # its id, $1): programs on one tracepoint run in the order they were
    # attached, and each stamps its time when it runs, so bpftrace's stamps
    # come after cauda's programs at both ends of a wait. Only wake-ups due
    # after bpftrace's first recorded wait are compared.
    "$cauda" timer --cpus 1 --runtime "$runtime" --kernel blame -q -o "$tmp/run.json" & run=$!
    tid=
    for _ in $(seq 100); do
        tid=$(grep -lx cauda-timer-0 /proc/$run/task/*/comm 2>/dev/null | head -1 | cut -d/ -f5) || true
        [[ -n $tid ]] && break
        sleep 0.05
    done
    [[ -n $tid ]] || { echo "cauda's timer thread did not start" >&2; exit 1; }
    sed -e 's/WOKEN_IS/args->pid == $1/' -e 's/PREV_IS/args->prev_pid == $1/' \
        -e 's/NEXT_IS/args->next_pid == $1/' "$tmp/runq.bt" >"$tmp/runq-tid.bt"
    BPFTRACE_MAP_KEYS_MAX=200000 bpftrace "$tmp/runq-tid.bt" "$tid" >"$tmp/waits.txt" 2>"$tmp/bpftrace.err" & trace=$!
fi
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
kernel_by_switch = dict(kernel)


def kernel_wait(switch):
    """The kernel's wait ending at the switch bpftrace stamped at `switch`
    (the same program stamped both)."""
    return kernel_by_switch.get(switch)


t0 = blame["monotonic_start_ns"]
single, backlog, diffs_waking, diffs_wakeup, diffs_with = 0, 0, [], [], []
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
    rows.append({"latency": op["latency_ns"], "runnable": waited, "run_queue": ours,
                 "interrupts": interrupted, "waking": waking, "wakeup": wakeup,
                 "unexplained": op["causes"].get("unexplained", 0), "waits": len(inside),
                 "causes": op["causes"], "spans": [(w[1] - start, w[2] - start) for w in inside],
                 "kernel": kernel_waits})
print(f"slowest kept: {len(blame['slowest'])}; before bpftrace attached: {before}; compared: {single}; "
      f"backlog (due while an earlier wake-up still ran, no wait in its window): "
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
    head = ("(latency, runnable, run_queue, interrupts, bpftrace waking->switch, wakeup->switch, "
            "unexplained, us; bpftrace's waits in the window)")
    numbers = ("latency", "runnable", "run_queue", "interrupts", "waking", "wakeup", "unexplained")
    show = lambda r: "  " + "  ".join(f"{r[k]/1000:9.1f}" for k in numbers) + f"  {r['waits']}"
    print(f"slowest five {head}:")
    for r in sorted(rows, key=lambda r: r["latency"], reverse=True)[:5]:
        print(show(r))
    apart = [r for r in rows if abs(r["runnable"] - r["wakeup"]) > 2000]
    if apart:
        print(f"runnable_ns more than 2 us from bpftrace's wakeup->switch {head}:")
        for r in sorted(apart, key=lambda r: r["latency"], reverse=True):
            print(show(r) + "\n    its vector, ns: " + json.dumps(r["causes"])
                  + "\n    bpftrace's waits (wakeup, switch in), ns after its start: " + str(r["spans"])
                  + "; the kernel's (run_delay), ns: " + str(r["kernel"]))
EOF
