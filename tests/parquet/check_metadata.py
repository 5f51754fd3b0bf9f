#!/usr/bin/env python3
"""Read the footers of `cauda convert --to parquet -o DIR`'s two tables with
pyarrow (`pq.read_metadata` and `pq.ParquetFile(...).metadata`) and print
one JSON object for tests/parquet.rs:

  {TABLE: {"rows": N, "row_groups": [rows, ...], "created_by": "...",
           "metadata": {KEY: VALUE}, "columns": {NAME: "physical logical nullable"},
           "statistics": [problems...]}}

"statistics" lists every column chunk whose min, max or null count in the
footer differs from what the data read back holds (an empty list: all
agree).

Usage: check_metadata.py DIR        Requires: pip install pyarrow
"""
import json
import sys

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq


def table(path):
    meta = pq.read_metadata(path)
    pf = pq.ParquetFile(path)
    assert pf.metadata.num_rows == meta.num_rows
    schema = pf.schema
    columns = {}
    for i in range(len(schema)):
        c = schema.column(i)
        logical = str(c.logical_type)
        columns[c.name] = f"{c.physical_type} {logical} {'optional' if c.max_definition_level else 'required'}"
    problems = []
    for g in range(meta.num_row_groups):
        data = pf.read_row_group(g)
        if data.num_rows != meta.row_group(g).num_rows:
            problems.append(f"group {g}: {data.num_rows} rows read, footer {meta.row_group(g).num_rows}")
        for i in range(meta.num_columns):
            chunk = meta.row_group(g).column(i)
            name = chunk.path_in_schema
            values = data[name]
            st = chunk.statistics
            want_nulls = values.null_count
            if st is None or not st.has_null_count or st.null_count != want_nulls:
                problems.append(f"group {g} {name}: null count {st and st.null_count} != {want_nulls}")
            if values.null_count == len(values):
                continue
            # Timestamps compare as their stored integers: as Python values
            # a nanosecond timestamp needs pandas (pyarrow refuses to round
            # it to datetime's microseconds).
            stamps = pa.types.is_timestamp(values.type)
            mm = pc.min_max(values.cast(pa.int64()) if stamps else values).as_py()
            bounds = (st.min_raw, st.max_raw) if stamps else (st.min, st.max)
            if not st.has_min_max or bounds != (mm["min"], mm["max"]):
                got = bounds if st.has_min_max else None
                problems.append(f"group {g} {name}: bounds {got} != {(mm['min'], mm['max'])}")
    return {
        "rows": meta.num_rows,
        "row_groups": [meta.row_group(g).num_rows for g in range(meta.num_row_groups)],
        "created_by": meta.created_by,
        "metadata": {k.decode(): v.decode() for k, v in (meta.metadata or {}).items()},
        "columns": columns,
        "statistics": problems,
    }


def main():
    d = sys.argv[1]
    json.dump({t: table(f"{d}/{t}.parquet") for t in ("intervals", "buckets")}, sys.stdout)


if __name__ == "__main__":
    main()
