#!/usr/bin/env bash
# fio_log_vs_pandas.sh - side-by-side benchmark: summarising a ~10-million-line
# fio per-I/O latency log with
#   `cauda analyze LOG --json --percentiles ...`
# versus what a user's notebook does with pandas + numpy:
#   pd.read_csv(LOG, header=None, names=[...], usecols=[1], skipinitialspace=True)
#   np.percentile(latency, [...], method="inverted_cdf"), count/min/max/mean
#
# Input: fio per-I/O clat log lines `time_ms, latency_ns, ddir, bs, offset, prio`
# (fio write_lat_log, log_avg_msec=0, log_offset=1). Instead of running fio for
# ~11 minutes, the log is SYNTHESIZED from a real fio log (by default the
# repository fixture tests/fixtures/fio/lat_offset_clat.1.log, written by fio
# 3.33): its rows are repeated, each copy shifted forward in time by the
# fixture's span (last time_ms - first time_ms + 1 ms) so that time_ms never
# decreases, and each latency is multiplied by a seeded uniform random factor
# in [1-J, 1+J] (J = --jitter, default 0.05) so that values are not just
# 1000 distinct numbers repeated.  The file is generated once (into the
# workspace, or into --log PATH / $FIO_LOG and reused on later runs when its
# parameters match).
#
# Each tool runs N times (alternating which goes first) under
# `/usr/bin/time -v`, which gives the wall time and the peak RSS ("Maximum
# resident set size").  The report (per-run figures, medians, the speed ratio
# pandas/cauda, the memory ratio cauda/pandas, and the agreement of
# count/min/max/percentiles) goes to stdout as plain text, ready to paste into
# bench/RESULTS.md; progress messages go to stderr.  hyperfine, when
# installed, is run afterwards as an extra cross-check only.
#
# Percentile reference: the exact order statistic, the ceil(q*n)-th smallest
# value, computed with integer arithmetic on the percentile's decimal digits.
# np.percentile(..., method="inverted_cdf") is meant to give the same, but it
# works with q = p/100 in floating point, so e.g. 99.9/100 = 0.9990000000000001
# and for n = 10^7 it returns the (9 990 001)-th value instead of the
# 9 990 000-th.  Both are printed; the 0.1 % goal is checked against the exact
# order statistic.

set -euo pipefail

usage() {
    cat <<EOF
Usage: $0 [options]

Options (each also settable through the environment variable shown):
  -b, --cauda PATH       cauda binary     [CAUDA=<repo>/target/release/cauda]
  -r, --runs N           timed runs of each tool                    [RUNS=3]
  -c, --cpu N            pin both tools (and hyperfine) to CPU N with taskset
                         (empty: no pinning)                         [CPU=]
  -n, --lines N          lines in the synthesized log         [LINES=10000000]
  -l, --log PATH         where to put (or find) the synthesized log; kept
                         afterwards, reused if its parameters match [FIO_LOG=]
                         (default: a file in the temporary workspace, deleted)
  -f, --fixture PATH     real fio log to repeat
                         [FIXTURE=<repo>/tests/fixtures/fio/lat_offset_clat.1.log]
  -s, --seed N           RNG seed of the latency jitter               [SEED=1]
  -j, --jitter J         relative latency jitter, 0 to disable   [JITTER=0.05]
  -t, --time-divisor D   divide every time_ms by D (integer), i.e. pretend
                         the I/O rate was D times higher (fewer 1 s
                         intervals for cauda)                  [TIME_DIVISOR=1]
  -p, --percentiles L    percentiles to compare [PERCENTILES=50,90,99,99.9,99.99]
  -k, --keep DIR         copy raw outputs (JSON, /usr/bin/time output) to DIR
                                                               [KEEP_DIR=]
      --no-hyperfine     skip the hyperfine cross-check        [HYPERFINE=1]
  -h, --help             this help

Missing dependencies are installed: pandas and numpy with
'python3 -m pip install' (set NO_INSTALL=1 to refuse), GNU time with
'apt-get install time'.  The python3 used is the one in PATH (or \$PYTHON).
EOF
}

die() {
    local code=$1
    shift
    printf '%s: error: %s\n' "${0##*/}" "$*" >&2
    exit "$code"
}

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)

