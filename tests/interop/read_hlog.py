#!/usr/bin/env python3
"""Read an HdrHistogram interval log (.hlog) with HdrHistogram_py and print
the merged statistics as one JSON object on stdout:

  {"count": N, "min": ..., "max": ..., "p50": ..., "p90": ..., "p99": ..., "p999": ...}

Usage:
  read_hlog.py FILE [--tag TAG | --untagged] [--rank library|ceil]

Without --tag/--untagged, every interval histogram of every tag (and the
untagged ones) is merged. With --tag TAG only lines "Tag=TAG,..." are merged;
with --untagged only lines without a tag.

Values are whatever unit the log was recorded in (cauda: ns).
min/max/percentiles are HdrHistogram_py's own answers: min is the lowest
equivalent value of the lowest bucket, max and percentiles are the highest
equivalent value of the bucket. Note that HdrHistogram_py picks the
percentile rank as int(p/100*count + 0.5) while Java uses ceil(p/100*count),
so the two readers can differ by one rank (see tests/fixtures/README.md).
--rank ceil uses Java's rule ceil(p/100*count) (exact decimal arithmetic) on
the same merged histogram instead, i.e. it reproduces ReadHlog.java.

Exit status: 0 on success; 1 on any failure (unreadable file, undecodable
histogram, no matching interval histogram), with a message on stderr.

Requires: pip install hdrhistogram   (tested with 0.10.8)
"""
import argparse
import json
import math
import sys
from fractions import Fraction


def fail(msg):
    print("read_hlog.py: error: %s" % msg, file=sys.stderr)
    sys.exit(1)


def ceil_rank_value(h, p):
    n = h.get_total_count()
    target = max(1, math.ceil(Fraction(repr(p)) * n / 100))
    total = 0
    for i in range(h.counts_len):
        total += h.get_count_at_index(i)
        if total >= target:
            return h.get_highest_equivalent_value(h.get_value_from_index(i))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--tag", help="only merge interval histograms with this tag")
    g.add_argument("--untagged", action="store_true", help="only merge untagged interval histograms")
    ap.add_argument("--rank", choices=("library", "ceil"), default="library",
                    help="percentile rank rule: HdrHistogram_py's own (default) or Java's ceil")
    args = ap.parse_args()

    try:
        from hdrh.histogram import HdrHistogram
        from hdrh.log import HistogramLogReader
    except ImportError as e:
        fail("HdrHistogram_py not installed (pip install hdrhistogram): %s" % e)

    try:
        with open(args.file, "rb") as f:
            f.read(1)
    except OSError as e:
        fail("cannot open %s: %s" % (args.file, e))

    selected = []
    seen = 0
    try:
        reader = HistogramLogReader(args.file, HdrHistogram(1, 2, 1))
        try:
            while True:
                h = reader.get_next_interval_histogram()
                if h is None:
                    break
                seen += 1
                tag = h.get_tag()
                if args.tag is not None and tag != args.tag:
                    continue
                if args.untagged and tag is not None:
                    continue
                selected.append(h)
        finally:
            reader.close()
    except SystemExit:
        raise
    except Exception as e:  # decode errors, bad base64/zlib, bad floats, ...
        fail("cannot read %s: %s: %s" % (args.file, type(e).__name__, e))

    if seen == 0:
        fail("no interval histograms found in %s" % args.file)
    if not selected:
        fail("no interval histograms match the tag selection in %s (%d found)" % (args.file, seen))

    try:
        lowest = min(h.lowest_trackable_value for h in selected)
        highest = max(h.highest_trackable_value for h in selected)
        digits = max(h.significant_figures for h in selected)
        acc = HdrHistogram(lowest, max(highest, 2 * lowest), digits)
        mins = []
        for h in selected:
            if h.get_total_count() > 0:
                mins.append(h.get_min_value())
            acc.add(h)
    except Exception as e:
        fail("cannot merge histograms from %s: %s: %s" % (args.file, type(e).__name__, e))

    count = acc.get_total_count()
    if count == 0:
        out = {"count": 0, "min": 0, "max": 0, "p50": 0, "p90": 0, "p99": 0, "p999": 0}
    else:
        # acc.get_min_value() is equivalent here; take the min of the
        # per-interval minima to not depend on add() bookkeeping.
        pct = acc.get_value_at_percentile if args.rank == "library" \
            else (lambda p: ceil_rank_value(acc, p))
        out = {
            "count": count,
            "min": min(mins),
            "max": acc.get_max_value(),
            "p50": pct(50.0),
            "p90": pct(90.0),
            "p99": pct(99.0),
            "p999": pct(99.9),
        }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
