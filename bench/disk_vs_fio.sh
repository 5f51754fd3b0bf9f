#!/usr/bin/env bash
# disk_vs_fio.sh - side-by-side storage benchmark: `cauda disk` vs fio 3.33,
# alternating on the same file (odd rounds fio first, even rounds cauda
# first, so drift of the machine favours neither).
#
#   A. 4k randread, QD1, O_DIRECT, io_uring: clat p50 and p99.
#      fio's clat runs from the return of the submitting io_uring_enter to
#      the completion; cauda records the same as `read.clat` with
#      --slat-clat (which, like fio, submits and waits in separate calls).
#      cauda's `read` (from just before the submitting call) is compared
#      with fio's lat (slat + clat).
#   B. 4k randwrite, QD32, O_DIRECT, io_uring: IOPS and CPU time per I/O
#      (fio: usr_cpu + sys_cpu of the job over its runtime; cauda: user + sys
#      of the whole process during the run, from getrusage).
#   C. 4k randread at 1000/s whose process is frozen (SIGSTOP) for 500 ms:
#      cauda's p99 and max from intended start vs fio's clat p99 and max.
#
# The file is created once by cauda (so it carries cauda's mark and later
# cauda write runs may reuse it); fio then works on it with the same size.
# The report goes to stdout; progress to stderr.
#
# Usage: bench/disk_vs_fio.sh [DIR]     (DIR holds the 1 GiB file; default /var/tmp)
# Environment: ROUNDS (3), RUNTIME_S (10), SIZE (1G), CAUDA, FIO.

set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
DIR=${1:-/var/tmp}
ROUNDS=${ROUNDS:-3}
RUNTIME_S=${RUNTIME_S:-10}
SIZE=${SIZE:-1G}
CAUDA=${CAUDA:-$REPO_ROOT/target/release/cauda}
FIO=${FIO:-fio}

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
die() { printf 'disk_vs_fio.sh: error: %s\n' "$*" >&2; exit 2; }

command -v "$FIO" >/dev/null || die "fio not found: apt-get install fio"
"$FIO" --version | grep -q '^fio-3.33' || log "warning: $("$FIO" --version) is not fio 3.33"
command -v python3 >/dev/null || die "python3 is needed to read the JSON outputs"
if [[ ! -x $CAUDA ]]; then
    log "building cauda (release)"
    (cd "$REPO_ROOT" && cargo build --release --locked >&2)
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/disk_vs_fio.XXXXXX")
FILE="$DIR/cauda-vs-fio.dat"
cleanup() { rm -rf "$WORK"; }
trap cleanup EXIT

if [[ ! -f $FILE ]]; then
    log "creating $FILE ($SIZE) with cauda"
    "$CAUDA" disk --file "$FILE" --size "$SIZE" --runtime 100ms -q -o "$WORK/create.json" >/dev/null
fi

FIO_COMMON=(--filename="$FILE" --size="$SIZE" --bs=4k --direct=1 --ioengine=io_uring
    --thread --output-format=json --group_reporting --randrepeat=0)

fio_json() { # name out args...
    local name=$1 out=$2
    shift 2
    "$FIO" --name="$name" "${FIO_COMMON[@]}" "$@" >"$out"
}

cauda_run() { # out args...
    local out=$1
    shift
    "$CAUDA" disk --file "$FILE" --size "$SIZE" --bs 4k --engine io_uring -q -o "$out" "$@" >/dev/null
}

py() { python3 - "$@"; }

fio_fig() { # file dir field  -> value
    py "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
j = d["jobs"][0]
io = j[sys.argv[2]]
f = sys.argv[3]
if f == "clat50": print(io["clat_ns"]["percentile"]["50.000000"])
elif f == "clat99": print(io["clat_ns"]["percentile"]["99.000000"])
elif f == "lat50": print(io["lat_ns"]["percentile"]["50.000000"])
elif f == "lat99": print(io["lat_ns"]["percentile"]["99.000000"])
elif f == "clatmax": print(io["clat_ns"]["max"])
elif f == "latmax": print(io["lat_ns"]["max"])
elif f == "iops": print(io["iops"])
elif f == "cpu_per_io":
    secs = j["job_runtime"] / 1000.0
    cpu = (j["usr_cpu"] + j["sys_cpu"]) / 100.0 * secs
    print(cpu * 1e9 / max(io["total_ios"], 1))
PY
}

cauda_fig() { # file field -> value
    py "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
f = sys.argv[2]
s = {x["tag"]: x["summary"] for x in d["summary"]}
disk = d["disk"]
tag = "write" if "write" in s else "read"
if f == "clat50": print(s[tag + ".clat"]["percentiles"]["50"])
elif f == "clat99": print(s[tag + ".clat"]["percentiles"]["99"])
elif f == "p50": print(s[tag]["percentiles"]["50"])
elif f == "p99": print(s[tag]["percentiles"]["99"])
elif f == "max": print(s[tag]["max"])
elif f == "iops": print(disk["iops"])
elif f == "cpu_per_io": print(disk["cpu"]["process_per_io_ns"])
elif f == "cpu_per_io_jobs": print(disk["cpu"]["jobs_per_io_ns"])
PY
}

