#!/usr/bin/env python3
"""Self-check of tests/fixtures (does not use cauda).

  python3 tests/interop/check_fixtures.py [--no-java]

1. every *.expected.json of fio/sockperf/cyclictest is reproduced by
   compute_expected.py from its fixture;
2. fio json/json+: the clat_ns percentiles fio printed are reproduced from
   the json+ "bins" with the rule "first bin whose cumulative count >=
   ceil(p/100*N)"; sum(bins) == N; hist-log bin indices map onto json+ keys;
3. hdr: read_hlog.py (HdrHistogram_py) and run_java.sh (Java HdrHistogram)
   agree with hdr/java.expected.json and hdr/python.expected.json; the old
   Java logs (hdr/java-1.1.4.hlog: V0, hdr/java-2.0.3.hlog and
   hdr/java-2.1.6.hlog: V1) give Java
   2.2.2 the figures in their *.reader-2.2.2.expected.json, which equal the
   writer's own (bucket tops), and HdrHistogram_py refuses them.
Exit status 0 when everything matches.
"""
import json
import math
import os
import subprocess
import sys
from fractions import Fraction

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.normpath(os.path.join(HERE, "..", "fixtures"))
sys.path.insert(0, HERE)
import compute_expected as ce  # noqa: E402

failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures += 1


def fio_json_checks():
    for name in ("randread.jsonplus", "randrw.jsonplus", "hist.jsonplus"):
        d = json.load(open(os.path.join(FIX, "fio", name)))
        job = d["jobs"][0]
        for ddir in ("read", "write"):
            c = job[ddir]["clat_ns"]
            if c["N"] == 0:
                continue
            bins = sorted((int(k), v) for k, v in c["bins"].items())
            n = sum(v for _, v in bins)
            check(n == c["N"], "%s %s: sum(bins) == N (%d)" % (name, ddir, n))
            good = True
            for p, val in c["percentile"].items():
                r = max(1, math.ceil(Fraction(p) * n / 100))
                cum = 0
                for k, v in bins:
                    cum += v
                    if cum >= r:
                        good &= (k == val)
                        break
            check(good, "%s %s: fio clat percentiles reproduced from bins" % (name, ddir))
            check(bins[0][0] >= 0 and c["min"] <= bins[-1][0] + 1, "%s %s: min/max sane" % (name, ddir))
    # hist log bins -> json+ keys (same run: hist_clat_hist.1.log / hist.jsonplus)
    keys = {int(k) for k in json.load(open(os.path.join(FIX, "fio", "hist.jsonplus")))
            ["jobs"][0]["read"]["clat_ns"]["bins"]}
    rows = ce.parse_fio_log(os.path.join(FIX, "fio", "hist_clat_hist.1.log"))
    vals = set()
    for r in rows:
        for i, c in enumerate(r[3:]):
            if int(c):
                vals.add(ce.plat_bucket(i)[2])
    check(vals <= keys, "hist_clat_hist.1.log: every non-empty bin's midpoint is a json+ bin key (%d bins)" % len(vals))
    d = json.load(open(os.path.join(FIX, "fio", "randread.json")))
    check("bins" not in d["jobs"][0]["read"]["clat_ns"] and "percentile" in d["jobs"][0]["read"]["clat_ns"],
          "randread.json: clat_ns has percentile, no bins")


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return None, p.stderr.strip()
    return json.loads(p.stdout), None


def hdr_checks(java):
    jexp = json.load(open(os.path.join(FIX, "hdr", "java.expected.json")))
    pexp = json.load(open(os.path.join(FIX, "hdr", "python.expected.json")))
    jl = os.path.join(FIX, "hdr", "java.hlog")
    pl = os.path.join(FIX, "hdr", "python.hlog")
    readers = [("python", [sys.executable, os.path.join(HERE, "read_hlog.py")])]
    if java:
        readers.append(("java", [os.path.join(HERE, "run_java.sh")]))
    for rname, base in readers:
        for sel, key in (([], None), (["--tag", "read"], "read"), (["--tag", "write"], "write"),
                         (["--untagged"], "untagged")):
            got, err = run(base + [jl] + sel)
            want = jexp["all"] if key is None else jexp["tags"][key]
            check(got == want, "%s reader java.hlog %s%s" % (rname, " ".join(sel) or "(all)",
                                                             "" if got == want else ": %s vs %s %s" % (got, want, err or "")))
        got, err = run(base + [pl])
        want = pexp["all"] if rname == "python" else pexp["all_ceil_rank"]
        check(got == want, "%s reader python.hlog == %s" % (rname, "all" if rname == "python" else "all_ceil_rank"))
    got, err = run(readers[0][1] + [pl, "--rank", "ceil"])
    check(got == pexp["all_ceil_rank"], "python reader --rank ceil python.hlog == all_ceil_rank")
    got, err = run(readers[0][1] + [pl, "--tag", "nope"])
    check(got is None and err, "python reader fails on unmatched tag")
    for version in ("1.1.4", "2.0.3", "2.1.6"):
        name = "java-%s" % version
        log = os.path.join(FIX, "hdr", name + ".hlog")
        writer = json.load(open(os.path.join(FIX, "hdr", name + ".expected.json")))["top"]
        reader = json.load(open(os.path.join(FIX, "hdr", name + ".reader-2.2.2.expected.json")))
        check(writer == reader, "%s: the writer's figures == Java 2.2.2's" % name)
        if java:
            got, err = run(readers[-1][1] + [log])
            check(got == reader, "java reader %s == reader-2.2.2%s" % (name, "" if got == reader else ": %s %s" % (got, err or "")))
        got, err = run(readers[0][1] + [log])
        check(got is None and err, "python reader refuses %s (V0/V1 histograms)" % name)


def main():
    java = "--no-java" not in sys.argv
    p = subprocess.run([sys.executable, os.path.join(HERE, "compute_expected.py"), "--check", FIX],
                       capture_output=True, text=True)
    print(p.stdout, end="")
    check(p.returncode == 0, "compute_expected.py --check")
    fio_json_checks()
    hdr_checks(java)
    print("%d failure(s)" % failures)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
