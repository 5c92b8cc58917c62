#!/usr/bin/env bash
# Compares two runs of the benchmarks' JSON lines (target/bench/*.jsonl, or
# BENCHMARKS.jsonl): each figure's ratio to its floor (its value, where it
# has no floor), lower being better. Where a file holds a figure more than
# once (BENCHMARKS.jsonl keeps the recorded runs), the median of its last
# three lines counts: one noisy recorded run is not the bar.
# A figure more than 20 % worse (--threshold PCT) is flagged, and the exit
# status is 1. --match REGEX compares only the figures whose names match.
#   build-aux/bench-compare.sh BENCHMARKS.jsonl target/bench/core-latest.jsonl
#   build-aux/bench-compare.sh --threshold 50 --match 'median|validate|start' \
#     BENCHMARKS.jsonl target/bench/core-latest.jsonl   (what CI runs)
set -euo pipefail
threshold=20
match=''
while [ $# -gt 2 ]; do
  case "$1" in
    --threshold) threshold="$2"; shift 2 ;;
    --match) match="$2"; shift 2 ;;
    *) break ;;
  esac
done
if [ $# -ne 2 ]; then
  echo "usage: $0 [--threshold PCT] [--match REGEX] OLD.jsonl NEW.jsonl" >&2
  exit 2
fi
exec python3 - "$1" "$2" "$threshold" "$match" <<'PY'
import json, re, sys

old_path, new_path, threshold, match = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
pattern = re.compile(match) if match else None

def load(path):
    runs = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            d = json.loads(line)
            if pattern and not pattern.search(d["figure"]):
                continue
            key = (d["bench"], d["figure"])
            # The ratio where there is a floor; else the value itself.
            runs.setdefault(key, []).append((d.get("ratio", d["value"]), "ratio" in d, d.get("unit", "")))
    figures = {}
    for key, lines in runs.items():
        last = sorted(lines[-3:], key=lambda r: r[0])
        figures[key] = last[len(last) // 2]
    return figures

old, new = load(old_path), load(new_path)
worse = 0
compared = 0
for key in sorted(set(old) | set(new)):
    bench, figure = key
    if key not in old or key not in new:
        # A figure asked for by --match that the new run lacks: its bench
        # did not get that far.
        missing = bool(pattern) and key not in new
        worse += missing
        print(f"{'GONE' if missing else '':5} {bench:7} {figure:45} only in {'the new' if key in new else 'the old'} run")
        continue
    (a, ratio, unit), (b, _, _) = old[key], new[key]
    compared += 1
    what = "ratio" if ratio else unit
    if a > 0:
        change = (b / a - 1.0) * 100
        flag = "WORSE" if change > threshold else ""
    else:
        # From nothing (0 frames) or below (a difference to a floor): any
        # rise is worse; there is no percentage of it.
        change = float("inf") if b > a else 0.0
        flag = "WORSE" if b > a else ""
    worse += bool(flag)
    print(f"{flag:5} {bench:7} {figure:45} {a:10.3f} -> {b:10.3f} {what:6} {change:+6.1f} %")
print(f"{worse} of {compared} figure(s) more than {threshold:g} % worse")
if compared == 0:
    print("no figure in both runs", file=sys.stderr)
    sys.exit(2)
sys.exit(1 if worse else 0)
PY