# Median of per-round ratios a[i]/b[i] (pairs measured back to back, so
# slow drift of a loaded machine cancels better than in a ratio of medians).
paired() { # "a1 a2 …" "b1 b2 …"
    awk -v a="$1" -v b="$2" 'BEGIN {
        n = split(a, x, " "); split(b, y, " ");
        for (i = 1; i <= n; i++) r[i] = x[i] / y[i];
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (r[j] < r[i]) { t = r[i]; r[i] = r[j]; r[j] = t }
        printf "%.3f", (n % 2 ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2)
    }'
}

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", a/b}'; }

declare -a A_FIO50 A_FIO99 A_FIOLAT50 A_FIOLAT99 A_C50 A_C99 A_CC50 A_CC99 B_FIOIOPS B_FIOCPU B_CIOPS B_CCPU B_CCPUJ C_FIO99 C_FIOMAX C_FIOLATMAX C_C99 C_CMAX

freeze() { # pid: SIGSTOP for 500 ms after 2 s
    sleep 2
    kill -STOP "$1" 2>/dev/null || return 0
    sleep 0.5
    kill -CONT "$1" 2>/dev/null || true
}

for round in $(seq 1 "$ROUNDS"); do
    if ((round % 2)); then order=(fio cauda); else order=(cauda fio); fi
    for tool in "${order[@]}"; do
        log "round $round: $tool A (randread QD1)"
        if [[ $tool == fio ]]; then
            fio_json a "$WORK/a_fio.json" --rw=randread --iodepth=1 --runtime="$RUNTIME_S" --time_based \
                --lat_percentiles=1
            A_FIO50+=("$(fio_fig "$WORK/a_fio.json" read clat50)")
            A_FIO99+=("$(fio_fig "$WORK/a_fio.json" read clat99)")
            A_FIOLAT50+=("$(fio_fig "$WORK/a_fio.json" read lat50)")
            A_FIOLAT99+=("$(fio_fig "$WORK/a_fio.json" read lat99)")
        else
            cauda_run "$WORK/a_cauda.json" --rw randread --iodepth 1 --runtime "${RUNTIME_S}s" --slat-clat
            A_C50+=("$(cauda_fig "$WORK/a_cauda.json" p50)")
            A_C99+=("$(cauda_fig "$WORK/a_cauda.json" p99)")
            A_CC50+=("$(cauda_fig "$WORK/a_cauda.json" clat50)")
            A_CC99+=("$(cauda_fig "$WORK/a_cauda.json" clat99)")
        fi
    done
    for tool in "${order[@]}"; do
        log "round $round: $tool B (randwrite QD32)"
        if [[ $tool == fio ]]; then
            fio_json b "$WORK/b_fio.json" --rw=randwrite --iodepth=32 --runtime="$RUNTIME_S" --time_based
            B_FIOIOPS+=("$(fio_fig "$WORK/b_fio.json" write iops)")
            B_FIOCPU+=("$(fio_fig "$WORK/b_fio.json" write cpu_per_io)")
        else
            cauda_run "$WORK/b_cauda.json" --rw randwrite --iodepth 32 --runtime "${RUNTIME_S}s"
            B_CIOPS+=("$(cauda_fig "$WORK/b_cauda.json" iops)")
            B_CCPU+=("$(cauda_fig "$WORK/b_cauda.json" cpu_per_io)")
            B_CCPUJ+=("$(cauda_fig "$WORK/b_cauda.json" cpu_per_io_jobs)")
        fi
    done
    for tool in "${order[@]}"; do
        log "round $round: $tool C (1000/s, frozen 500 ms)"
        if [[ $tool == fio ]]; then
            "$FIO" --name=c "${FIO_COMMON[@]}" --rw=randread --iodepth=1 --rate_iops=1000 \
                --runtime=5 --time_based >"$WORK/c_fio.json" &
            pid=$!
            freeze "$pid"
            wait "$pid"
            C_FIO99+=("$(fio_fig "$WORK/c_fio.json" read clat99)")
            C_FIOMAX+=("$(fio_fig "$WORK/c_fio.json" read clatmax)")
            C_FIOLATMAX+=("$(fio_fig "$WORK/c_fio.json" read latmax)")
        else
            "$CAUDA" disk --file "$FILE" --size "$SIZE" --bs 4k --engine io_uring --rw randread \
                --rate 1000/s --runtime 5s -q -o "$WORK/c_cauda.json" >/dev/null &
            pid=$!
            freeze "$pid"
            wait "$pid"
            C_C99+=("$(cauda_fig "$WORK/c_cauda.json" p99)")
            C_CMAX+=("$(cauda_fig "$WORK/c_cauda.json" max)")
        fi
    done
done

