#!/usr/bin/env python3
"""Read the two tables of `cauda convert --to parquet -o DIR` with pyarrow
and with DuckDB, recompute percentiles from `buckets` in each, and print one
JSON object on stdout for tests/parquet.rs to check against `cauda analyze`:

  {"pyarrow": READ, "duckdb": READ, "occupied": N or null}

where READ is

  {"intervals": {"columns": [...], "rows": N, "values": N},
   "buckets":   {"columns": [...], "rows": N, "values": N},
   "whole":     {SERIES: {"50": ns, "99": ns, "99.9": ns}},
   "interval_p99": {SERIES: [ns or null, ...]},     # from buckets
   "table":     {SERIES: [{"p99_ns", "count", "min_ns", "max_ns",
                           "stall", "start_ns", "start_time" (ns), LABELS...}]}}

"whole" and "interval_p99" follow cauda's rank rule (src/formats/export/parquet/mod.rs):
rank r = ceil(q*n) (at least 1); r = 1 is min(min_ns), r = n max(max_ns),
any other rank the value_ns where the running count first reaches r,
capped at max(max_ns). DuckDB computes them in SQL, the pyarrow side in
plain Python; both in exact integer arithmetic. "table" is the intervals
table as pyarrow reads it (DuckDB's copy is compared with it here).

With --histograms FILE (a cauda run file or a V2 .hlog), "occupied" counts
the non-empty buckets of every histogram in it, decoded here from the
HdrHistogram V2 encoding, for the row count of `buckets`.

Usage: read_tables.py DIR [--histograms FILE]
Requires: pip install pyarrow duckdb
"""
import argparse
import base64
import json
import struct
import sys
import zlib
from fractions import Fraction

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

PERCENTILES = ["50", "99", "99.9"]


