#!/usr/bin/env bash
# timer_vs_cyclictest.sh - side-by-side wakeup-latency benchmark:
#   `cauda timer`  vs  `cyclictest` (rt-tests)
#
# Both tools run with the same interval, SCHED_FIFO priority (or both under
# SCHED_OTHER with --priority 0), mlockall,
# one measurement thread pinned to the same CPU and the same duration.
# Rounds alternate the order (odd rounds: cyclictest first; even rounds:
# cauda first) so slow drift of the machine does not favour either tool.
#
# The report (per-round figures, then medians over rounds and the
# cauda/cyclictest ratios) goes to stdout as plain text, ready to paste into
# bench/RESULTS.md; progress messages go to stderr.
#
# Must run as root (SCHED_FIFO, mlockall, /dev/cpu_dma_latency).
#
# Percentiles: p-th percentile = value of the ceil(q*n)-th smallest sample
# (nearest rank).  cyclictest samples are integer microseconds (truncated);
# samples beyond its histogram range (>= HISTMAX us) count towards n and are
# reported as ">=HISTMAX" when a percentile lands on them.  cauda's figures
# are taken as-is from `cauda analyze --json` (ns, converted to us).

set -euo pipefail

usage() {
    cat <<EOF
Usage: sudo $0 [options]

Options (each also settable through the environment variable shown):
  -i, --interval US    timer interval in microseconds      [INTERVAL_US=1000]
  -p, --priority N     SCHED_FIFO priority (1-99)          [PRIORITY=80]
                       (0: no RT priority, both tools run SCHED_OTHER)
  -d, --duration S     duration of each run, whole seconds [DURATION_S=10]
  -r, --rounds N       number of rounds                    [ROUNDS=3]
  -c, --cpu N          CPU to pin the measurement thread   [CPU=0]
  -b, --cauda PATH     cauda binary   [CAUDA=<repo>/target/release/cauda]
                       (the default one is built with 'cargo build --release'
                       if it does not exist)
  -H, --histmax US     cyclictest histogram range in us    [HISTMAX_US=20000]
  -k, --keep DIR       copy raw outputs (histograms, run files, JSON) to DIR
                                                           [KEEP_DIR=]
  -h, --help           this help

Extra arguments may be appended to each tool's command line through
CYCLICTEST_EXTRA_ARGS and CAUDA_TIMER_EXTRA_ARGS (word-split).
The cyclictest binary is taken from PATH unless CYCLICTEST is set.
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

INTERVAL_US=${INTERVAL_US:-1000}
PRIORITY=${PRIORITY:-80}
DURATION_S=${DURATION_S:-10}
ROUNDS=${ROUNDS:-3}
CPU=${CPU:-0}
CAUDA=${CAUDA:-}
HISTMAX_US=${HISTMAX_US:-20000}
KEEP_DIR=${KEEP_DIR:-}
CYCLICTEST=${CYCLICTEST:-cyclictest}
CYCLICTEST_EXTRA_ARGS=${CYCLICTEST_EXTRA_ARGS:-}
CAUDA_TIMER_EXTRA_ARGS=${CAUDA_TIMER_EXTRA_ARGS:-}

# ---------------------------------------------------------------- options
while (($# > 0)); do
    opt=$1
    val=
    case $opt in
        -h | --help)
            usage
            exit 0
            ;;
        --*=*)
            val=${opt#*=}
            opt=${opt%%=*}
            ;;
        -i | -p | -d | -r | -c | -b | -H | -k | --interval | --priority | --duration | --rounds | --cpu | --cauda | --histmax | --keep)
            (($# >= 2)) || die 1 "option $opt needs a value (see --help)"
            val=$2
            shift
            ;;
        *)
            die 1 "unknown argument '$opt' (see --help)"
            ;;
    esac
    case $opt in
        -i | --interval) INTERVAL_US=$val ;;
        -p | --priority) PRIORITY=$val ;;
        -d | --duration) DURATION_S=$val ;;
        -r | --rounds) ROUNDS=$val ;;
        -c | --cpu) CPU=$val ;;
        -b | --cauda) CAUDA=$val ;;
        -H | --histmax) HISTMAX_US=$val ;;
        -k | --keep) KEEP_DIR=$val ;;
        *) die 1 "unknown option '$opt' (see --help)" ;;
    esac
    shift