CAUDA=${CAUDA:-}
RUNS=${RUNS:-3}
CPU=${CPU:-}
LINES=${LINES:-10000000}
FIO_LOG=${FIO_LOG:-}
FIXTURE=${FIXTURE:-$REPO_ROOT/tests/fixtures/fio/lat_offset_clat.1.log}
SEED=${SEED:-1}
JITTER=${JITTER:-0.05}
TIME_DIVISOR=${TIME_DIVISOR:-1}
PERCENTILES=${PERCENTILES:-50,90,99,99.9,99.99}
KEEP_DIR=${KEEP_DIR:-}
HYPERFINE=${HYPERFINE:-1}
NO_INSTALL=${NO_INSTALL:-0}
PYTHON=${PYTHON:-python3}
ARGS_AS_GIVEN="$*"

# ---------------------------------------------------------------- options
while (($# > 0)); do
    opt=$1
    val=
    case $opt in
        -h | --help)
            usage
            exit 0
            ;;
        --no-hyperfine)
            HYPERFINE=0
            shift
            continue
            ;;
        --*=*)
            val=${opt#*=}
            opt=${opt%%=*}
            ;;
        -b | -r | -c | -n | -l | -f | -s | -j | -t | -p | -k | --cauda | --runs | --cpu | --lines | --log | --fixture | --seed | --jitter | --time-divisor | --percentiles | --keep)
            (($# >= 2)) || die 1 "option $opt needs a value (see --help)"
            val=$2
            shift
            ;;
        *)
            die 1 "unknown argument '$opt' (see --help)"
            ;;
    esac
    case $opt in
        -b | --cauda) CAUDA=$val ;;
        -r | --runs) RUNS=$val ;;
        -c | --cpu) CPU=$val ;;
        -n | --lines) LINES=$val ;;
        -l | --log) FIO_LOG=$val ;;
        -f | --fixture) FIXTURE=$val ;;
        -s | --seed) SEED=$val ;;
        -j | --jitter) JITTER=$val ;;
        -t | --time-divisor) TIME_DIVISOR=$val ;;
        -p | --percentiles) PERCENTILES=$val ;;
        -k | --keep) KEEP_DIR=$val ;;
        *) die 1 "unknown option '$opt' (see --help)" ;;
    esac
    shift
done

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }
for var in RUNS LINES SEED TIME_DIVISOR; do
    is_uint "${!var}" || die 1 "$var must be a non-negative integer, got '${!var}'"
