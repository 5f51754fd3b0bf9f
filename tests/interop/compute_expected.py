#!/usr/bin/env python3
"""Compute known answers for cauda's importer fixtures, independently of cauda.

Pure python3 standard library, integer arithmetic only (no floats are used
for any value or rank). Writes <fixture-stem>.expected.json beside each
fixture in tests/fixtures/{fio,sockperf,cyclictest}.

  python3 tests/interop/compute_expected.py [FIXTURES_DIR]      # write
  python3 tests/interop/compute_expected.py --check [FIXTURES_DIR]  # verify only

Order statistics: for q in 0.5, 0.9, 0.99, 0.999 the value sorted[ceil(q*n)-1]
(1-based rank ceil(q*n)), computed as rank = (q_permille*n + 999) // 1000.
"""
import glob
import json
import os
import re
import sys

QS = (("p50", 500), ("p90", 900), ("p99", 990), ("p999", 999))


def rank(per_mille, n):
    return max(1, (per_mille * n + 999) // 1000)


def order_stats(values):
    s = sorted(values)
    n = len(s)
    d = {"count": n, "min": s[0], "max": s[-1]}
    for k, qm in QS:
        d[k] = s[rank(qm, n) - 1]
    return d


def hist_order_stats(counts):
    """counts: dict value -> count (exact integer values). Same statistics."""
    items = sorted((v, c) for v, c in counts.items() if c > 0)
    n = sum(c for _, c in items)
    d = {"count": n, "min": items[0][0], "max": items[-1][0]}
    for k, qm in QS:
        r = rank(qm, n)
        cum = 0
        for v, c in items:
            cum += c
            if cum >= r:
                d[k] = v
                break
    return d


# ---------------------------------------------------------------- fio lat logs

def parse_fio_log(path):
    rows = []
    with open(path, encoding="ascii") as f:
        for ln, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line:
                continue
            cols = [c.strip() for c in line.split(",")]
            rows.append(cols)
    return rows


def fio_lat_expected(path):
    rows = parse_fio_log(path)
    ncols = {len(r) for r in rows}
    assert len(ncols) == 1, (path, ncols)
    ncols = ncols.pop()
    has_offset = ncols == 6
    prio_hex = rows[0][-1].startswith("0x")
    times = [int(r[0]) for r in rows]
    values = [int(r[1]) for r in rows]
    ddirs = [int(r[2]) for r in rows]
    bss = sorted({int(r[3]) for r in rows})
    prios = sorted({r[-1] for r in rows})
    out = {
        "fixture": os.path.basename(path),
        "format": "fio per-I/O latency log (log_avg_msec=0)",
        "columns": (["time_ms", "latency_ns", "ddir", "bs_bytes"]
                    + (["offset_bytes"] if has_offset else [])
                    + ["prio" + ("_hex(log_prio=1)" if prio_hex else "_flag")]),
        "unit": "ns",
        "rows": len(rows),
        "time_ms_first": times[0],
        "time_ms_last": times[-1],
        "time_non_decreasing": all(a <= b for a, b in zip(times, times[1:])),
        "block_sizes": bss,
        "prio_values": prios,
        "all": order_stats(values),
    }
    by_dir = {}
    for d, v in zip(ddirs, values):
        by_dir.setdefault(d, []).append(v)
    names = {0: "read", 1: "write", 2: "trim"}
    out["by_ddir"] = {names.get(d, str(d)): order_stats(v) for d, v in sorted(by_dir.items())}
    return out


# ----------------------------------------------------------- fio hist logs
FIO_IO_U_PLAT_BITS = 6
FIO_IO_U_PLAT_VAL = 1 << FIO_IO_U_PLAT_BITS
FIO_IO_U_PLAT_NR = 29 * FIO_IO_U_PLAT_VAL  # 1856


def plat_bucket(idx):
    """(lower, upper_exclusive, fio_value) in ns for fio's clat bin idx
    (fio stat.c plat_idx_to_val; fio_value is the bucket midpoint that fio
    prints for percentiles and uses as json+ "bins" keys)."""
    if idx < (FIO_IO_U_PLAT_VAL << 1):
        return idx, idx + 1, idx
    error_bits = (idx >> FIO_IO_U_PLAT_BITS) - 1
    base = 1 << (error_bits + FIO_IO_U_PLAT_BITS)
    k = idx % FIO_IO_U_PLAT_VAL
    lower = base + k * (1 << error_bits)
    width = 1 << error_bits
    return lower, lower + width, lower + width // 2


def fio_hist_expected(path):
    rows = parse_fio_log(path)
    ncols = {len(r) for r in rows}
    assert len(ncols) == 1, (path, ncols)
    ncols = ncols.pop()
    nbins = ncols - 3
    assert nbins == FIO_IO_U_PLAT_NR, nbins
    merged = {}
    rowinfo = []
    for r in rows:
        t, d, bs = int(r[0]), int(r[1]), int(r[2])
        bins = [int(x) for x in r[3:]]
        rowinfo.append({"time_ms": t, "ddir": d, "bs": bs, "count": sum(bins)})
        acc = merged.setdefault(d, [0] * nbins)
        for i, c in enumerate(bins):
            acc[i] += c
    tot = [0] * nbins
    for acc in merged.values():
        for i, c in enumerate(acc):
            tot[i] += c

    def stats(bins):
        n = sum(bins)
        nz = [i for i, c in enumerate(bins) if c]
        lo, hi = nz[0], nz[-1]
        d = {"count": n,
             "min_bin": {"index": lo, "lower_ns": plat_bucket(lo)[0], "upper_ns_excl": plat_bucket(lo)[1],
                         "fio_value_ns": plat_bucket(lo)[2]},
             "max_bin": {"index": hi, "lower_ns": plat_bucket(hi)[0], "upper_ns_excl": plat_bucket(hi)[1],
                         "fio_value_ns": plat_bucket(hi)[2]}}
        for k, qm in QS:
            r = rank(qm, n)
            cum = 0
            for i, c in enumerate(bins):
                cum += c
                if cum >= r:
                    lo_, hi_, mid = plat_bucket(i)
                    d[k] = {"index": i, "lower_ns": lo_, "upper_ns_excl": hi_, "fio_value_ns": mid}
                    break
        return d

    names = {0: "read", 1: "write", 2: "trim"}
    return {
        "fixture": os.path.basename(path),
        "format": "fio clat histogram log (write_hist_log, log_hist_msec=250, log_hist_coarseness=0)",
        "columns": "time_ms, ddir, bs_bytes, then %d bin counts (per interval, not cumulative)" % nbins,
        "bins": nbins,
        "bin_value_rule": ("bin i < 128: value i ns exactly; else error_bits=(i>>6)-1, "
                           "lower=2^(error_bits+6)+(i%64)*2^error_bits, width=2^error_bits; "
                           "fio reports the midpoint lower+width/2"),
        "rows": rowinfo,
        "percentile_rule": "bin holding the 1-based rank ceil(q*n) of the merged counts (same as fio's own rule)",
        "all": stats(tot),
        "by_ddir": {names.get(d, str(d)): stats(b) for d, b in sorted(merged.items())},
    }


def fio_avg_expected(path):
    rows = parse_fio_log(path)
    return {
        "fixture": os.path.basename(path),
        "format": "fio windowed (averaged) latency log, log_avg_msec=100",
        "must_refuse": True,
        "why": ("each row is the mean latency of a 100 ms window, not one I/O; "
                "fio writes bs (and offset) as 0 in windowed logs"),
        "rows": len(rows),
        "bs_values": sorted({int(r[3]) for r in rows}),
        "time_ms": [int(r[0]) for r in rows],
    }


# ------------------------------------------------------------------- sockperf
DEC = re.compile(r"^(\d+)\.(\d{9})$")


def sec_to_ns(s):
    m = DEC.match(s)
    assert m, s
    return int(m.group(1)) * 1_000_000_000 + int(m.group(2))


def usec3_to_ns(s):
    m = re.match(r"^(\d+)\.(\d{3})$", s)
    assert m, s
    return int(m.group(1)) * 1000 + int(m.group(2))


def sockperf_expected(path):
    lines = open(path, encoding="ascii").read().split("\n")
    hdr = [i for i, l in enumerate(lines) if l.startswith("packet,")]
    assert len(hdr) == 1
    header = [c.strip() for c in lines[hdr[0]].split(",")]
    rtts, halves, half_from_col, seqs = [], [], [], []
    for l in lines[hdr[0] + 1:]:
        if not l or l.startswith("---"):
            continue
        c = [x.strip() for x in l.split(",")]
        seq, tx, rx, lat = int(c[0]), sec_to_ns(c[1]), sec_to_ns(c[2]), usec3_to_ns(c[3])
        seqs.append(seq)
        rtts.append(rx - tx)
        half_from_col.append(lat)
    # sockperf's own summary (stdout.txt), for reference
    stdout = os.path.splitext(path)[0] + ".stdout.txt"
    printed = {}
    if os.path.exists(stdout):
        for l in open(stdout, encoding="utf-8", errors="replace"):
            m = re.search(r"percentile (\d+\.\d+) =\s+([\d.]+)", l)
            if m:
                printed[m.group(1)] = m.group(2)
            m = re.search(r"<(MAX|MIN)> observation =\s+([\d.]+)", l)
            if m:
                printed[m.group(1)] = m.group(2)
    # sockperf's own percentile rule (reverse-engineered, matches its stdout):
    # 0-based index round(p/100*n) - 1 over the sorted half-RTTs
    sh = sorted(half_from_col)
    n = len(sh)
    sockperf_rule = {}
    for key in printed:
        if key in ("MIN", "MAX"):
            continue
        ip, fp = key.split(".")
        # p/100*n + 1/2 with p = ip.fp (3 decimals), in integer arithmetic
        num = (int(ip) * 1000 + int(fp)) * n  # = p*1000*n
        idx = (num + 50000) // 100000 - 1
        v = sh[min(max(idx, 0), n - 1)]
        sockperf_rule[key] = "%d.%03d" % (v // 1000, v % 1000)
    return {
        "fixture": os.path.basename(path),
        "format": "sockperf ping-pong --full-log CSV",
        "header": header,
        "columns": {"packet": "sequence number (0-based)",
                    "txTime(sec)": "send time, seconds with 9 decimals (ns resolution), monotonic clock",
                    "rxTime(sec)": "receive time of the reply, same clock",
                    "latency(usec)": "(rxTime - txTime)/2 in usec, 3 decimals = sockperf's one-way 'latency'"},
        "rows": len(rtts),
        "first_seq": seqs[0],
        "last_seq": seqs[-1],
        "unit": "ns",
        "rtt_ns": order_stats(rtts),
        "half_rtt_ns_from_latency_column": order_stats(half_from_col),
        "latency_column_equals_rtt_over_2": all(abs(2 * h - r) <= 1 for h, r in zip(half_from_col, rtts)),
        "sockperf_printed_usec": printed,
        "sockperf_rule_from_csv_usec": sockperf_rule,
        "note": ("rtt_ns is the expected answer (full round trip rxTime-txTime, exact ns, order statistic "
                 "sorted[ceil(q*n)-1]). sockperf itself prints half-RTT with rank round(p/100*n) "
                 "(sockperf_rule_from_csv_usec reproduces it from the CSV, up to 0.001 us because "
                 "sockperf truncates where the CSV column rounds)."),
    }


# ----------------------------------------------------------------- cyclictest

def cyclictest_expected(path):
    hist = {}
    footer = {}
    nthreads = None
    overflow_cycles = {}
    for l in open(path, encoding="ascii"):
        l = l.rstrip("\n")
        if not l:
            continue
        if l.startswith("#"):
            m = re.match(r"# (Total|Min Latencies|Avg Latencies|Max Latencies|Histogram Overflows): (.*)$", l)
            if m:
                footer[m.group(1)] = [int(x) for x in m.group(2).split()]
            m = re.match(r"# Thread (\d+):(.*)$", l)
            if m:
                overflow_cycles[int(m.group(1))] = m.group(2).strip()
            continue
        parts = l.split()
        b = int(parts[0])
        counts = [int(x) for x in parts[1:]]
        nthreads = len(counts)
        for t, c in enumerate(counts):
            hist.setdefault(t, {})
            if c:
                hist[t][b] = hist[t].get(b, 0) + c
    nbuckets = None
    with open(path, encoding="ascii") as f:
        nbuckets = sum(1 for l in f if l[:1].isdigit())
    out = {
        "fixture": os.path.basename(path),
        "format": "cyclictest -h N histogram on stdout (-q)",
        "unit": "us",
        "threads": nthreads,
        "buckets": nbuckets,
        "footer": footer,
        "overflow_cycle_lines": overflow_cycles,
        "per_thread": {},
    }
    ovf = footer.get("Histogram Overflows", [0] * nthreads)

    def stats(counts, overflows, true_min, true_max):
        in_hist = sum(counts.values())
        n = in_hist + overflows
        d = {"count_in_histogram": in_hist, "overflows": overflows, "count": n,
             "min": true_min, "max": true_max}
        items = sorted(counts.items())
        for k, qm in QS:
            r = rank(qm, n)
            if r > in_hist:
                d[k] = None  # falls into the overflow (>= buckets us), unknown
                continue
            cum = 0
            for v, c in items:
                cum += c
                if cum >= r:
                    d[k] = v
                    break
        return d

    allc = {}
    for t in range(nthreads):
        out["per_thread"][str(t)] = stats(hist[t], ovf[t], footer["Min Latencies"][t],
                                          footer["Max Latencies"][t])
        for v, c in hist[t].items():
            allc[v] = allc.get(v, 0) + c
    out["all_threads"] = stats(allc, sum(ovf), min(footer["Min Latencies"]), max(footer["Max Latencies"]))
    out["note"] = ("percentiles are order statistics of the 1-us buckets (bucket b = latency b us, "
                   "integer us as cyclictest measures them); count includes overflows; "
                   "a percentile whose rank lands in the overflow is null. min/max are from the footer.")
    return out


def main():
    args = sys.argv[1:]
    check = "--check" in args
    args = [a for a in args if a != "--check"]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures")
    root = os.path.normpath(root)
    jobs = []
    for p in sorted(glob.glob(os.path.join(root, "fio", "*.log"))):
        b = os.path.basename(p)
        if "_hist." in b:
            jobs.append((p, fio_hist_expected))
        elif b.startswith("avg_"):
            jobs.append((p, fio_avg_expected))
        else:
            jobs.append((p, fio_lat_expected))
    for p in sorted(glob.glob(os.path.join(root, "sockperf", "*.csv"))):
        jobs.append((p, sockperf_expected))
    for p in sorted(glob.glob(os.path.join(root, "cyclictest", "*.txt"))):
        jobs.append((p, cyclictest_expected))
    bad = 0
    for p, fn in jobs:
        exp = fn(p)
        stem = re.sub(r"\.(log|csv|txt)$", "", p)
        out = stem + ".expected.json"
        text = json.dumps(exp, indent=1) + "\n"
        if check:
            if not os.path.exists(out) or open(out).read() != text:
                print("MISMATCH", out)
                bad += 1
            else:
                print("ok", os.path.relpath(out, root))
        else:
            with open(out, "w") as f:
                f.write(text)
            print("wrote", os.path.relpath(out, root))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