done

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }
for var in INTERVAL_US PRIORITY DURATION_S ROUNDS CPU HISTMAX_US; do
    is_uint "${!var}" || die 1 "$var must be a non-negative integer, got '${!var}'"
done
# Strip leading zeros so bash arithmetic does not read them as octal.
INTERVAL_US=$((10#$INTERVAL_US))
PRIORITY=$((10#$PRIORITY))
DURATION_S=$((10#$DURATION_S))
ROUNDS=$((10#$ROUNDS))
CPU=$((10#$CPU))
HISTMAX_US=$((10#$HISTMAX_US))
((INTERVAL_US >= 1)) || die 1 "interval must be >= 1 us"
((PRIORITY <= 99)) || die 1 "priority must be in 1..99 (SCHED_FIFO), or 0 for SCHED_OTHER"
((DURATION_S >= 1)) || die 1 "duration must be >= 1 s"
((ROUNDS >= 1)) || die 1 "rounds must be >= 1"
((HISTMAX_US >= 1)) || die 1 "histmax must be >= 1 us"
LOOPS=$((DURATION_S * 1000000 / INTERVAL_US))
# Priority arguments: none at all for priority 0, so both tools stay SCHED_OTHER.
CT_PRIO_ARGS=() CAUDA_PRIO_ARGS=() SCHED_DESC="SCHED_OTHER (no RT priority)"
if ((PRIORITY > 0)); then
    CT_PRIO_ARGS=(-p "$PRIORITY") CAUDA_PRIO_ARGS=(--priority "$PRIORITY") SCHED_DESC="SCHED_FIFO prio $PRIORITY"
fi
((LOOPS >= 1)) || die 1 "duration/interval gives zero loops"

# ---------------------------------------------------------------- checks
if [[ $(id -u) -ne 0 ]]; then
    printf '%s: must run as root (SCHED_FIFO priority, mlockall, /dev/cpu_dma_latency); try: sudo %s\n' \
        "${0##*/}" "$0" >&2
    exit 2
fi

command -v python3 >/dev/null 2>&1 || die 3 "python3 not found (needed for the statistics)"
CYCLICTEST_BIN=$(command -v "$CYCLICTEST" 2>/dev/null) ||
    die 3 "cyclictest not found (install it: apt-get install rt-tests)"

if [[ ! -d /sys/devices/system/cpu/cpu$CPU ]]; then
    die 1 "CPU $CPU does not exist"
fi
if [[ -r /sys/devices/system/cpu/cpu$CPU/online && $(</sys/devices/system/cpu/cpu"$CPU"/online) != 1 ]]; then
    die 1 "CPU $CPU is offline"
fi

if [[ -z $CAUDA ]]; then
    CAUDA=$REPO_ROOT/target/release/cauda
    if [[ ! -x $CAUDA ]]; then
        command -v cargo >/dev/null 2>&1 ||
            die 3 "cauda binary $CAUDA not found and cargo is not in PATH to build it (build it first: cargo build --release)"
        log "cauda binary not found; running 'cargo build --release' in $REPO_ROOT"
        (cd "$REPO_ROOT" && cargo build --release) >&2 || die 3 "cargo build --release failed"
    fi
fi
[[ -x $CAUDA ]] || die 3 "cauda binary not found or not executable: $CAUDA"
if ! CAUDA_TIMER_HELP=$("$CAUDA" timer --help 2>&1) || [[ $CAUDA_TIMER_HELP != *--interval* ]]; then
    die 3 "'$CAUDA timer --help' failed or lists no --interval option; does this cauda build have the timer subcommand?"
fi

# ---------------------------------------------------------------- workspace
TMPDIR_BENCH=$(mktemp -d "${TMPDIR:-/tmp}/timer_vs_cyclictest.XXXXXX")
cleanup() { rm -rf -- "$TMPDIR_BENCH"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
RESULTS=$TMPDIR_BENCH/results.tsv
: >"$RESULTS"
if [[ -n $KEEP_DIR ]]; then
    mkdir -p -- "$KEEP_DIR" || die 1 "cannot create $KEEP_DIR"
fi

# Python helpers -------------------------------------------------------------
# parse_cyclictest.py HISTFILE HISTMAX  ->  "n min p50 p99 max overflows"
cat >"$TMPDIR_BENCH/parse_cyclictest.py" <<'PY'
import math, re, sys
from fractions import Fraction

path, histmax = sys.argv[1], int(sys.argv[2])
buckets = {}          # latency (us) -> count, buckets 0 .. histmax-1
meta = {}
with open(path) as f:
    for line in f:
        line = line.strip()
        if not line:
            continue
        m = re.match(r'^(\d+)\s+(\d+)', line)
        if m:
            v, c = int(m.group(1)), int(m.group(2))
            if c:
                buckets[v] = buckets.get(v, 0) + c
            continue
        m = re.match(r'^#\s*([A-Za-z ]+):\s*(.*)$', line)
        if m:
            meta[m.group(1).strip()] = m.group(2).split()

def first_int(key):
    vals = meta.get(key)
    if not vals:
        sys.exit(f"parse_cyclictest: no '# {key}:' line in {path}")
    return int(vals[0])

overflows = first_int('Histogram Overflows')
in_range = sum(buckets.values())
if 'Total' in meta and int(meta['Total'][0]) != in_range:
    sys.exit(f"parse_cyclictest: '# Total' {meta['Total'][0]} != sum of buckets {in_range}")
n = in_range + overflows
if n == 0:
    sys.exit("parse_cyclictest: no samples")
mn = first_int('Min Latencies')
mx = first_int('Max Latencies')

def pct(q):
    k = max(1, math.ceil(Fraction(q) * n))     # exact: no 0.99*n rounding trap
    cum = 0
    for v in sorted(buckets):
        cum += buckets[v]
        if cum >= k:
            return str(v)
    return f">={histmax}"                       # rank lands among the overflows

print(n, mn, pct('0.5'), pct('0.99'), mx, overflows)
PY

# parse_cauda.py JSONFILE  ->  "n min p50 p99 max"  (us)
cat >"$TMPDIR_BENCH/parse_cauda.py" <<'PY'
import json, sys

with open(sys.argv[1]) as f:
    text = f.read()
try:
    doc = json.loads(text)
except ValueError as e:
    sys.exit(f"parse_cauda: output of 'cauda analyze --json' is not JSON ({e}); it starts with: {text[:200]!r}")
series = [s for inp in doc.get('inputs', []) for s in inp.get('series', [])
          if s.get('tag') == 'wakeup']
if not series:
    sys.exit("parse_cauda: no series tagged 'wakeup' in cauda analyze output")
s = series[0]['summary']
scale = {'ns': 1e-3, 'us': 1.0, 'ms': 1e3, 's': 1e6}.get(s.get('unit', 'ns'))
if scale is None:
    sys.exit(f"parse_cauda: unknown unit {s.get('unit')!r}")

def pct(q, fallback=None):
    for k, v in s.get('percentiles', {}).items():
        try:
            if abs(float(k) - q) < 1e-9:
                return v
        except ValueError:
            pass
    if fallback is not None and fallback in s:
        return s[fallback]
    sys.exit(f"parse_cauda: percentile {q} missing")

def us(x):
    return f"{x * scale:.1f}"

print(s['count'], us(s['min']), us(pct(50, 'median')), us(pct(99)), us(s['max']))
PY

# summarize.py RESULTS  -> summary table on stdout
cat >"$TMPDIR_BENCH/summarize.py" <<'PY'
import statistics, sys

rows = {}
with open(sys.argv[1]) as f:
    for line in f:
        rnd, tool, n, mn, p50, p99, mx = line.split()[:7]
        rows.setdefault(tool, []).append((mn, p50, p99, mx))

def num(s):
    return float(s[2:]) if s.startswith('>=') else float(s)

def med(vals):
    # median over rounds; keep the ">=" marker if the median is an overflow
    # (for an even round count the two middle values are averaged).
    vs = sorted(vals, key=num)
    m = statistics.median([num(v) for v in vs])
    over = any(v.startswith('>=') and num(v) <= m for v in vs)
    txt = f"{m:.1f}"
    return (">=" if over else "") + txt, m, over

tools = ['cyclictest', 'cauda']
stats = {t: [med([r[i] for r in rows.get(t, [])]) for i in range(4)] for t in tools if t in rows}
nrounds = max(len(v) for v in rows.values())
print(f"Median over {nrounds} round(s), microseconds:")
print(f"  {'tool':<11} {'min':>9} {'p50':>9} {'p99':>9} {'max':>9}")
for t in tools:
    if t in stats:
        print(f"  {t:<11} " + " ".join(f"{s[0]:>9}" for s in stats[t]))

def ratio(i, name):
    if 'cauda' not in stats or 'cyclictest' not in stats:
        return f"  cauda/cyclictest {name}: n/a"
    a, b = stats['cauda'][i], stats['cyclictest'][i]
    if b[1] == 0:
        return f"  cauda/cyclictest {name}: n/a (cyclictest {name} is 0 us)"
    note = " (one side has histogram overflows; bound only)" if a[2] or b[2] else ""
    return f"  cauda/cyclictest {name}: {a[1] / b[1]:.3f}{note}"

print()
print(ratio(1, 'p50'))
print(ratio(2, 'p99'))
PY

# ---------------------------------------------------------------- runners
# Each runner appends "round tool n min p50 p99 max" to $RESULTS and prints a row.
print_row() { # round tool n min p50 p99 max [note]
    local line
    line=$(printf '%-5s %-11s %9s %9s %9s %9s %9s  %s' "$@")
    printf '%s\n' "${line%"${line##*[![:space:]]}"}"
}

run_cyclictest() {
    local round=$1 hist=$TMPDIR_BENCH/cyclictest.r$1.hist log=$TMPDIR_BENCH/cyclictest.r$1.log
    local -a extra=()
    read -r -a extra <<<"$CYCLICTEST_EXTRA_ARGS"
    local -a cmd=("$CYCLICTEST_BIN" -m "${CT_PRIO_ARGS[@]}" -i "$INTERVAL_US" -a "$CPU" -t 1
        -l "$LOOPS" -q -h "$HISTMAX_US" --histfile="$hist" "${extra[@]}")
    log "round $round: ${cmd[*]}"
    if ! "${cmd[@]}" >"$log" 2>&1; then
        cat "$log" >&2
        die 4 "cyclictest failed (round $round)"
    fi
    local out n mn p50 p99 mx ovf note=
    out=$(python3 "$TMPDIR_BENCH/parse_cyclictest.py" "$hist" "$HISTMAX_US") ||
        die 4 "could not parse cyclictest histogram (round $round)"
    read -r n mn p50 p99 mx ovf <<<"$out"
    ((ovf == 0)) || note="($ovf samples >= ${HISTMAX_US} us histogram range)"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" cyclictest "$n" "$mn" "$p50" "$p99" "$mx" >>"$RESULTS"
    print_row "$round" cyclictest "$n" "$mn" "$p50" "$p99" "$mx" "$note"
    [[ -z $KEEP_DIR ]] || cp -- "$hist" "$log" "$KEEP_DIR"/
}

run_cauda() {
    local round=$1 run=$TMPDIR_BENCH/cauda.r$1.run log=$TMPDIR_BENCH/cauda.r$1.log
    local json=$TMPDIR_BENCH/cauda.r$1.analysis.json
    local -a extra=()
    read -r -a extra <<<"$CAUDA_TIMER_EXTRA_ARGS"
    local -a cmd=("$CAUDA" timer --interval "${INTERVAL_US}us" --runtime "${DURATION_S}s"
        "${CAUDA_PRIO_ARGS[@]}" --cpus "$CPU" --cpu-dma-latency 0us -o "$run" "${extra[@]}")
    log "round $round: ${cmd[*]}"
    if ! "${cmd[@]}" >"$log" 2>&1; then
        cat "$log" >&2
        die 4 "cauda timer failed (round $round)"
    fi
    [[ -s $run ]] || die 4 "cauda timer wrote no run file $run (round $round)"
    if ! "$CAUDA" analyze --json "$run" >"$json" 2>>"$log"; then
        cat "$log" >&2
        die 4 "cauda analyze failed (round $round)"
    fi
    local out n mn p50 p99 mx
    out=$(python3 "$TMPDIR_BENCH/parse_cauda.py" "$json") ||
        die 4 "could not parse cauda analyze output (round $round)"
    read -r n mn p50 p99 mx <<<"$out"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" cauda "$n" "$mn" "$p50" "$p99" "$mx" >>"$RESULTS"
    print_row "$round" cauda "$n" "$mn" "$p50" "$p99" "$mx" ""
    [[ -z $KEEP_DIR ]] || cp -- "$run" "$json" "$log" "$KEEP_DIR"/
}

# ---------------------------------------------------------------- report
cpu_model() {
    local m
    m=$(grep -m1 -E '^(model name|Model|cpu model|Hardware)[[:space:]]*:' /proc/cpuinfo 2>/dev/null | cut -d: -f2-) || true
    [[ -n $m ]] || m=$(LC_ALL=C lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -1) || true
    m=${m#"${m%%[![:space:]]*}"}
    printf '%s\n' "${m:-unknown}"
}
sysfs() {
    local v=n/a
    if [[ -r $1 ]]; then
        v=$(tr -d '\n' <"$1")
        v=${v:-none}
    fi
    printf '%s' "$v"
}

CT_VERSION=$("$CYCLICTEST_BIN" --help 2>&1 | head -1 || true)
CAUDA_VERSION=$("$CAUDA" --version 2>&1 | head -1 || true)

echo "cauda timer vs cyclictest"
echo "========================="
echo "date:        $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "host kernel: $(uname -r)"
echo "cpu model:   $(cpu_model) ($(getconf _NPROCESSORS_ONLN 2>/dev/null || nproc --all) CPUs online)"
echo "isolated:    $(sysfs /sys/devices/system/cpu/isolated)   governor(cpu$CPU): $(sysfs /sys/devices/system/cpu/cpu"$CPU"/cpufreq/scaling_governor)"
echo "cyclictest:  ${CT_VERSION:-unknown} ($CYCLICTEST_BIN)"
echo "cauda:       ${CAUDA_VERSION:-unknown} ($CAUDA)"
echo "parameters:  interval ${INTERVAL_US} us, ${SCHED_DESC}, cpu ${CPU}, ${DURATION_S} s/run" \
    "(${LOOPS} cyclictest loops), ${ROUNDS} round(s), cyclictest histogram 0..$((HISTMAX_US - 1)) us"
echo "commands:    cyclictest -m ${CT_PRIO_ARGS[*]}${CT_PRIO_ARGS[*]:+ }-i $INTERVAL_US -a $CPU -t 1 -l $LOOPS -q -h $HISTMAX_US --histfile=FILE${CYCLICTEST_EXTRA_ARGS:+ $CYCLICTEST_EXTRA_ARGS}"
echo "             cauda timer --interval ${INTERVAL_US}us --runtime ${DURATION_S}s ${CAUDA_PRIO_ARGS[*]}${CAUDA_PRIO_ARGS[*]:+ }--cpus $CPU --cpu-dma-latency 0us -o RUN${CAUDA_TIMER_EXTRA_ARGS:+ $CAUDA_TIMER_EXTRA_ARGS}; cauda analyze --json RUN"
echo "percentiles: cyclictest: nearest rank (ceil(q*n)-th smallest) on its 1-us histogram, values truncated"
echo "             to whole us, overflows count towards n; cauda: as reported by 'cauda analyze --json'"
echo
echo "Per run, microseconds:"
print_row round tool n min p50 p99 max ""

for ((round = 1; round <= ROUNDS; round++)); do
    if ((round % 2 == 1)); then
        run_cyclictest "$round"
        run_cauda "$round"
    else
        run_cauda "$round"
        run_cyclictest "$round"
    fi
done

echo
python3 "$TMPDIR_BENCH/summarize.py" "$RESULTS"
[[ -z $KEEP_DIR ]] || log "raw outputs copied to $KEEP_DIR"