done
RUNS=$((10#$RUNS))
LINES=$((10#$LINES))
SEED=$((10#$SEED))
TIME_DIVISOR=$((10#$TIME_DIVISOR))
((RUNS >= 1)) || die 1 "runs must be >= 1"
((LINES >= 1)) || die 1 "lines must be >= 1"
((TIME_DIVISOR >= 1)) || die 1 "time divisor must be >= 1"
[[ $JITTER =~ ^(0|0?\.[0-9]+)$ ]] || die 1 "jitter must be a number in [0, 1), got '$JITTER'"
[[ $PERCENTILES =~ ^[0-9.]+(,[0-9.]+)*$ ]] || die 1 "percentiles must be a comma-separated list like 50,99,99.9, got '$PERCENTILES'"
if [[ -n $CPU ]]; then
    is_uint "$CPU" || die 1 "cpu must be a CPU number, got '$CPU'"
    CPU=$((10#$CPU))
    [[ -d /sys/devices/system/cpu/cpu$CPU ]] || die 1 "CPU $CPU does not exist"
fi

# ---------------------------------------------------------------- checks
command -v "$PYTHON" >/dev/null 2>&1 || die 3 "$PYTHON not found (needed for the generator, pandas and the report)"
[[ -r $FIXTURE ]] || die 3 "fixture fio log not readable: $FIXTURE"

if [[ -z $CAUDA ]]; then
    CAUDA=$REPO_ROOT/target/release/cauda
fi
[[ -x $CAUDA ]] || die 3 "cauda binary not found or not executable: $CAUDA (build it first: cargo build --release, or give -b PATH)"
"$CAUDA" analyze --help 2>&1 | grep -q -- '--percentiles' ||
    die 3 "'$CAUDA analyze --help' lists no --percentiles option; is this a cauda binary?"

if ! "$PYTHON" -c 'import pandas, numpy' >/dev/null 2>&1; then
    [[ $NO_INSTALL == 1 ]] && die 3 "pandas/numpy are missing and NO_INSTALL=1 (install them: $PYTHON -m pip install pandas numpy)"
    log "pandas/numpy missing; running '$PYTHON -m pip install pandas numpy'"
    "$PYTHON" -m pip install --quiet pandas numpy >&2 || die 3 "pip install pandas numpy failed"
    "$PYTHON" -c 'import pandas, numpy' || die 3 "pandas/numpy still not importable after pip install"
fi

TIME_BIN=/usr/bin/time
if ! "$TIME_BIN" -v true >/dev/null 2>&1; then
    [[ $NO_INSTALL == 1 ]] && die 3 "GNU time ($TIME_BIN) is missing and NO_INSTALL=1 (install it: apt-get install time)"
    command -v apt-get >/dev/null 2>&1 || die 3 "GNU time ($TIME_BIN) is missing and apt-get is not available to install it"
    log "GNU time missing; running 'apt-get install -y time'"
    { apt-get install -y time || { apt-get update && apt-get install -y time; }; } >&2 ||
        die 3 "apt-get install time failed"
    "$TIME_BIN" -v true >/dev/null 2>&1 || die 3 "$TIME_BIN -v still does not work"
fi

PIN=()
if [[ -n $CPU ]]; then
    command -v taskset >/dev/null 2>&1 || die 3 "taskset not found (util-linux) but --cpu was given"
    PIN=(taskset -c "$CPU")
fi

# ---------------------------------------------------------------- workspace
WORK=$(mktemp -d "${TMPDIR:-/tmp}/fio_log_vs_pandas.XXXXXX")
cleanup() { rm -rf -- "$WORK"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
if [[ -n $KEEP_DIR ]]; then
    mkdir -p -- "$KEEP_DIR" || die 1 "cannot create $KEEP_DIR"
fi

# Python helpers -------------------------------------------------------------
# gen_log.py FIXTURE OUT LINES SEED JITTER TIME_DIVISOR
cat >"$WORK/gen_log.py" <<'PY'
"""Synthesize a long fio per-I/O latency log by repeating a real one."""
import sys
import numpy as np

src, dst = sys.argv[1], sys.argv[2]
n_lines, seed = int(sys.argv[3]), int(sys.argv[4])
jitter, divisor = float(sys.argv[5]), int(sys.argv[6])

rows = [line.split(",") for line in open(src) if line.strip()]
if not rows:
    sys.exit(f"{src}: no log lines")
for i, r in enumerate(rows):
    if len(r) < 4:
        sys.exit(f"{src}:{i + 1}: expected 'time_ms, latency_ns, ddir, bs[, offset][, prio]'")
times = np.array([int(r[0]) for r in rows], dtype=np.int64)
lats = np.array([int(r[1]) for r in rows], dtype=np.int64)
if np.any(np.diff(times) < 0):
    sys.exit(f"{src}: time_ms decreases; cannot repeat it as a time-ordered log")
# Everything after the latency is copied verbatim (", ddir, bs, offset, prio").
tails = [", " + ", ".join(x.strip() for x in r[2:]) for r in rows]
span = int(times[-1] - times[0]) + 1
m = len(rows)
rng = np.random.default_rng(seed)
copies_per_chunk = max(1, 200_000 // m)
written = copy = 0
with open(dst, "w") as out:
    while written < n_lines:
        k = min(copies_per_chunk, -(-(n_lines - written) // m))
        t = (times[None, :] + np.arange(copy, copy + k, dtype=np.int64)[:, None] * span).ravel()
        if divisor > 1:
            t //= divisor
        lat = np.tile(lats, k)
        if jitter > 0:
            lat = np.maximum(1, np.rint(lat * rng.uniform(1 - jitter, 1 + jitter, lat.size))).astype(np.int64)
        take = min(lat.size, n_lines - written)
        out.write("".join(["%d, %d%s\n" % row for row in zip(t[:take].tolist(), lat[:take].tolist(), (tails * k)[:take])]))
        written += take
        copy += k
print(f"{m} {span} {copy}")
PY

# pandas_summary.py LOG PERCENTILES [exact]
# Without "exact": the timed notebook-style summary.  With "exact": also the
# exact ceil(q*n)-th order statistics and the exact mean (untimed check).
cat >"$WORK/pandas_summary.py" <<'PY'
import json, sys, time
from fractions import Fraction

t0 = time.perf_counter()
import numpy as np
import pandas as pd

t1 = time.perf_counter()
path, keys = sys.argv[1], sys.argv[2].split(",")
exact = len(sys.argv) > 3 and sys.argv[3] == "exact"

df = pd.read_csv(
    path,
    header=None,
    names=["time_ms", "latency_ns", "ddir", "bs", "offset", "prio"],
    usecols=[1],
    skipinitialspace=True,
)
lat = df["latency_ns"].to_numpy()
t2 = time.perf_counter()
pct = np.percentile(lat, [float(k) for k in keys], method="inverted_cdf")
out = {
    "count": int(lat.size),
    "min": int(lat.min()),
    "max": int(lat.max()),
    "mean": float(lat.mean()),
    "percentiles": {k: int(v) for k, v in zip(keys, pct)},
}
t3 = time.perf_counter()
out["phases_s"] = {"import": t1 - t0, "read_csv": t2 - t1, "stats": t3 - t2}
out["dtype"] = str(lat.dtype)
if exact:
    n = lat.size
    ranks = {k: max(1, min(n, -(-(n * Fraction(k)) // 100))) for k in keys}
    part = np.partition(lat, sorted({r - 1 for r in ranks.values()}))
    out["exact_rank"] = {k: int(r) for k, r in ranks.items()}
    out["exact_percentiles"] = {k: int(part[r - 1]) for k, r in ranks.items()}
    out["exact_mean"] = float(Fraction(int(lat.astype(np.int64).sum()), n))
print(json.dumps(out))
PY

# parse_time.py TIMEFILE -> "wall_s user_s sys_s maxrss_kb exit"
cat >"$WORK/parse_time.py" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
def field(label):
    m = re.search(r"^\s*" + re.escape(label) + r".*?:\s*(\S+)\s*$", text, re.M)
    if not m:
        sys.exit(f"{sys.argv[1]}: no '{label}' line in /usr/bin/time -v output")
    return m.group(1)
wall = 0.0
for part in field("Elapsed (wall clock) time").split(":"):
    wall = wall * 60 + float(part)
print(wall, field("User time (seconds)"), field("System time (seconds)"),
      field("Maximum resident set size (kbytes)"), field("Exit status"))
PY

# report.py RESULTS_TSV CAUDA_JSON PANDAS_JSON EXACT_JSON PERCENTILES
cat >"$WORK/report.py" <<'PY'
import json, statistics, sys
tsv, cauda_path, pandas_path, exact_path, keys_arg = sys.argv[1:6]
keys = keys_arg.split(",")
lines_in = int(sys.argv[6])
size_mb = int(sys.argv[7]) / 1e6

runs = [line.split("\t") for line in open(tsv).read().splitlines() if line]
# run order tool wall user sys rss_kb steal_ticks
print("Per-run figures (/usr/bin/time -v; wall clock has 10 ms resolution):")
print(f"  {'run':>3}  {'order':<13} {'tool':<7} {'wall s':>7} {'user s':>7} {'sys s':>6} {'peak RSS MiB':>12} {'steal ticks':>11}")
for r in runs:
    run, order, tool, wall, user, sys_, rss, steal = r
    print(f"  {run:>3}  {order:<13} {tool:<7} {float(wall):7.2f} {float(user):7.2f} {float(sys_):6.2f} {int(rss) / 1024:12.1f} {steal:>11}")
print("  (steal ticks: /proc/stat steal of the pinned CPU, or of all CPUs, during the run; 1 tick = 10 ms)")

def med(tool, col):
    return statistics.median(float(r[col]) for r in runs if r[2] == tool)

m = {t: {"wall": med(t, 3), "cpu": statistics.median(float(r[4]) + float(r[5]) for r in runs if r[2] == t),
         "rss": med(t, 6)} for t in ("cauda", "pandas")}
n_runs = sum(1 for r in runs if r[2] == "cauda")
print()
print(f"Median over {n_runs} run(s):")
print(f"  {'tool':<7} {'wall s':>7} {'user+sys s':>10} {'peak RSS MiB':>12} {'MB/s':>7} {'ns/line':>8}")
for t in ("cauda", "pandas"):
    w = m[t]["wall"]
    print(f"  {t:<7} {w:7.2f} {m[t]['cpu']:10.2f} {m[t]['rss'] / 1024:12.1f} {size_mb / w:7.0f} {w * 1e9 / lines_in:8.0f}")

speed = m["pandas"]["wall"] / m["cauda"]["wall"]
mem = m["cauda"]["rss"] / m["pandas"]["rss"]
print()
print(f"  speed ratio  pandas wall / cauda wall : {speed:.2f}x   (goal >= 10x)")
print(f"  memory ratio cauda RSS / pandas RSS   : {mem:.4f} = 1/{1 / mem:.1f}   (goal <= 1/10 = 0.1)")
# Hypervisor steal lengthens whichever tool it lands on, and pandas, running
# ten times longer, catches more of it: the ratio of the runs that lost no
# more than one tick (10 ms) is the fairer figure on a shared host.
calm = {t: [float(r[3]) for r in runs if r[2] == t and int(r[7] or 0) <= 1] for t in ("cauda", "pandas")}
if calm["cauda"] and calm["pandas"]:
    cw, pw = statistics.median(calm["cauda"]), statistics.median(calm["pandas"])
    print(f"  speed ratio, runs with <= 1 steal tick: {pw / cw:.2f}x   "
          f"(cauda {cw:.2f} s over {len(calm['cauda'])} run(s), pandas {pw:.2f} s over {len(calm['pandas'])})")
else:
    print("  speed ratio, runs with <= 1 steal tick: none of one tool's runs was free of steal")

pd_out = json.load(open(pandas_path))
ex = json.load(open(exact_path))
c_all = json.load(open(cauda_path))
series = [s for i in c_all["inputs"] for s in i["series"]]
print()
print("pandas phases, measured inside the first timed pandas run:")
ph = pd_out["phases_s"]
print(f"  import pandas+numpy {ph['import']:.2f} s, read_csv {ph['read_csv']:.2f} s, percentiles+min/max/mean {ph['stats']:.2f} s; dtype {pd_out['dtype']}")
print()
if len(series) != 1:
    print(f"WARNING: cauda reported {len(series)} series (one per I/O direction); comparing the first only")
s = series[0]
cs = s["summary"]
print(f"Agreement (cauda series '{s['tag']}', {s['intervals']} interval(s) of 1 s):")
print(f"  {'stat':<8} {'numpy inv_cdf':>14} {'exact':>14} {'cauda':>14} {'cauda-exact':>12} {'rel':>9}  within 0.1%")
ok_all = True
def row(name, npv, exv, cv, exact_needed):
    global ok_all
    diff = cv - exv
    rel = diff / exv if exv else 0.0
    ok = (diff == 0) if exact_needed else abs(rel) <= 0.001
    ok_all &= ok
    npv_s = f"{npv:14.1f}" if isinstance(npv, float) else f"{npv:14d}"
    exv_s = f"{exv:14.1f}" if isinstance(exv, float) else f"{exv:14d}"
    cv_s = f"{cv:14.1f}" if isinstance(cv, float) else f"{cv:14d}"
    print(f"  {name:<8} {npv_s} {exv_s} {cv_s} {diff:12.1f} {rel * 100:8.4f}%  {'yes' if ok else 'NO'}{' (must be equal)' if exact_needed else ''}")
row("count", pd_out["count"], ex["count"], cs["count"], True)
row("min", pd_out["min"], ex["min"], cs["min"], True)
row("max", pd_out["max"], ex["max"], cs["max"], True)
row("mean", pd_out["mean"], ex["exact_mean"], float(cs["mean"]), False)
for k in keys:
    ck = cs["percentiles"].get(k)
    if ck is None:
        print(f"  p{k}: missing from cauda's output")
        ok_all = False
        continue
    row("p" + k, pd_out["percentiles"][k], ex["exact_percentiles"][k], ck, False)
print("  numpy inv_cdf = np.percentile(lat, p, method='inverted_cdf') as in the timed pandas script;")
print("  exact = the ceil(q*n)-th smallest value, q = p/100 in exact (integer) arithmetic, from an untimed check.")
mism = [k for k in keys if pd_out["percentiles"][k] != ex["exact_percentiles"][k]]
if mism:
    print(f"  NOTE: numpy's inverted_cdf differs from the exact order statistic at p{', p'.join(mism)} "
          f"(it computes q*n in floating point: e.g. 99.9/100*n can land just above an integer rank, "
          f"so numpy returns the next-higher order statistic; exact ranks: "
          + ", ".join(f"p{k}->{ex['exact_rank'][k]}" for k in mism) + ").")
print()
print("Goals:")
print(f"  cauda >= 10x faster than pandas (wall, median): {'MET' if speed >= 10 else 'NOT MET'} ({speed:.2f}x)")
print(f"  cauda peak RSS <= 1/10 of pandas'            : {'MET' if mem <= 0.1 else 'NOT MET'} ({mem:.4f})")
print(f"  count/min/max equal, mean and percentiles within 0.1 % of exact: {'MET' if ok_all else 'NOT MET'}")
PY

# ---------------------------------------------------------------- input log
gen_params="fixture=$(sha256sum <"$FIXTURE" | cut -c1-16) lines=$LINES seed=$SEED jitter=$JITTER time_divisor=$TIME_DIVISOR"
if [[ -z $FIO_LOG ]]; then
    LOG=$WORK/synth_${LINES}_clat.1.log
else
    LOG=$FIO_LOG
    mkdir -p -- "$(dirname -- "$LOG")" || die 1 "cannot create the directory of $LOG"
fi
GEN_NOTE=
if [[ -f $LOG && -f $LOG.params && $(<"$LOG.params") == "$gen_params" ]]; then
    log "reusing $LOG ($gen_params)"
    GEN_NOTE="reused from an earlier generation"
else
    log "synthesizing $LINES lines into $LOG from $FIXTURE"
    gen_start=$(date +%s.%N)
    rm -f -- "$LOG.params"
    gen_info=$("$PYTHON" "$WORK/gen_log.py" "$FIXTURE" "$LOG" "$LINES" "$SEED" "$JITTER" "$TIME_DIVISOR") ||
        die 4 "generating $LOG failed"
    gen_s=$(awk -v a="$gen_start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    [[ -n $FIO_LOG ]] && printf '%s' "$gen_params" >"$LOG.params"
    GEN_NOTE="generated in $gen_s s (fixture rows, span ms, copies: $gen_info)"
    log "generated in $gen_s s"
fi
LOG_LINES=$(wc -l <"$LOG")
LOG_BYTES=$(stat -c %s -- "$LOG")
((LOG_LINES == LINES)) || die 4 "$LOG has $LOG_LINES lines, expected $LINES"

# ---------------------------------------------------------------- commands
CAUDA_CMD=("$CAUDA" analyze "$LOG" --json --percentiles "$PERCENTILES")
PANDAS_CMD=("$PYTHON" "$WORK/pandas_summary.py" "$LOG" "$PERCENTILES")

steal_ticks() {
    # /proc/stat: cpuN user nice system idle iowait irq softirq steal ...
    local name=cpu${CPU}
    awk -v n="$name" '$1 == n { print $9 }' /proc/stat
}

RESULTS=$WORK/results.tsv
: >"$RESULTS"
run_tool() { # run_tool RUN ORDER TOOL
    local run=$1 order=$2 tool=$3 out=$WORK/$3.$1.out tf=$WORK/$3.$1.time s0 s1 fields
    local -a cmd
    if [[ $tool == cauda ]]; then cmd=("${CAUDA_CMD[@]}"); else cmd=("${PANDAS_CMD[@]}"); fi
    s0=$(steal_ticks)
    if ! "${PIN[@]}" "$TIME_BIN" -v -o "$tf" "${cmd[@]}" >"$out" 2>"$WORK/$tool.$run.err"; then
        cat "$WORK/$tool.$run.err" >&2
        die 5 "$tool run $run failed: ${cmd[*]}"
    fi
    s1=$(steal_ticks)
    fields=$("$PYTHON" "$WORK/parse_time.py" "$tf") || die 5 "cannot parse $tf"
    read -r wall user sys rss status <<<"$fields"
    [[ $status == 0 ]] || die 5 "$tool run $run exited with status $status"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$run" "$order" "$tool" "$wall" "$user" "$sys" "$rss" "$((s1 - s0))" >>"$RESULTS"
    log "run $run $tool: wall ${wall}s, peak RSS ${rss} KiB"
}

# Warm the page cache and both tools (the pandas warm-up is also the untimed
# exact-order-statistics check).
log "warming the page cache and both tools (untimed)"
cat -- "$LOG" >/dev/null
"${PIN[@]}" "${CAUDA_CMD[@]}" >/dev/null || die 5 "cauda warm-up run failed: ${CAUDA_CMD[*]}"
"${PIN[@]}" "$PYTHON" "$WORK/pandas_summary.py" "$LOG" "$PERCENTILES" exact >"$WORK/exact.json" ||
    die 5 "pandas exact check failed"

for ((run = 1; run <= RUNS; run++)); do
    if ((run % 2 == 1)); then
        run_tool "$run" "cauda-first" cauda
        run_tool "$run" "cauda-first" pandas
    else
        run_tool "$run" "pandas-first" pandas
        run_tool "$run" "pandas-first" cauda
    fi
done

# ---------------------------------------------------------------- report
cpu_model=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)
versions=$("$PYTHON" -c 'import sys, pandas, numpy; print(f"python {sys.version.split()[0]}, pandas {pandas.__version__}, numpy {numpy.__version__}")')
q() {
    local a
    for a in "$@"; do printf '%q ' "$a"; done
}
echo "fio per-I/O latency log: cauda analyze vs pandas"
echo "date:     $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "kernel:   $(uname -r)"
echo "cpu:      $cpu_model, $(nproc) online CPU(s)"
echo "versions: $("$CAUDA" --version), $versions"
echo "script:   bench/fio_log_vs_pandas.sh $ARGS_AS_GIVEN"
if [[ -n $CPU ]]; then echo "pinning:  taskset -c $CPU (both tools)"; else echo "pinning:  none"; fi
echo "input:    SYNTHESIZED from a real fio log ($FIXTURE, fio per-I/O clat log,"
echo "          write_lat_log, log_avg_msec=0, log_offset=1): its rows repeated, each copy"
echo "          shifted by the fixture's span so time_ms never decreases, latencies x U[1-$JITTER, 1+$JITTER]"
echo "          (seed $SEED)$( ((TIME_DIVISOR > 1)) && echo ", time_ms divided by $TIME_DIVISOR (emulates a ${TIME_DIVISOR}x higher I/O rate)"); $LOG_LINES lines, $((LOG_BYTES / 1000000)) MB; $GEN_NOTE"
echo "          last line: $(tail -n 1 -- "$LOG")"
echo "          page cache warm (file read once before the runs); $RUNS timed run(s) per tool, order alternating"
echo "cauda:    $(q "${PIN[@]}" "${CAUDA_CMD[@]}")"
echo "pandas:   $(q "${PIN[@]}" "$PYTHON")pandas_summary.py LOG $PERCENTILES   # the script is:"
sed -n '/^t0 = /,/^t3 = /p' "$WORK/pandas_summary.py" | grep -v '^t[0-9] = \|^$\|^exact = ' | sed 's/^/          | /'
echo
"$PYTHON" "$WORK/report.py" "$RESULTS" "$WORK/cauda.1.out" "$WORK/pandas.1.out" "$WORK/exact.json" \
    "$PERCENTILES" "$LOG_LINES" "$LOG_BYTES" || die 6 "report failed"

# ---------------------------------------------------------------- hyperfine
if [[ $HYPERFINE == 1 ]] && command -v hyperfine >/dev/null 2>&1; then
    log "hyperfine cross-check ($RUNS runs each, 1 warm-up)"
    echo
    echo "hyperfine cross-check (extra; the figures above are the main ones):"
    hyperfine --style basic -N --warmup 1 --runs "$RUNS" \
        --export-json "$WORK/hyperfine.json" \
        -n cauda "$(q "${PIN[@]}" "${CAUDA_CMD[@]}")" \
        -n pandas "$(q "${PIN[@]}" "${PANDAS_CMD[@]}")" 2>&1 | sed 's/^/  /' ||
        echo "  (hyperfine failed)"
fi

if [[ -n $KEEP_DIR ]]; then
    cp -- "$WORK"/*.out "$WORK"/*.time "$WORK"/*.json "$RESULTS" "$WORK"/*.py "$KEEP_DIR"/ 2>/dev/null || true
    log "raw outputs copied to $KEEP_DIR"
fi
