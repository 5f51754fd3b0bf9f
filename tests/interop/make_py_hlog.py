#!/usr/bin/env python3
"""Write a deterministic HdrHistogram interval log with HdrHistogram_py.

Produces, in OUTDIR (default tests/fixtures/hdr):
  python.hlog           4 untagged 1-second intervals, 1500 values each (ns)
  python.expected.json  count/min/max/p50/p90/p99/p99.9 as reported by
                        HdrHistogram_py itself, plus exact raw statistics

Requires: pip install hdrhistogram   (HdrHistogram_py; fixtures made with 0.10.8)

Notes on HdrHistogram_py 0.10.8 (see tests/fixtures/README.md):
  * HistogramLogWriter.output_start_time() is broken (it calls
    datetime.fromtimestamp(msec).iso_format(...), which raises), so the
    "#[StartTime: ...]" line is written with output_comment() in the same
    format the Java writer uses.
  * The writer cannot write tags ("Tag=...,") - the log is untagged.
  * The writer prints Interval_Max as max // max_value_unit_ratio (floor
    division), so it is 0.000000 for intervals whose max is < 1 ms.
"""
import json
import math
import os
import random
import sys
from fractions import Fraction
from datetime import datetime, timezone

from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogWriter

LOWEST = 1
HIGHEST = 3_600_000_000_000  # 1 hour in ns
DIGITS = 3
START_MS = 1_700_000_000_000  # 2023-11-14T22:13:20Z
INTERVALS = 4
INTERVAL_MS = 1000
PER_INTERVAL = 1514  # 6056 values: chosen so that p90/p99 differ between the two rank rules
SEED = 424242


def sample(rnd):
    # lognormal, median ~ 80 us, plus a 1% tail x 15
    v = rnd.lognormvariate(math.log(80_000.0), 0.45)
    if rnd.random() < 0.01:
        v *= 15.0
    return max(1, int(v))


def lib_stats(h):
    return {
        "count": h.get_total_count(),
        "min": h.get_min_value(),
        "max": h.get_max_value(),
        "p50": h.get_value_at_percentile(50.0),
        "p90": h.get_value_at_percentile(90.0),
        "p99": h.get_value_at_percentile(99.0),
        "p999": h.get_value_at_percentile(99.9),
    }


def ceil_rank_value(h, p):
    """Value at percentile with Java's rank rule ceil(p/100*n) (exact decimal
    arithmetic), reported as the bucket's highest equivalent value."""
    n = h.get_total_count()
    target = max(1, math.ceil(Fraction(repr(p)) * n / 100))
    total = 0
    for i in range(h.counts_len):
        total += h.get_count_at_index(i)
        if total >= target:
            return h.get_highest_equivalent_value(h.get_value_from_index(i))
    return 0


def ceil_stats(h):
    d = lib_stats(h)
    for k, p in (("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("p999", 99.9)):
        d[k] = ceil_rank_value(h, p)
    return d


def raw_stats(values):
    s = sorted(values)
    n = len(s)

    def q(per_mille):  # sorted[ceil(q*n)-1], integer arithmetic
        k = max(1, (per_mille * n + 999) // 1000)
        return s[k - 1]

    return {"count": n, "min": s[0], "max": s[-1],
            "p50": q(500), "p90": q(900), "p99": q(990), "p999": q(999)}


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/hdr"
    rnd = random.Random(SEED)
    total = HdrHistogram(LOWEST, HIGHEST, DIGITS)
    raw = []
    with open(os.path.join(outdir, "python.hlog"), "w", encoding="utf-8") as f:
        w = HistogramLogWriter(f)
        w.output_comment("[Logged with make_py_hlog.py (cauda tests/interop), "
                         "HdrHistogram_py 0.10.8, values in ns]")
        w.output_log_format_version()
        # w.output_start_time(START_MS) raises in 0.10.8; write the line ourselves
        start_str = datetime.fromtimestamp(START_MS / 1000.0, tz=timezone.utc).strftime(
            "%a %b %d %H:%M:%S UTC %Y")
        w.output_comment("[StartTime: %.3f (seconds since epoch), %s]" % (START_MS / 1000.0, start_str))
        w.base_time = START_MS
        w.output_base_time(START_MS)
        w.output_legend()
        for i in range(INTERVALS):
            h = HdrHistogram(LOWEST, HIGHEST, DIGITS)
            h.set_start_time_stamp(START_MS + i * INTERVAL_MS)
            h.set_end_time_stamp(START_MS + (i + 1) * INTERVAL_MS)
            for _ in range(PER_INTERVAL):
                v = sample(rnd)
                h.record_value(v)
                total.record_value(v)
                raw.append(v)
            # the writer logs (histogram start/end msec - base_time) / 1000
            w.output_interval_histogram(h)
    expected = {
        "generator": "tests/interop/make_py_hlog.py",
        "library": "hdrhistogram (HdrHistogram_py) 0.10.8",
        "unit": "ns",
        "intervals": INTERVALS,
        "histograms_per_interval": 1,
        "note": ("all: as reported by HdrHistogram_py on a histogram that recorded every value "
                 "(get_total_count, get_min_value, get_max_value, get_value_at_percentile). "
                 "HdrHistogram_py computes the target count as int(p/100*n + 0.5) (round half up), "
                 "Java uses ceil(p/100*n); results can differ by one rank, and do here for p90 and p99. "
                 "all_ceil_rank: same histogram, Java's rank rule ceil(p/100*n), highest equivalent value "
                 "(this is what Java's HdrHistogram reports for this log). "
                 "raw_exact: exact statistics of the recorded raw values, sorted[ceil(q*n)-1]."),
        "all": lib_stats(total),
        "all_ceil_rank": ceil_stats(total),
        "tags": {"untagged": lib_stats(total)},
        "raw_exact": {"all": raw_stats(raw), "untagged": raw_stats(raw)},
    }
    with open(os.path.join(outdir, "python.expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
