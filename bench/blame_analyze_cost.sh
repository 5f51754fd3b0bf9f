#!/usr/bin/env bash
# bench/blame_analyze_cost.sh - what a blame section costs `cauda analyze`
# (issue 33: an hour with blame at most 1.2x the same hour without).
#
# An hour of a 1 ms timer at 1 s intervals is 3,600 intervals of 1,000
# wake-ups, about ten of them slow in each. Recorded here in 60 s at 16 ms
# intervals (3,750 intervals) with --blame-above low enough that most
# intervals keep slow wake-ups, so the file has as many interval totals as
# the hour would; the same file with its blame section removed is the
# "without". hyperfine alternates nothing itself, so the two are run
# as one hyperfine call (which interleaves warm-ups, then runs each in
# turn); the ratio is printed with its spread.
#
# Usage: bench/blame_analyze_cost.sh [CAUDA]; needs root (BPF), hyperfine,
# python3.
set -euo pipefail
cauda=$(realpath "${1:-target/release/cauda}")
command -v hyperfine >/dev/null || { echo "needs hyperfine (apt-get install hyperfine)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$cauda" timer --runtime 60s --interval-length 16ms --kernel blame --blame-above 40us \
    -q -o "$tmp/with.json"
python3 - "$tmp/with.json" "$tmp/without.json" <<'EOF'
import json, sys
run = json.load(open(sys.argv[1]))
b = run["blame"]
intervals = sum(len(s["intervals"]) for s in b["series"])
slow = sum(iv["slow"] for s in b["series"] for iv in s["intervals"])
print(f"# intervals {max(len(s['intervals']) for s in run['series'])}, "
      f"with slow wake-ups {intervals}, slow wake-ups {slow}, slowest kept {len(b['slowest'])}")
del run["blame"]
run.pop("integrity", None)
json.dump(run, open(sys.argv[2], "w"))
EOF
python3 - "$tmp/with.json" <<'EOF'
import json, sys
run = json.load(open(sys.argv[1]))
run.pop("integrity", None)
json.dump(run, open(sys.argv[1], "w"))
EOF
ls -l "$tmp"/*.json | awk '{print "# " $5 " bytes " $9}'
hyperfine -N --warmup 3 --runs 30 --export-json "$tmp/h.json" \
    "$cauda analyze $tmp/without.json" "$cauda analyze $tmp/with.json" >/dev/null
python3 - "$tmp/h.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
without, with_ = r[0], r[1]
ratio = with_["mean"] / without["mean"]
err = ratio * ((with_["stddev"] / with_["mean"]) ** 2 + (without["stddev"] / without["mean"]) ** 2) ** 0.5
print(f"analyze without blame {without['mean']*1e3:.1f} ms ± {without['stddev']*1e3:.1f}, "
      f"with {with_['mean']*1e3:.1f} ms ± {with_['stddev']*1e3:.1f}: {ratio:.3f}x ± {err:.3f} (goal <= 1.2x)")
EOF