def rank(q, n):
    """ceil(q*n), at least 1, for a Fraction q."""
    return max(1, -(-q.numerator * n // q.denominator))


def value_at(buckets, lo, hi, n, r):
    """The rank rule over (value, count) pairs in increasing value."""
    if r <= 1:
        return lo
    if r >= n:
        return hi
    cumulative = 0
    for value, count in buckets:
        cumulative += count
        if cumulative >= r:
            return min(value, hi)
    return hi


def with_pyarrow(d):
    out = {}
    tables = {name: pq.read_table(f"{d}/{name}.parquet") for name in ("intervals", "buckets")}
    for name, t in tables.items():
        out[name] = {
            "columns": t.column_names,
            "rows": t.num_rows,
            "values": pc.sum(t["count"]).as_py() or 0,
        }
    # The UTC start as ns since the epoch (Python's datetime stops at µs).
    t = tables["intervals"]
    at = t.column_names.index("start_time")
    iv = t.set_column(at, "start_time", t["start_time"].cast(pa.int64())).to_pylist()
    bk = tables["buckets"].to_pylist()
    out["table"] = {}
    for row in iv:
        out["table"].setdefault(row["series"], []).append(row)
    # Whole series: buckets added by value; min and max over the intervals.
    whole, per_interval = {}, {}
    for row in bk:
        s = whole.setdefault(row["series"], {})
        s[row["value_ns"]] = s.get(row["value_ns"], 0) + row["count"]
        per_interval.setdefault((row["series"], row["interval"]), []).append(
            (row["value_ns"], row["count"]))
    out["whole"] = {}
    for series, counts in whole.items():
        rows = [r for r in iv if r["series"] == series and r["count"] > 0]
        lo, hi = min(r["min_ns"] for r in rows), max(r["max_ns"] for r in rows)
        n = sum(counts.values())
        pairs = sorted(counts.items())
        out["whole"][series] = {
            p: value_at(pairs, lo, hi, n, rank(Fraction(p) / 100, n)) for p in PERCENTILES
        }
    out["interval_p99"] = {}
    for row in iv:
        pairs = sorted(per_interval.get((row["series"], row["interval"]), []))
        n = row["count"]
        value = None if n == 0 else value_at(
            pairs, row["min_ns"], row["max_ns"], n, rank(Fraction(99, 100), n))
        out["interval_p99"].setdefault(row["series"], []).append(value)
    return out


def with_duckdb(d):
    con = duckdb.connect()
    iv, bk = f"read_parquet('{d}/intervals.parquet')", f"read_parquet('{d}/buckets.parquet')"
    out = {}
    for name, t in (("intervals", iv), ("buckets", bk)):
        rows, values = con.execute(f"SELECT count(*), coalesce(sum(count), 0) FROM {t}").fetchall()[0]
        out[name] = {
            "columns": [c[0] for c in con.execute(f"DESCRIBE SELECT * FROM {t}").fetchall()],
            "rows": rows,
            "values": int(values),
        }
    out["whole"] = {}
    for p in PERCENTILES:
        q = Fraction(p) / 100
        num, den = q.numerator, q.denominator
        sql = f"""
        WITH e AS (
          SELECT series, min(min_ns) AS lo, max(max_ns) AS hi, sum(count) AS n
          FROM {iv} GROUP BY series),
        c AS (
          SELECT series, value_ns,
                 sum(sum(count)) OVER (PARTITION BY series ORDER BY value_ns) AS cum
          FROM {bk} GROUP BY series, value_ns),
        r AS (SELECT *, greatest(1, ({num} * n + {den} - 1) // {den}) AS r FROM e)
        SELECT series,
               CASE WHEN r <= 1 THEN lo WHEN r >= n THEN hi
                    ELSE least(min(value_ns), hi) END
        FROM r JOIN c USING (series) WHERE cum >= r
        GROUP BY series, lo, hi, n, r"""
        for series, value in con.execute(sql).fetchall():
            out["whole"].setdefault(series, {})[p] = int(value)
    sql = f"""
    WITH c AS (
      SELECT run, series, interval, value_ns,
             sum(count) OVER (PARTITION BY run, series, interval ORDER BY value_ns) AS cum
      FROM {bk}),
    i AS (
      SELECT run, series, interval, count AS n, min_ns, max_ns,
             greatest(1, (99 * count + 99) // 100) AS r
      FROM {iv}),
    v AS (
      SELECT i.run, i.series, i.interval,
             CASE WHEN n = 0 THEN NULL WHEN r <= 1 THEN min_ns WHEN r >= n THEN max_ns
                  ELSE least(min(c.value_ns), max_ns) END AS p99
      FROM i LEFT JOIN c ON c.run = i.run AND c.series = i.series
                         AND c.interval = i.interval AND c.cum >= i.r
      GROUP BY i.run, i.series, i.interval, n, r, min_ns, max_ns)
    SELECT series, list(p99 ORDER BY run, interval) FROM v GROUP BY series"""
    out["interval_p99"] = {s: values for s, values in con.execute(sql).fetchall()}
    return out


def varints(data):
    """ZigZag LEB128 64-bit values."""
    value, shift = 0, 0
    for byte in data:
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            yield (value >> 1) ^ -(value & 1)
            value, shift = 0, 0


def occupied(encoded):
    """Non-empty buckets of one V2 deflate histogram (base64)."""
    raw = base64.b64decode(encoded)
    cookie, length = struct.unpack(">ii", raw[:8])
    if cookie & ~0xF0 != 0x1C849304:
        raise ValueError(f"not a compressed V2 histogram (cookie {cookie:#x})")
    body = zlib.decompress(raw[8:8 + length])
    return sum(1 for v in varints(body[40:]) if v > 0)


def histograms(path):
    with open(path) as f:
        text = f.read()
    if text.lstrip().startswith("{"):
        run = json.loads(text)
        return [iv["histogram"] for s in run["series"] for iv in s["intervals"]]
    return [line.rsplit(",", 1)[1] for line in text.splitlines()
            if line and not line.startswith(("#", '"'))]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("--histograms")
    args = parser.parse_args()
    result = {"pyarrow": with_pyarrow(args.dir), "duckdb": with_duckdb(args.dir), "occupied": None}
    if args.histograms:
        result["occupied"] = sum(occupied(h) for h in histograms(args.histograms))
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