int() { awk -v v="$1" 'BEGIN {printf "%.0f", v}'; }
us() { awk -v v="$1" 'BEGIN {printf "%.1f us", v/1000}'; }
row() { printf '  %-44s %s\n' "$1" "$2"; }

echo "disk_vs_fio.sh — $(date -u +%Y-%m-%dT%H:%MZ) — $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "file $FILE ($SIZE) on $(df --output=source "$DIR" | tail -1); $ROUNDS rounds of ${RUNTIME_S}s, alternating; $("$FIO" --version)"
echo
echo "A. 4k randread QD1 O_DIRECT io_uring (medians over rounds)"
row "fio clat p50 / p99" "$(us "$(median "${A_FIO50[@]}")") / $(us "$(median "${A_FIO99[@]}")")"
row "fio lat (slat + clat) p50 / p99" "$(us "$(median "${A_FIOLAT50[@]}")") / $(us "$(median "${A_FIOLAT99[@]}")")"
row "cauda read.clat p50 / p99" "$(us "$(median "${A_CC50[@]}")") / $(us "$(median "${A_CC99[@]}")")"
row "cauda read (slat + clat) p50 / p99" "$(us "$(median "${A_C50[@]}")") / $(us "$(median "${A_C99[@]}")")"
row "ratio clat cauda/fio p50 (goal <= 1.03)" "$(ratio "$(median "${A_CC50[@]}")" "$(median "${A_FIO50[@]}")")"
row "ratio clat cauda/fio p99 (goal 0.90-1.10)" "$(ratio "$(median "${A_CC99[@]}")" "$(median "${A_FIO99[@]}")")"
row "ratio lat cauda/fio p50, p99" "$(ratio "$(median "${A_C50[@]}")" "$(median "${A_FIOLAT50[@]}")"), $(ratio "$(median "${A_C99[@]}")" "$(median "${A_FIOLAT99[@]}")")"
row "paired per-round ratio clat p50, p99" "$(paired "${A_CC50[*]}" "${A_FIO50[*]}"), $(paired "${A_CC99[*]}" "${A_FIO99[*]}")"
row "paired per-round ratio lat p50, p99" "$(paired "${A_C50[*]}" "${A_FIOLAT50[*]}"), $(paired "${A_C99[*]}" "${A_FIOLAT99[*]}")"
row "per round fio clat p50" "${A_FIO50[*]}"
row "per round cauda read.clat p50" "${A_CC50[*]}"
echo
echo "B. 4k randwrite QD32 O_DIRECT io_uring (medians over rounds)"
row "fio IOPS / CPU per I/O" "$(int "$(median "${B_FIOIOPS[@]}")") / $(int "$(median "${B_FIOCPU[@]}")") ns"
row "cauda IOPS / CPU per I/O (process)" "$(int "$(median "${B_CIOPS[@]}")") / $(int "$(median "${B_CCPU[@]}")") ns (I/O thread only: $(int "$(median "${B_CCPUJ[@]}")") ns)"
row "ratio IOPS cauda/fio (goal >= 0.97)" "$(ratio "$(median "${B_CIOPS[@]}")" "$(median "${B_FIOIOPS[@]}")")"
row "ratio CPU/I/O cauda/fio (goal <= 1.0)" "$(ratio "$(median "${B_CCPU[@]}")" "$(median "${B_FIOCPU[@]}")")"
row "paired per-round ratio IOPS, CPU/I/O" "$(paired "${B_CIOPS[*]}" "${B_FIOIOPS[*]}"), $(paired "${B_CCPU[*]}" "${B_FIOCPU[*]}")"
row "per round fio IOPS" "$(for v in "${B_FIOIOPS[@]}"; do int "$v"; printf ' '; done)"
row "per round cauda IOPS" "$(for v in "${B_CIOPS[@]}"; do int "$v"; printf ' '; done)"
row "per round fio CPU/I/O ns" "$(for v in "${B_FIOCPU[@]}"; do int "$v"; printf ' '; done)"
row "per round cauda CPU/I/O ns" "$(for v in "${B_CCPU[@]}"; do int "$v"; printf ' '; done)"
echo
echo "C. randread at 1000/s, process frozen 500 ms at t=2 s (medians over rounds)"
row "fio clat p99 / max (lat max)" "$(us "$(median "${C_FIO99[@]}")") / $(us "$(median "${C_FIOMAX[@]}")") ($(us "$(median "${C_FIOLATMAX[@]}")"))"
row "cauda p99 / max (from intended start)" "$(us "$(median "${C_C99[@]}")") / $(us "$(median "${C_CMAX[@]}")")"
row "per round fio max, cauda p99 (us)" "$(for v in "${C_FIOMAX[@]}"; do us "$v"; printf ', '; done)/ $(for v in "${C_C99[@]}"; do us "$v"; printf ', '; done)"
row "cauda p99 >= 100 ms" "$(awk -v v="$(median "${C_C99[@]}")" 'BEGIN {print (v >= 100e6 ? "MET" : "NOT MET")}')"
