#!/usr/bin/env bash
# Compares two runs of the benchmarks' JSON lines (target/bench/*.jsonl, or
# BENCHMARKS.jsonl): each figure's ratio to its floor (its value, where it
# has no floor), lower being better. A figure more than 20 % worse is
# flagged, and the exit status is 1.
#   build-aux/bench-compare.sh BENCHMARKS.jsonl target/bench/core-latest.jsonl
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 OLD.jsonl NEW.jsonl" >&2
  exit 2
fi
exec python3 - "$1" "$2" <<'PY'
import json, sys

def load(path):
    figures = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            d = json.loads(line)
            key = (d["bench"], d["figure"])
            # The ratio where there is a floor; else the value itself.
            figures[key] = (d.get("ratio", d["value"]), "ratio" in d, d.get("unit", ""))
    return figures

old, new = load(sys.argv[1]), load(sys.argv[2])
worse = 0
for key in sorted(set(old) | set(new)):
    bench, figure = key
    if key not in old or key not in new:
        print(f"  {bench:7} {figure:45} only in {'the new' if key in new else 'the old'} run")
        continue
    (a, ratio, unit), (b, _, _) = old[key], new[key]
    change = (b / a - 1.0) * 100 if a else 0.0
    what = "ratio" if ratio else unit
    flag = "WORSE" if change > 20 else ""
    worse += bool(flag)
    print(f"{flag:5} {bench:7} {figure:45} {a:10.3f} -> {b:10.3f} {what:6} {change:+6.1f} %")
print(f"{worse} figure(s) more than 20 % worse")
sys.exit(1 if worse else 0)
PY
